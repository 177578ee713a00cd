// The corpus: Debian's King James Bible through its `bible` program, or files of text.
//
// bible-kjv keeps the text in its own compressed format (/usr/lib/bible.data); its program
// prints any range of verses, one a line after its reference with -f, in a fraction of a
// second for the whole book, so the program is run rather than the format decoded here
// (docs/design.md, "Text and tokens").
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wick/error.h"
#include "wick/text.h"

extern char** environ;

namespace wick::text {

namespace {

// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Runs argv with stdin from /dev/null; its stdout and stderr, and its exit status.
struct Run {
  std::string out, err;
  int status = -1;
  int spawn_error = 0;
};

Run run_program(const std::vector<std::string>& args) {
  Run r;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    r.spawn_error = errno;
    return r;
  }
  Fd out_r{out_pipe[0]}, out_w{out_pipe[1]};
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    r.spawn_error = errno;
    return r;
  }
  Fd err_r{err_pipe[0]}, err_w{err_pipe[1]};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.fd, 2);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  r.spawn_error = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_w.fd);
  out_w.fd = -1;
  ::close(err_w.fd);
  err_w.fd = -1;
  if (r.spawn_error != 0) return r;
  // Both pipes are drained together, so a child filling one never waits on the other.
  pollfd fds[2] = {{out_r.fd, POLLIN, 0}, {err_r.fd, POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open = 2;
  char buf[1 << 16];
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, size_t(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open;
      }
    }
  }
  while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

// Whether s[0, n) is a verse reference as the program prints it: letters (a leading digit
// allowed, "1Sa"), then chapter:verse.
bool is_reference(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && s[i] >= '1' && s[i] <= '3') ++i;
  const size_t letters = i;
  while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
  if (i == letters) return false;
  const size_t chapter = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == chapter || i == s.size() || s[i] != ':') return false;
  const size_t verse = ++i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  return i > verse && i == s.size();
}

}  // namespace

std::string bible_kjv(const std::string& verses) {
  constexpr const char* op = "bible_kjv";
  WICK_CHECK(!verses.empty() && verses.find('\0') == std::string::npos, ValueError, op,
             "an empty verse range");
  // -f: one verse a line, after its reference; -l 0 is not needed (no line breaks without
  // pretty-printing).
  const Run r = run_program({"bible", "-f", verses});
  WICK_CHECK(r.spawn_error == 0, ValueError, op, "cannot run the `bible` program (",
             std::strerror(r.spawn_error),
             "): the King James Bible comes with Debian's bible-kjv package (apt-get install bible-kjv; "
             "scripts/setup.sh installs it)");
  std::string err = r.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  WICK_CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, ValueError, op,
             "the `bible` program failed (", err.empty() ? std::string("no message") : err,
             "); its text comes with Debian's bible-kjv-text package (/usr/lib/bible.data)");
  std::string text;
  text.reserve(r.out.size());
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    std::string_view verse = line;
    if (space != std::string::npos && is_reference(std::string_view(line).substr(0, space)))
      verse = std::string_view(line).substr(space + 1);
    if (verse.empty()) continue;
    text.append(verse);
    text.push_back('\n');
  }
  WICK_CHECK(!text.empty(), ValueError, op, "the verse range '", verses, "' gives no text",
             err.empty() ? std::string() : " (" + err + ")");
  return text;
}

std::string read_corpus(const std::vector<std::string>& files) {
  constexpr const char* op = "read_corpus";
  WICK_CHECK(!files.empty(), ValueError, op, "no corpus files were given");
  std::string text;
  for (const std::string& path : files) {
    std::error_code ec;
    WICK_CHECK(std::filesystem::is_regular_file(path, ec), ValueError, op, "the corpus file '", path, "' ",
               std::filesystem::exists(path, ec) ? "is not a regular file" : "does not exist");
    std::ifstream in(path, std::ios::binary);
    WICK_CHECK(in.good(), ValueError, op, "cannot open corpus file '", path, "': ", std::strerror(errno));
    std::string part((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    WICK_CHECK(!in.bad(), ValueError, op, "cannot read corpus file '", path, "'");
    if (part.empty()) continue;
    if (!text.empty() && text.back() != '\n') text.push_back('\n');
    text += part;
  }
  WICK_CHECK(!text.empty(), ValueError, op, "the corpus is empty (",
             files.size() == 1 ? "'" + files[0] + "' holds no text" : "none of its files holds any text", ")");
  return text;
}

}  // namespace wick::text
