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

// Runs `command 2>&1` through the shell; status -1 when it could not run or did not exit.
inline Output run_shell(const std::string& command) {
  Output o;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return o;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) o.text.append(buf, n);
  const int st = pclose(p);
  o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return o;
}

// Runs `'program' args 2>&1` through the shell.
inline Output run_program(const std::string& program, const std::string& args) {
  return run_shell("'" + program + "' " + args);
}

}  // namespace wick::testing
