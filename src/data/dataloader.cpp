// DataLoader: one EpochRun per range-for. Workers take batch numbers in order from a shared
// counter, build the batches, and leave them in a map keyed by number; the loop takes them out
// in order. A worker may start batch k only while k < consumed + prefetch_factor * num_workers,
// which bounds the batches ready or in progress, as PyTorch's prefetching does.
//
// Alternatives considered: a queue per worker with round-robin batch assignment (PyTorch's
// design, needed there because workers are processes) makes one slow batch stall its worker's
// later ones; a shared counter lets an idle worker take the next batch at once. Threads rather
// than processes: C++ datasets have no GIL to escape, and tensors need no pickling.
#include "wick/data/dataloader.h"

#include <condition_variable>
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "core/host_memory.h"
#include "wick/cuda.h"
#include "wick/random.h"

namespace wick::data {

namespace {

constexpr const char* kOp = "DataLoader";
// Worker threads share this process; far more than any machine's cores only exhausts it.
constexpr int kMaxWorkers = 1024;

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, bound) without modulo bias (Lemire's multiply-and-reject).
uint64_t bounded(uint64_t& state, uint64_t bound) {
  unsigned __int128 m = (unsigned __int128)splitmix64(state) * bound;
  auto low = uint64_t(m);
  if (low < bound) {
    uint64_t threshold = -bound % bound;
    while (low < threshold) {
      m = (unsigned __int128)splitmix64(state) * bound;
      low = uint64_t(m);
    }
  }
  return uint64_t(m >> 64);
}

void warn_no_pinning() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::fprintf(stderr,
                 "wick: warning: [DataLoader] pin_memory=true, but no CUDA device is available; "
                 "batches will not be pinned\n");
  });
}

}  // namespace

namespace {
// n indices, or OutOfMemoryError "[op] ..." where the host cannot hold them.
std::vector<int64_t> index_buffer(int64_t n, const char* op) {
  try {
    wick::detail::check_host_request(n, sizeof(int64_t), op);
    return std::vector<int64_t>(size_t(n > 0 ? n : 0));
  } catch (const std::exception&) {  // bad_alloc, length_error
    wick::detail::raise<OutOfMemoryError>(op, "cannot hold the ", n, " indices of an epoch in host memory");
  }
}
std::vector<int64_t> sample_order(int64_t n, bool shuffle, uint64_t seed, const char* op) {
  std::vector<int64_t> order = index_buffer(n, op);
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
  if (shuffle) {
    uint64_t state = seed;
    for (int64_t i = n - 1; i > 0; --i) std::swap(order[size_t(i)], order[bounded(state, uint64_t(i) + 1)]);
  }
  return order;
}
}  // namespace

std::vector<int64_t> sample_order(int64_t n, bool shuffle, uint64_t seed) {
  return sample_order(n, shuffle, seed, "sample_order");
}

namespace detail {

// One pass over the dataset: the sample order, the workers, and the batch the loop is on.
class EpochRun {
 public:
  EpochRun(std::shared_ptr<const Dataset> dataset, std::vector<int64_t> order, int64_t batch_size,
           int64_t num_batches, bool pin, int num_workers, int64_t capacity, bool in_order)
      : dataset_(std::move(dataset)), order_(std::move(order)), batch_size_(batch_size),
        num_batches_(num_batches), pin_(pin), capacity_(capacity), in_order_(in_order) {
    workers_.reserve(size_t(num_workers));
    try {
      for (int w = 0; w < num_workers; ++w) workers_.emplace_back([this] { work(); });
    } catch (const std::exception& e) {
      // The system refused a thread: stop those already started and fail cleanly.
      stop_workers();
      wick::detail::raise<ValueError>(kOp, "could not start ", num_workers, " worker threads (",
                                      workers_.size(), " started): ", e.what(), "; use fewer num_workers");
    }
  }

  ~EpochRun() { stop_workers(); }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  EpochRun(const EpochRun&) = delete;
  EpochRun& operator=(const EpochRun&) = delete;

  bool done() const { return pos_ >= num_batches_; }
  Example<>& current() {
    WICK_CHECK(!done(), IndexError, kOp, "dereferencing the end of an epoch");
    return current_;
  }

  // Moves to the next batch (the first one on the first call); rethrows a worker's exception.
  void advance() {
    ++pos_;
    current_ = Example<>{};
    if (!done()) current_ = workers_.empty() ? build(pos_) : take();
  }

 private:
  struct Slot {
    Example<> batch;
    std::exception_ptr error;
  };

  Example<> build(int64_t k) const {
    const int64_t begin = k * batch_size_;
    const int64_t end = begin + std::min<int64_t>(batch_size_, int64_t(order_.size()) - begin);
    std::vector<int64_t> indices(order_.begin() + begin, order_.begin() + end);
    Example<> b = dataset_->get_batch(indices);
    WICK_CHECK(b.data.defined() && b.target.defined(), ValueError, kOp,
               "get_batch returned an undefined tensor");
    if (pin_) {
      b.data = b.data.pin_memory();
      b.target = b.target.pin_memory();
    }
    return b;
  }

  void work() {
    for (;;) {
      int64_t k;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return stop_ || next_ >= num_batches_ || next_ < consumed_ + capacity_; });
        if (stop_ || next_ >= num_batches_) return;
        k = next_++;
      }
      Slot s;
      try {
        s.batch = build(k);
      } catch (...) {
        s.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        ready_.emplace(k, std::move(s));
      }
      ready_cv_.notify_one();
    }
  }

  // The next batch in order (batch consumed_), or without in_order the lowest-numbered one ready.
  Example<> take() {
    std::unique_lock<std::mutex> lock(mu_);
    ready_cv_.wait(lock, [&] { return in_order_ ? ready_.count(consumed_) != 0 : !ready_.empty(); });
    auto node = ready_.extract(in_order_ ? ready_.find(consumed_) : ready_.begin());
    ++consumed_;
    lock.unlock();
    work_cv_.notify_all();
    if (node.mapped().error) std::rethrow_exception(node.mapped().error);
    return std::move(node.mapped().batch);
  }

  std::shared_ptr<const Dataset> dataset_;
  const std::vector<int64_t> order_;
  const int64_t batch_size_, num_batches_;
  const bool pin_;
  const int64_t capacity_;
  const bool in_order_;
  int64_t pos_ = -1;  // the batch in current_ (main thread only)
  Example<> current_;

  std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  int64_t next_ = 0;      // the next batch a worker takes
  int64_t consumed_ = 0;  // batches the loop has taken (in order: the next one it takes)
  bool stop_ = false;
  std::map<int64_t, Slot> ready_;
  std::vector<std::thread> workers_;
};

}  // namespace detail

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  WICK_CHECK(dataset_ != nullptr, ValueError, kOp, "the dataset is null");
  WICK_CHECK(options_.batch_size >= 1, ValueError, kOp, "batch_size should be a positive integer, but got ",
             options_.batch_size());
  WICK_CHECK(options_.num_workers >= 0, ValueError, kOp,
             "num_workers option should be non-negative; use num_workers=0 to disable multithreading");
  WICK_CHECK(options_.num_workers <= kMaxWorkers, ValueError, kOp, "num_workers is ", options_.num_workers,
             " but at most ", kMaxWorkers, " worker threads are supported");
  WICK_CHECK(!(options_.sampler && options_.shuffle), ValueError, kOp,
             "sampler option is mutually exclusive with shuffle");
  WICK_CHECK(options_.prefetch_factor >= 1, ValueError, kOp,
             "prefetch_factor should be a positive integer, but got ", options_.prefetch_factor);
  WICK_CHECK(!options_.max_jobs() || *options_.max_jobs() >= 1, ValueError, kOp,
             "max_jobs should be a positive integer, but got ", options_.max_jobs().value_or(0));
  const int64_t n = dataset_->size();
  WICK_CHECK(n >= 0, ValueError, kOp, "the dataset's size() should return >= 0, but got ", n);
  // PyTorch's RandomSampler refuses an empty dataset.
  WICK_CHECK(!options_.shuffle || n > 0, ValueError, kOp,
             "num_samples should be a positive integer value, but got num_samples=", n);
  if (options_.pin_memory) {
    pin_ = cuda::is_available();
    if (!pin_) warn_no_pinning();
  }
}

namespace {

int64_t num_batches(int64_t n, int64_t b, bool drop_last) {
  return drop_last ? n / b : n / b + (n % b != 0);  // no n + b - 1: b may be INT64_MAX
}

}  // namespace

int64_t DataLoader::size() const {
  const int64_t n = options_.sampler ? options_.sampler->size() : dataset_->size();
  return num_batches(n, options_.batch_size, options_.drop_last);
}

DataLoader::Iterator DataLoader::begin() {
  const uint64_t epoch = epoch_;
  uint64_t seed = 0;
  if (options_.shuffle) {
    if (options_.seed) {
      // Each epoch its own stream: seed and epoch go through SplitMix64, so nearby seeds or
      // epochs give unrelated orders.
      uint64_t s = *options_.seed;
      seed = splitmix64(s) ^ epoch;
      seed = splitmix64(seed);
    } else {
      seed = uint64_t(randint(0, int64_t(1) << 53, {1}).item<int64_t>());
    }
  }
  std::vector<int64_t> order;
  if (options_.sampler) {
    order = options_.sampler->indices();
    const int64_t n = dataset_->size();
    for (int64_t i : order)
      WICK_CHECK(i >= 0 && i < n, IndexError, kOp, "the sampler gave index ", i,
                 ", out of range for a dataset of size ", n);
  } else {
    order = sample_order(dataset_->size(), options_.shuffle, seed, kOp);
  }
  epoch_ = epoch + 1;
  const int64_t batches = num_batches(int64_t(order.size()), options_.batch_size, options_.drop_last);
  const int64_t capacity = options_.max_jobs().value_or(int64_t(options_.num_workers) * options_.prefetch_factor);
  auto run = std::make_shared<detail::EpochRun>(dataset_, std::move(order), options_.batch_size(), batches, pin_,
                                                options_.num_workers, capacity, options_.in_order);
  run->advance();  // outside the constructor: a throw here still joins the workers
  return Iterator(std::move(run));
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  WICK_CHECK(!done(), IndexError, kOp, "incrementing the end of an epoch");
  run_->advance();
  return *this;
}

bool DataLoader::Iterator::done() const { return !run_ || run_->done(); }

Example<>& DataLoader::Iterator::run_current() const {
  WICK_CHECK(run_ != nullptr, IndexError, kOp, "dereferencing the end of an epoch");
  return run_->current();
}

}  // namespace wick::data
