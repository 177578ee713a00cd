// A small key-value store over TCP through which the ranks of a new group meet: rank 0 serves
// it on master_addr:master_port (a thread), every rank (0 too) is a client. Values are bytes.
// Every call waits at most the store's timeout, then raises DistributedError naming the op and
// what it waited for.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace wick::distributed::detail {

class TcpStoreServer;

class TcpStore {
 public:
  // Rank 0 also starts the server (DistributedError when it can't listen on the port); every
  // rank then connects, retrying until the timeout. op names the caller in messages.
  TcpStore(const std::string& addr, int port, int rank, int world_size, std::chrono::milliseconds timeout,
           const char* op);
  ~TcpStore();
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::string& value, const char* op);
  // Blocks until key is set (or the timeout).
  std::string get(const std::string& key, const char* op);
  // Adds n to the integer at key (0 when unset) and returns the new value.
  int64_t add(const std::string& key, int64_t n, const char* op);
  // Blocks until key is set.
  void wait(const std::string& key, const char* op) { (void)get(key, op); }

  int rank() const { return rank_; }
  int world_size() const { return world_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  std::string request(char cmd, const std::string& key, const std::string& value, const char* op,
                      const std::string& awaited);
  [[noreturn]] void fail(const char* op, const std::string& what) const;

  std::string addr_;
  int port_;
  int rank_, world_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<TcpStoreServer> server_;
  int fd_ = -1;
  std::mutex mu_;
};

}  // namespace wick::distributed::detail
