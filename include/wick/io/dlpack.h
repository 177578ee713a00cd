// DLPack: handing tensors to other libraries (PyTorch, CuPy, NumPy, JAX, ...) and taking theirs,
// without copying, on the CPU and on CUDA devices.
//
//   #include <dlpack/dlpack.h>                  // the struct itself (Debian: libdlpack-dev)
//   DLManagedTensor* m = wick::to_dlpack(t);    // the consumer owns m: it calls m->deleter(m) once
//   wick::Tensor u = wick::from_dlpack(other);  // u owns other: its deleter runs when u's memory goes
//
// Both directions share memory: a write through one is seen by the other. Every wick dtype is
// exchanged (bool as DLPack's kDLBool, code 6, bits 8), with sizes, strides (in elements) and the
// offset into the memory. wick's headers only declare DLManagedTensor; include <dlpack/dlpack.h>
// to read its fields. The packaged header is DLPack 0.6, which has no DLManagedTensorVersioned:
// only the unversioned struct is exchanged.
//
// CUDA streams follow the DLPack specification's rule for __dlpack__(stream=...): the producer
// makes the consumer's stream wait (through an event) for the work queued so far on the
// producer's current stream, so the consumer may use the memory at once on its stream.
//   to_dlpack(t)                 the consumer uses the legacy default stream (the rule's None)
//   to_dlpack(t, s)              the consumer uses the wick stream s (a stream of t's device)
//   to_dlpack(t, stream)         the specification's integer: -1 no synchronization, 1 the legacy
//                                default stream, 2 the per-thread default stream, any other value a
//                                cudaStream_t of t's device; 0 is ambiguous and refused
// The stream arguments are ignored for CPU tensors. t's memory is also marked as used by the
// consumer's stream (Tensor::record_stream), so that it is not reused before that stream's work
// queued when the consumer lets go of it is done. Taking a CUDA tensor from another library, pass
// wick's stream to its producer (wick::cuda::current_stream().native(), as the integer above) so
// that wick's work waits for its own.
#pragma once

#include <cstdint>

#include "wick/tensor.h"

struct DLManagedTensor;  // defined by <dlpack/dlpack.h>

namespace wick {

namespace cuda {
class Stream;
}

// A DLManagedTensor that shares t's memory and keeps it alive until its deleter is called.
// Throws Error "[to_dlpack] ..." for a tensor that requires grad (export t.detach(), as PyTorch
// asks) and ValueError for an undefined tensor or stream 0.
DLManagedTensor* to_dlpack(const Tensor& t);
DLManagedTensor* to_dlpack(const Tensor& t, const cuda::Stream& consumer_stream);
DLManagedTensor* to_dlpack(const Tensor& t, std::intptr_t consumer_stream);

// A tensor over m's memory (m->dl_tensor.data + byte_offset, with its sizes and strides; no
// strides means a contiguous tensor). The tensor, its views and copies of the handle own m: when
// the last of them goes, m->deleter(m) is called, once (not at all when the deleter is null).
// Devices: kDLCPU and kDLCUDAHost (pinned host memory) are read as cpu, kDLCUDA as cuda:<id>.
// Errors leave m with the caller (its deleter is not called): TypeError "[from_dlpack] ..." for
// a dtype wick lacks (complex, vectors with lanes != 1, other widths), DeviceError for another
// device type (ROCm, Vulkan, ...) or a CUDA device wick can't reach, ValueError for a null m,
// negative sizes or strides.
Tensor from_dlpack(DLManagedTensor* m);

}  // namespace wick
