// Files written whole or not at all: the bytes go to path + ".tmp", which is synced and then
// renamed over path, and the folder is synced so the rename itself survives a crash. Until the
// rename, the previous file at path stays as it was; a failure removes the temporary file. Two
// saves of one path take turns through an exclusive lock on the temporary file, and a link left
// at the temporary name is removed, never followed (docs/design.md, "Saving and loading").
#pragma once

#include <cstddef>
#include <string>

namespace wick::detail {

class AtomicFile {
 public:
  // Creates (or takes over) the temporary file, waiting for another save of path to finish;
  // ValueError "[op] cannot create ..." when it can't.
  AtomicFile(std::string path, const char* op);
  // Removes the temporary file unless commit succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Appends n bytes; ValueError "[op] writing ... failed: <reason>" (the temporary file is
  // removed, path untouched).
  void write(const void* data, size_t n);
  // fsync, rename over path, close (dropping the lock), fsync the folder.
  void commit();

 private:
  [[noreturn]] void fail(const char* what, int err);

  std::string path_, tmp_;
  const char* op_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace wick::detail
