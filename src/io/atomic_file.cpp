// AtomicFile: temporary file, fsync, rename, fsync of the folder.
#include "io/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <unistd.h>

#include "wick/error.h"

namespace wick::detail {

AtomicFile::AtomicFile(std::string path, const char* op) : path_(std::move(path)), tmp_(path_ + ".tmp"), op_(op) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  WICK_CHECK(fd_ >= 0, ValueError, op_, "cannot create '", tmp_, "' to write '", path_, "': ", std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(const char* what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  committed_ = true;  // nothing left to remove
  raise<ValueError>(op_, what, " '", tmp_, "' failed: ", std::strerror(err), "; '", path_, "' was not changed");
}

void AtomicFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    // At most 1 GiB a call: Linux writes at most about 2 GiB at once anyway.
    const ssize_t w = ::write(fd_, p, n < (size_t(1) << 30) ? n : (size_t(1) << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    if (w == 0) fail("writing", ENOSPC);
    p += w;
    n -= size_t(w);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("syncing", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    committed_ = true;
    raise<ValueError>(op_, "closing '", tmp_, "' failed: ", std::strerror(err), "; '", path_, "' was not changed");
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    committed_ = true;
    raise<ValueError>(op_, "cannot rename '", tmp_, "' to '", path_, "': ", std::strerror(err));
  }
  committed_ = true;
  // The rename is durable once the folder's entry is: sync the folder (best effort: some
  // file systems refuse fsync on a folder, and the file itself is already safe).
  const std::string dir = std::filesystem::path(path_).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace wick::detail
