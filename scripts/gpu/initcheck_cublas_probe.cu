// Whether compute-sanitizer's initcheck sees the writes of cuBLAS's GEMM kernels: C = A * B in
// float32 (cublasSgemm) and bfloat16 (cublasGemmEx) into fresh cudaMalloc memory, then C copied
// to the host. Every element of C was written by the GEMM, so a report of an uninitialized read
// here is the tool's, not the program's. scripts/gpu/build-and-test.sh --sanitize builds and runs
// it under initcheck beside wick's tests, whose GEMM outputs draw the same reports. Built with
// -DMARK it marks each C initialized through NVTX's memory API after the GEMM, as wick does
// (src/cuda/tool_marks.cpp); run with --nvtx yes, that version must report nothing.
#include <cstdio>
#include <vector>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <nvtx3/nvToolsExtMemCudaRt.h>
void mark(const void* p, size_t bytes) {
#ifdef MARK
  static nvtxDomainHandle_t domain = nvtxDomainCreateA("probe");
  nvtxMemVirtualRangeDesc_t range{bytes, p};
  nvtxMemMarkInitializedBatch_t desc{};
  desc.extCompatID = NVTX_EXT_COMPATID_MEM;
  desc.structSize = sizeof desc;
  desc.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  desc.regionDescCount = 1;
  desc.regionDescElementSize = sizeof range;
  desc.regionDescElements = &range;
  nvtxMemCudaMarkInitialized(domain, 0, 0, &desc);
#else
  (void)p, (void)bytes;
#endif
}
int main() {
  for (int n : {4, 64, 1024}) {
    float *a, *b, *c;
    cudaMalloc(&a, n * n * 4); cudaMalloc(&b, n * n * 4); cudaMalloc(&c, n * n * 4);
    cudaMemset(a, 0, n * n * 4); cudaMemset(b, 0, n * n * 4);
    cublasHandle_t h; cublasCreate(&h);
    float one = 1, zero = 0;
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
    mark(c, size_t(n) * n * 4);
    std::vector<float> host(n * n);
    cudaMemcpy(host.data(), c, n * n * 4, cudaMemcpyDeviceToHost);
    __nv_bfloat16 *ab, *bb, *cb;
    cudaMalloc(&ab, n * n * 2); cudaMalloc(&bb, n * n * 2); cudaMalloc(&cb, n * n * 2);
    cudaMemset(ab, 0, n * n * 2); cudaMemset(bb, 0, n * n * 2);
    cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n, &one, ab, CUDA_R_16BF, n, bb, CUDA_R_16BF, n, &zero, cb, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    mark(cb, size_t(n) * n * 2);
    std::vector<__nv_bfloat16> hb(n * n);
    cudaMemcpy(hb.data(), cb, n * n * 2, cudaMemcpyDeviceToHost);
    printf("n=%d c[0]=%g\n", n, host[0]);
    cublasDestroy(h);
  }
  return 0;
}
