// The TCP store of store.h. Messages: a command byte, a 4-byte key length, the key, an 8-byte
// value length, the value (host byte order: every rank runs the same build). Replies: an
// 8-byte length and the bytes. GET on a missing key is answered when the key is set.
#include "distributed/store.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wick/error.h"

namespace wick::distributed::detail {
namespace {

constexpr char kSet = 1, kGet = 2, kAdd = 3;
using Clock = std::chrono::steady_clock;

void append_u64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }

std::string frame(char cmd, const std::string& key, const std::string& value) {
  std::string m(1, cmd);
  uint32_t kl = uint32_t(key.size());
  m.append(reinterpret_cast<const char*>(&kl), 4);
  m += key;
  append_u64(m, value.size());
  m += value;
  return m;
}

// Writes all of data; false when the peer is gone.
bool send_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t k = ::send(fd, data, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 1000);
      continue;
    }
    if (k <= 0) return false;
    data += k;
    n -= size_t(k);
  }
  return true;
}

}  // namespace

// Serves the store on one thread: poll() over the listening socket, the clients and a pipe
// that wakes it for shutdown.
class TcpStoreServer {
 public:
  TcpStoreServer(int port, const char* op) {
    listen_fd_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool v6 = listen_fd_ >= 0;
    if (!v6) listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) fail(op, port, "socket");
    int one = 1, zero = 0;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (v6) {
      ::setsockopt(listen_fd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 clients too
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = in6addr_any;
      a.sin6_port = htons(uint16_t(port));
      rc = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_ANY);
      a.sin_port = htons(uint16_t(port));
      rc = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rc != 0 || ::listen(listen_fd_, 128) != 0) {
      int e = errno;
      ::close(listen_fd_);
      errno = e;
      fail(op, port, "listen");
    }
    if (::pipe2(wake_, O_CLOEXEC) != 0) {
      ::close(listen_fd_);
      fail(op, port, "pipe");
    }
    thread_ = std::thread([this] { serve(); });
  }

  ~TcpStoreServer() {
    char c = 0;
    (void)!::write(wake_[1], &c, 1);
    thread_.join();
    for (auto& [fd, buf] : clients_) ::close(fd);
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

 private:
  [[noreturn]] static void fail(const char* op, int port, const char* what) {
    ::wick::detail::raise<DistributedError>(op, "rank 0 cannot serve the TCP store on port ", port, " (",
                                            what, "): ", std::strerror(errno));
  }

  void serve() {
    for (;;) {
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
      for (auto& [fd, buf] : clients_) fds.push_back({fd, POLLIN, 0});
      int n = ::poll(fds.data(), fds.size(), -1);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return;
      if (fds[0].revents) return;
      if (fds[1].revents & POLLIN) {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          clients_[fd];
        }
      }
      for (size_t i = 2; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        int fd = fds[i].fd;
        char tmp[65536];
        ssize_t k = ::recv(fd, tmp, sizeof tmp, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
          drop(fd);
          continue;
        }
        std::string& buf = clients_[fd];
        buf.append(tmp, size_t(k));
        if (!handle(fd, buf)) drop(fd);
      }
    }
  }

  void drop(int fd) {
    ::close(fd);
    clients_.erase(fd);
    for (auto& [key, fds] : waiters_) std::erase(fds, fd);
  }

  void reply(int fd, const std::string& value) {
    std::string m;
    append_u64(m, value.size());
    m += value;
    send_all(fd, m.data(), m.size());
  }

  // Handles every complete message in buf; false on a malformed one.
  bool handle(int fd, std::string& buf) {
    for (;;) {
      if (buf.size() < 5) return true;
      uint32_t kl;
      std::memcpy(&kl, buf.data() + 1, 4);
      if (buf.size() < 5 + size_t(kl) + 8) return true;
      uint64_t vl;
      std::memcpy(&vl, buf.data() + 5 + kl, 8);
      size_t total = 5 + size_t(kl) + 8 + size_t(vl);
      if (buf.size() < total) return true;
      char cmd = buf[0];
      std::string key = buf.substr(5, kl), value = buf.substr(5 + kl + 8, vl);
      buf.erase(0, total);
      if (cmd == kSet) {
        data_[key] = value;
        reply(fd, "");
        auto it = waiters_.find(key);
        if (it != waiters_.end()) {
          for (int w : it->second) reply(w, value);
          waiters_.erase(it);
        }
      } else if (cmd == kGet) {
        auto it = data_.find(key);
        if (it != data_.end()) reply(fd, it->second);
        else waiters_[key].push_back(fd);
      } else if (cmd == kAdd) {
        if (value.size() != 8) return false;
        int64_t n, cur = 0;
        std::memcpy(&n, value.data(), 8);
        auto it = data_.find(key);
        if (it != data_.end() && it->second.size() == 8) std::memcpy(&cur, it->second.data(), 8);
        cur += n;
        std::string bytes(reinterpret_cast<const char*>(&cur), 8);
        data_[key] = bytes;
        reply(fd, bytes);
      } else {
        return false;
      }
    }
  }

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::map<int, std::string> clients_;  // fd -> bytes received not yet handled
  std::map<std::string, std::string> data_;
  std::map<std::string, std::vector<int>> waiters_;
  std::thread thread_;
};

TcpStore::TcpStore(const std::string& addr, int port, int rank, int world_size,
                   std::chrono::milliseconds timeout, const char* op)
    : addr_(addr), port_(port), rank_(rank), world_(world_size), timeout_(timeout) {
  WICK_CHECK(
      !addr.empty() && port > 0, ValueError, op,
      "the TCP store needs MASTER_ADDR and MASTER_PORT (or InitOptions::master_addr and master_port); got '",
      addr, "':", port);
  if (rank == 0) server_ = std::make_unique<TcpStoreServer>(port, op);
  auto deadline = Clock::now() + timeout;
  std::string port_s = std::to_string(port);
  while (fd_ < 0) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(addr.c_str(), port_s.c_str(), &hints, &res) == 0) {
      for (addrinfo* a = res; a && fd_ < 0; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) continue;
        int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
          auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
          pollfd p{fd, POLLOUT, 0};
          if (::poll(&p, 1, int(std::max<int64_t>(left, 0))) == 1) {
            int err = 0;
            socklen_t len = sizeof err;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            rc = err == 0 ? 0 : -1;
          }
        }
        if (rc == 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          fd_ = fd;
        } else {
          ::close(fd);
        }
      }
      ::freeaddrinfo(res);
    }
    if (fd_ >= 0) break;
    if (Clock::now() >= deadline) {
      server_.reset();
      fail(op, "the TCP store");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
  server_.reset();
}

void TcpStore::fail(const char* op, const std::string& what) const {
  ::wick::detail::raise<DistributedError>(op, "rank ", rank_, " of ", world_, " timed out after ",
                                          timeout_.count(), " ms waiting for ", what, " at ", addr_, ":",
                                          port_);
}

std::string TcpStore::request(char cmd, const std::string& key, const std::string& value, const char* op,
                              const std::string& awaited) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string m = frame(cmd, key, value);
  if (!send_all(fd_, m.data(), m.size()))
    ::wick::detail::raise<DistributedError>(op, "rank ", rank_, " of ", world_, " lost the TCP store at ",
                                            addr_, ":", port_, " (", awaited, ")");
  auto deadline = Clock::now() + timeout_;
  std::string in;
  auto read_some = [&](size_t want) {
    while (in.size() < want) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) fail(op, awaited);
      pollfd p{fd_, POLLIN, 0};
      int n = ::poll(&p, 1, int(std::min<int64_t>(left, 1 << 30)));
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) fail(op, awaited);
      char tmp[65536];
      ssize_t k = ::recv(fd_, tmp, std::min(sizeof tmp, want - in.size()), 0);
      if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (k <= 0)
        ::wick::detail::raise<DistributedError>(op, "rank ", rank_, " of ", world_, " lost the TCP store at ",
                                                addr_, ":", port_, " while waiting for ", awaited);
      in.append(tmp, size_t(k));
    }
  };
  read_some(8);
  uint64_t n;
  std::memcpy(&n, in.data(), 8);
  in.clear();
  read_some(n);
  return in;
}

void TcpStore::set(const std::string& key, const std::string& value, const char* op) {
  request(kSet, key, value, op, "the TCP store to set '" + key + "'");
}

std::string TcpStore::get(const std::string& key, const char* op) {
  return request(kGet, key, "", op, "key '" + key + "' in the TCP store");
}

int64_t TcpStore::add(const std::string& key, int64_t n, const char* op) {
  std::string r = request(kAdd, key, std::string(reinterpret_cast<const char*>(&n), 8), op,
                          "the TCP store to add to '" + key + "'");
  int64_t v = 0;
  if (r.size() == 8) std::memcpy(&v, r.data(), 8);
  return v;
}

}  // namespace wick::distributed::detail
