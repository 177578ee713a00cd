// AtomicFile: temporary file, fsync, rename, fsync of the folder.
#include "io/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wick/error.h"

namespace wick::detail {

AtomicFile::AtomicFile(std::string path, const char* op) : path_(std::move(path)), tmp_(path_ + ".tmp"), op_(op) {
  // Two saves of one path (two threads, or every rank of a job writing the same checkpoint)
  // share the temporary file's name: each takes an exclusive lock on it first, so that their
  // bytes never interleave into one torn file. The lock is held until this object closes the
  // file (after the rename), and a process killed while holding it drops it. A waiter whose
  // file was meanwhile renamed into place (or removed) holds a lock on a file that is no
  // longer the temporary: it opens the name again. A symbolic link left at the temporary
  // name is removed, never followed (opening it would truncate whatever it points at).
  for (int attempt = 0;; ++attempt) {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno == ELOOP && attempt < 8 && ::unlink(tmp_.c_str()) == 0) continue;
    WICK_CHECK(fd_ >= 0, ValueError, op_, "cannot create '", tmp_, "' to write '", path_, "': ", std::strerror(errno));
    struct stat own {};
    if (::fstat(fd_, &own) != 0 || !S_ISREG(own.st_mode)) {
      ::close(fd_);
      fd_ = -1;
      committed_ = true;  // not ours to remove
      raise<ValueError>(op_, "cannot write '", path_, "': '", tmp_, "' exists and is not a regular file");
    }
    int locked;
    while ((locked = ::flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
    }
    // A file system without locks (ENOLCK, EOPNOTSUPP) is written unlocked, as before.
    struct stat named {};
    if (locked != 0 || (::lstat(tmp_.c_str(), &named) == 0 && named.st_dev == own.st_dev && named.st_ino == own.st_ino))
      break;
    ::close(fd_);
    fd_ = -1;
  }
  if (::ftruncate(fd_, 0) != 0) fail("truncating", errno);
}

// The temporary file is unlinked before it is closed (which drops the lock): a save waiting for
// the lock then finds the name gone instead of writing into a file about to lose its name.
AtomicFile::~AtomicFile() {
  if (!committed_) ::unlink(tmp_.c_str());
  if (fd_ >= 0) ::close(fd_);
}

void AtomicFile::fail(const char* what, int err) {
  ::unlink(tmp_.c_str());
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
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
  // Renamed while still open, so still locked: closing first would let a waiting save of the
  // same path truncate the file between the close and the rename.
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    ::close(fd_);
    fd_ = -1;
    committed_ = true;
    raise<ValueError>(op_, "cannot rename '", tmp_, "' to '", path_, "': ", std::strerror(err), "; '", path_,
                      "' was not changed");
  }
  // The bytes are on the disk already (fsync above): a failing close loses nothing.
  ::close(fd_);
  fd_ = -1;
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
