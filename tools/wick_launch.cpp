// wick-launch: starts the processes of a distributed run on this host, as torchrun does.
//
//   wick-launch --nproc-per-node 4 wick-train --distributed --model cnn
//   wick-launch --nproc-per-node 8 --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 ./prog --flag
//   wick-launch --standalone --nproc-per-node 2 ./prog    # one node, a free port of 127.0.0.1
//
// Each process gets RANK (node_rank * nproc_per_node + local rank), LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, GROUP_RANK (the node rank), MASTER_ADDR and MASTER_PORT, which
// wick::distributed::init_process_group reads. Each runs in its own process group, so that
// stopping it also stops what it started. SIGINT, SIGTERM and SIGHUP sent to wick-launch are
// passed on to every process; when one process fails (a non-zero exit code or a signal), the
// others get SIGTERM. Either way, those still running after the grace period (30 s) get
// SIGKILL. wick-launch exits with the first failed process's code (128 + the signal's number
// for a signal), or 0 when all succeed.
//
// Open MPI processes started outside mpirun ("singletons") can only connect to each other
// through a running ompi-server. So when ompi-server is on PATH, the world has more than one
// process on a single node and OMPI_MCA_pmix_server_uri is not set already, wick-launch starts
// one (its address in a temporary file), gives the processes
// OMPI_MCA_pmix_server_uri=file:<that file>, and stops it at the end. Across several nodes the
// "mpi" backend is started with mpirun instead (docs/distributed.md).
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

const char* const kUsage =
    "usage: wick-launch [--nproc-per-node N] [--nnodes M --node-rank K] [--master-addr ADDR]\n"
    "                   [--master-port PORT] [--standalone] [--grace-period SECONDS]\n"
    "                   [--no-ompi-server] PROGRAM [ARGS...]\n";

const char* const kHelp =
    "\n"
    "Starts N copies of PROGRAM on this host for a distributed run, as torchrun does.\n"
    "\n"
    "  --nproc-per-node N      processes on this node (default 1), usually one per GPU\n"
    "  --nnodes M              nodes taking part (default 1)\n"
    "  --node-rank K           this node's index, 0 <= K < M (default 0)\n"
    "  --master-addr ADDR      address of the node of rank 0 (default 127.0.0.1)\n"
    "  --master-port PORT      a free TCP port there (default 29500)\n"
    "  --standalone            one node: 127.0.0.1 and a port that is free now, so that several\n"
    "                          runs on one host do not meet\n"
    "  --grace-period SECONDS  after a failure, how long the others get between SIGTERM and\n"
    "                          SIGKILL (default 30)\n"
    "  --no-ompi-server        do not start ompi-server for the \"mpi\" backend\n"
    "  -h, --help              this help\n"
    "\n"
    "Each process gets RANK = K * N + i, LOCAL_RANK = i, WORLD_SIZE = M * N,\n"
    "LOCAL_WORLD_SIZE = N, GROUP_RANK = K, MASTER_ADDR and MASTER_PORT, and with N > 1\n"
    "OMP_NUM_THREADS = 1 unless it is set. When one fails the others are stopped and\n"
    "wick-launch exits with its code (128 + signal for a signal).\n"
    "Options may also be written --opt=VALUE, and with underscores (--nproc_per_node).\n";

struct Config {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  double grace_seconds = 30;
  bool ompi_server = true;
  bool standalone = false;
  bool addr_given = false, port_given = false;
  std::vector<std::string> command;
};

struct UsageError {
  std::string message;
};

int parse_int(const std::string& flag, const std::string& value) {
  int v = 0;
  const char* end = value.data() + value.size();
  auto [p, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || p != end)
    throw UsageError{flag + " expects an integer, got '" + value + "'"};
  return v;
}

double parse_seconds(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || errno != 0 || *end != '\0' || !std::isfinite(v) || v < 0)
    throw UsageError{flag + " expects a number of seconds >= 0, got '" + value + "'"};
  return v;
}

// Returns false for --help.
bool parse(int argc, char** argv, Config& c) {
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") return false;
    if (!arg.starts_with("-")) break;
    std::string value;
    bool has_value = false;
    if (const size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    for (size_t k = 2; k < arg.size(); ++k)
      if (arg[k] == '_') arg[k] = '-';
    auto take = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) throw UsageError{arg + " expects a value"};
      return argv[++i];
    };
    if (arg == "--nproc-per-node") c.nproc_per_node = parse_int(arg, take());
    else if (arg == "--nnodes") c.nnodes = parse_int(arg, take());
    else if (arg == "--node-rank") c.node_rank = parse_int(arg, take());
    else if (arg == "--master-addr") c.master_addr = take(), c.addr_given = true;
    else if (arg == "--master-port") c.master_port = parse_int(arg, take()), c.port_given = true;
    else if (arg == "--standalone" && !has_value) c.standalone = true;
    else if (arg == "--grace-period") c.grace_seconds = parse_seconds(arg, take());
    else if (arg == "--no-ompi-server" && !has_value) c.ompi_server = false;
    else throw UsageError{"unknown option " + std::string(argv[i])};
  }
  for (; i < argc; ++i) c.command.emplace_back(argv[i]);

  if (c.nproc_per_node < 1)
    throw UsageError{"--nproc-per-node must be at least 1, got " + std::to_string(c.nproc_per_node)};
  if (c.nnodes < 1) throw UsageError{"--nnodes must be at least 1, got " + std::to_string(c.nnodes)};
  if (c.node_rank < 0 || c.node_rank >= c.nnodes)
    throw UsageError{"--node-rank must be in [0, " + std::to_string(c.nnodes) + ") for --nnodes " +
                     std::to_string(c.nnodes) + ", got " + std::to_string(c.node_rank)};
  if (int64_t(c.nnodes) * c.nproc_per_node > 1'000'000)
    throw UsageError{"--nnodes times --nproc-per-node is more than 1000000 processes"};
  if (c.master_port < 1 || c.master_port > 65535)
    throw UsageError{"--master-port must be in [1, 65535], got " + std::to_string(c.master_port)};
  if (c.master_addr.empty()) throw UsageError{"--master-addr must not be empty"};
  if (c.standalone && c.nnodes != 1)
    throw UsageError{"--standalone is for one node, not --nnodes " + std::to_string(c.nnodes)};
  if (c.standalone && (c.addr_given || c.port_given))
    throw UsageError{
        "--standalone picks the address and port itself; leave out --master-addr and --master-port"};
  if (c.command.empty()) throw UsageError{"no program to run"};
  return true;
}

// The executable execvp would run for name, or "" when there is none.
std::string find_program(const std::string& name) {
  auto runnable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return runnable(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string p = (dir.empty() ? "." : dir) + "/" + name;
    if (runnable(p)) return p;
  }
  return "";
}

// A TCP port of 127.0.0.1 that nothing listens on now (0 when none can be found).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// The signals wick-launch passes on, and SIGCHLD; blocked, and taken with sigtimedwait.
sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  return set;
}

sigset_t g_original_mask;

// In a child after fork: the launcher's own signal mask is not for it.
void child_setup() {
  ::sigprocmask(SIG_SETMASK, &g_original_mask, nullptr);
  ::setpgid(0, 0);
  // Ends with the launcher even when it is killed with SIGKILL.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
}

struct Proc {
  pid_t pid = -1;
  int rank = 0, local_rank = 0;
  bool running = false;
};

// ompi-server, for the "mpi" backend's singletons.
class OmpiServer {
 public:
  // Starts it and waits for its address; false (with a message) when it cannot.
  bool start(const std::string& exe, const sigset_t& signals, int& interrupted) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/wick-launch-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    const char* made = ::mkdtemp(buf.data());
    if (!made) {
      std::cerr << "wick-launch: cannot make a temporary folder in " << templ.substr(0, templ.rfind('/'))
                << " for ompi-server: " << std::strerror(errno) << "\n";
      return false;
    }
    dir_ = made;
    uri_file_ = dir_ + "/ompi-server.uri";
    pid_ = ::fork();
    if (pid_ < 0) {
      std::cerr << "wick-launch: cannot start ompi-server: " << std::strerror(errno) << "\n";
      return false;
    }
    if (pid_ == 0) {
      child_setup();
      const int devnull = ::open("/dev/null", O_RDWR);
      if (devnull >= 0) {
        ::dup2(devnull, STDIN_FILENO);
        ::dup2(devnull, STDOUT_FILENO);
      }
      ::execl(exe.c_str(), "ompi-server", "--no-daemonize", "-r", uri_file_.c_str(), (char*)nullptr);
      std::fprintf(stderr, "wick-launch: cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
      ::_exit(127);
    }
    // The address is complete once its line has ended.
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    for (;;) {
      std::ifstream in(uri_file_);
      std::string text((std::istreambuf_iterator<char>(in)), {});
      if (text.find('\n') != std::string::npos) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        std::cerr << "wick-launch: ompi-server ended before writing its address (see its messages above; "
                     "--no-ompi-server runs without it)\n";
        return false;
      }
      if (Clock::now() > deadline) {
        std::cerr << "wick-launch: ompi-server did not write its address to " << uri_file_
                  << " within 30 s (--no-ompi-server runs without it)\n";
        return false;
      }
      const timespec tick{0, 10'000'000};
      siginfo_t info{};
      const int sig = ::sigtimedwait(&signals, &info, &tick);
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
        interrupted = sig;
        return false;
      }
    }
  }

  const std::string& uri_file() const { return uri_file_; }
  pid_t pid() const { return pid_; }
  // Called when waitpid has collected it.
  void exited() { pid_ = -1; }

  // SIGTERM, then SIGKILL after 2 s; removes the address file.
  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      const auto deadline = Clock::now() + std::chrono::seconds(2);
      int status = 0;
      while (::waitpid(pid_, &status, WNOHANG) == 0) {
        if (Clock::now() > deadline) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, &status, 0);
          break;
        }
        ::usleep(10'000);
      }
      pid_ = -1;
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      dir_.clear();
    }
  }

  ~OmpiServer() { stop(); }

 private:
  pid_t pid_ = -1;
  std::string dir_, uri_file_;
};

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string describe(int status) {
  if (WIFSIGNALED(status)) return "was killed by " + signal_name(WTERMSIG(status));
  return "exited with code " + std::to_string(exit_code(status));
}

int launch(Config c) {
  if (c.standalone) {
    c.master_addr = "127.0.0.1";
    c.master_port = free_port();
    if (c.master_port == 0) {
      std::cerr << "wick-launch: --standalone: cannot find a free port of 127.0.0.1: " << std::strerror(errno)
                << "\n";
      return 1;
    }
  }
  const std::string program = find_program(c.command[0]);
  if (program.empty()) {
    std::cerr << "wick-launch: " << c.command[0] << ": no such program (not a file, or not on PATH)\n";
    return 127;
  }
  const int world = c.nnodes * c.nproc_per_node;

  const sigset_t signals = handled_signals();
  ::sigprocmask(SIG_BLOCK, &signals, &g_original_mask);

  OmpiServer server;
  std::string server_uri;
  if (c.ompi_server && world > 1 && c.nnodes == 1 && !std::getenv("OMPI_MCA_pmix_server_uri")) {
    if (const std::string exe = find_program("ompi-server"); !exe.empty()) {
      int interrupted = 0;
      if (!server.start(exe, signals, interrupted)) {
        server.stop();
        return interrupted ? 128 + interrupted : 1;
      }
      server_uri = "file:" + server.uri_file();
    }
  }

  std::vector<char*> argv;
  for (const auto& a : c.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  std::vector<Proc> procs(size_t(c.nproc_per_node));
  int running = 0;
  int failure_code = 0;  // the first failure's exit code
  // Once a process has failed or a signal came, the processes are being stopped: SIGKILL for
  // those still running after the grace period.
  bool stopping = false, killed = false;
  int stop_signal = 0;
  Clock::time_point kill_at{};

  auto signal_all = [&](int sig) {
    for (const Proc& p : procs)
      if (p.running) ::kill(-p.pid, sig);
  };
  auto stop_all = [&](int sig) {
    signal_all(sig);
    if (stopping) return;
    stopping = true;
    stop_signal = sig;
    kill_at = Clock::now() +
              std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(c.grace_seconds));
  };

  for (int i = 0; i < c.nproc_per_node; ++i) {
    Proc& p = procs[size_t(i)];
    p.local_rank = i;
    p.rank = c.node_rank * c.nproc_per_node + i;
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::cerr << "wick-launch: cannot start local rank " << i << ": " << std::strerror(errno) << "\n";
      failure_code = 1;
      stop_all(SIGTERM);
      break;
    }
    if (pid == 0) {
      child_setup();
      ::setenv("RANK", std::to_string(p.rank).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(i).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(c.nproc_per_node).c_str(), 1);
      ::setenv("GROUP_RANK", std::to_string(c.node_rank).c_str(), 1);
      ::setenv("MASTER_ADDR", c.master_addr.c_str(), 1);
      ::setenv("MASTER_PORT", std::to_string(c.master_port).c_str(), 1);
      // mpirun's variables would win over these in init_process_group.
      for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                            "OMPI_COMM_WORLD_LOCAL_SIZE"})
        ::unsetenv(v);
      if (!server_uri.empty()) ::setenv("OMPI_MCA_pmix_server_uri", server_uri.c_str(), 1);
      // Several processes on one host would each start a thread per core and oversubscribe it:
      // one CPU thread each unless the user says otherwise (torchrun's default).
      if (c.nproc_per_node > 1) ::setenv("OMP_NUM_THREADS", "1", 0);
      ::execv(program.c_str(), argv.data());
      std::fprintf(stderr, "wick-launch: cannot run %s: %s\n", program.c_str(), std::strerror(errno));
      ::_exit(127);
    }
    // Also here, so that a signal sent before the child has run reaches its group.
    ::setpgid(pid, pid);
    p.pid = pid;
    p.running = true;
    ++running;
  }

  while (running > 0) {
    siginfo_t info{};
    int sig;
    if (stopping && !killed) {
      const auto left = kill_at - Clock::now();
      if (left <= Clock::duration::zero()) {
        std::cerr << "wick-launch: " << running << " process" << (running > 1 ? "es" : "")
                  << " still running " << c.grace_seconds << " s after " << signal_name(stop_signal)
                  << "; sending SIGKILL\n";
        signal_all(SIGKILL);
        killed = true;
        continue;
      }
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      const timespec ts{time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)};
      sig = ::sigtimedwait(&signals, &info, &ts);
    } else {
      sig = ::sigwaitinfo(&signals, &info);
    }
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      stop_all(sig);
      continue;
    }
    // SIGCHLD, a timeout or an interruption: collect whatever has ended.
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      if (pid == server.pid()) {
        server.exited();
        std::cerr << "wick-launch: ompi-server " << describe(status) << "\n";
        continue;
      }
      for (Proc& p : procs) {
        if (p.pid != pid || !p.running) continue;
        p.running = false;
        --running;
        const int code = exit_code(status);
        if (code != 0 && failure_code == 0) {
          failure_code = code;
          std::cerr << "wick-launch: rank " << p.rank << " (local rank " << p.local_rank << ", pid " << pid
                    << ") " << describe(status);
          if (running > 0 && !stopping) std::cerr << "; stopping the other processes";
          std::cerr << "\n";
          if (!stopping) stop_all(SIGTERM);
        }
      }
    }
  }
  server.stop();
  return failure_code;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  try {
    if (!parse(argc, argv, c)) {
      std::cout << kUsage << kHelp;
      return 0;
    }
  } catch (const UsageError& e) {
    std::cerr << "wick-launch: error: " << e.message << "\n" << kUsage;
    return 2;
  }
  return launch(c);
}
