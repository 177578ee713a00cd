// Runs one of the project's programs for the tools' tests: its exit status and its stdout and
// stderr together.
#pragma once

#include <cstdio>
#include <string>

#include <sys/wait.h>

namespace wick::testing {

struct Output {
  int status = -1;
  std::string text;  // stdout and stderr together
};

// Runs `'program' args 2>&1` through the shell; status -1 when it could not run or did not exit.
inline Output run_program(const std::string& program, const std::string& args) {
  Output o;
  const std::string cmd = "'" + program + "' " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return o;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) o.text.append(buf, n);
  const int st = pclose(p);
  o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return o;
}

}  // namespace wick::testing
