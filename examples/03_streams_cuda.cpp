// Asynchronous execution, streams and events (the API contract, part 3): a sum on a side stream
// that waits for the work it reads, the memory it reads kept for that stream, and an event
// timing it. It prints
//   sum on a side stream: <the sum of 10000 normal samples>, matches the default stream: true
//   elapsed: ... ms
// Without a GPU it says so and exits 0.
#include <cmath>
#include <iostream>

#include <wick/wick.h>

int main() {
  if (!wick::cuda::is_available()) {
    std::cout << "this example needs a GPU (wick::cuda::is_available() is false)\n";
    return 0;
  }
  // [doc:streams]
  auto A = wick::empty({100, 100}, wick::Device("cuda")).normal_(0.0, 1.0);
  auto s = wick::cuda::Stream::create();        // a stream from the device's pool
  s.wait_stream(wick::cuda::current_stream());  // without it, sum may start before normal_ ends
  wick::cuda::Event start(/*enable_timing=*/true), end(/*enable_timing=*/true);
  wick::Tensor B;
  {
    wick::cuda::StreamGuard g(s);  // with torch.cuda.stream(s):
    start.record();
    B = A.sum();  // runs on s
    end.record();
    A.record_stream(s);  // A's memory is not reused before s is done with it
  }
  wick::cuda::synchronize();
  const float on_s = B.item<float>();
  const float on_default = A.sum().item<float>();
  std::cout << std::boolalpha << "sum on a side stream: " << on_s << ", matches the default stream: "
            << (std::abs(on_s - on_default) <= 1e-3f * (1 + std::abs(on_default))) << "\n";
  std::cout << "elapsed: " << start.elapsed_time(end) << " ms\n";
  // [doc:end]
}
