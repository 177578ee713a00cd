// Several GPUs (the API contract, part 9): DataParallel splits a batch of 16 over the visible
// GPUs (8 rows each on two), runs a replica of the module on each and gathers the outputs on
// cuda:0. It prints, with CUDA_VISIBLE_DEVICES=0,1,
//   replica on cuda:0 sees 8 rows
//   replica on cuda:1 sees 8 rows
//   outputs [16, 3] on cuda:0
//   gradients of fc.weight on cuda:0: [3, 3]
// (the replicas' lines in either order; one line of 16 rows on one GPU). Without a GPU it says
// so and exits 0.
#include <iostream>
#include <mutex>

#include <wick/wick.h>

std::mutex print_mutex;

struct FooNetImpl : wick::nn::Module {
  FooNetImpl(int64_t in, int64_t out) { fc = register_module("fc", wick::nn::Linear(in, out)); }
  wick::Tensor forward(const wick::Tensor& x) {
    {
      std::lock_guard<std::mutex> lock(print_mutex);  // replicas run in parallel
      std::cout << "replica on " << x.device() << " sees " << x.size(0) << " rows\n";
    }
    return fc(x);
  }
  wick::nn::Linear fc{nullptr};
};
WICK_MODULE(FooNet);

int main() {
  if (!wick::cuda::is_available()) {
    std::cout << "this example needs a GPU (wick::cuda::is_available() is false)\n";
    return 0;
  }
  // [doc:data_parallel]
  wick::Device device("cuda:0");
  auto inputs = wick::randn({16, 3}).to(device);
  FooNet net(3, 3);
  wick::nn::DataParallel dp(net);  // device_ids = all visible, output_device = device_ids[0]
  dp->to(device);
  auto outputs = dp(inputs);  // [16, 3] on cuda:0
  std::cout << "outputs " << outputs.sizes() << " on " << outputs.device() << "\n";
  outputs.sum().backward();  // the replicas' gradients summed into net's parameters
  std::cout << "gradients of fc.weight on " << net->fc->weight.grad().device() << ": "
            << net->fc->weight.grad().sizes() << "\n";
  // [doc:end]
}
