// Helpers tests share: a per-process temporary folder, a file's bytes, an error expected from a
// call (its type, its "[op] " prefix and parts of its message), and the message of one.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "wick/error.h"

namespace wick::test {

// dir_name/name under the system's temporary folder, dir_name made per process.
inline std::string temp_path(const std::string& dir_name, const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / (dir_name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs f, expecting E whose message starts with "[op] " and contains every part of `has`.
template <class E>
void expect_error(const std::function<void()>& f, const std::string& op, const std::vector<std::string>& has = {}) {
  try {
    f();
    ADD_FAILURE() << "no error; expected [" << op << "]";
  } catch (const E& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("[" + op + "] ", 0), 0u) << what;
    for (const auto& h : has) EXPECT_NE(what.find(h), std::string::npos) << "'" << h << "' not in: " << what;
  } catch (const Error& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
  }
}

// The message of the E that f throws ("<no error>" when it throws nothing).
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace wick::test
