// wick-launch run as a program, its processes small shell scripts: the variables each sees,
// failures stopping the others, signals passed on, ompi-server for the "mpi" backend, and usage
// errors.
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("wick_launch_" + std::to_string(getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct Result {
  int code = -1;     // the exit code, or 128 + the signal's number
  std::string text;  // stdout and stderr together
};

// Runs wick-launch with args (environment plus extra "NAME=value" settings, "NAME" alone to
// unset), calling while_running(pid) before waiting for it.
Result launch(const TempDir& dir, const std::vector<std::string>& args,
              const std::vector<std::string>& env = {},
              const std::function<void(pid_t)>& while_running = {}) {
  Result r;
#ifdef WICK_LAUNCH_PATH
  const std::string out = dir.file("launcher.out");
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    signal(SIGINT, SIG_DFL);  // a shell can't trap a signal ignored when it started
    signal(SIGTERM, SIG_DFL);
    for (const auto& e : env) {
      const size_t eq = e.find('=');
      if (eq == std::string::npos) unsetenv(e.c_str());
      else setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
    }
    std::vector<char*> argv{const_cast<char*>(WICK_LAUNCH_PATH)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(WICK_LAUNCH_PATH, argv.data());
    _exit(126);
  }
  if (while_running) while_running(pid);
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.text = read(out);
#else
  (void)dir, (void)args, (void)env, (void)while_running;
#endif
  return r;
}

// Waits (up to a minute) for a file to exist.
bool wait_for(const std::string& path) {
  for (int i = 0; i < 6000; ++i) {
    if (fs::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Whether the process whose id a script wrote to path is gone.
bool gone(const std::string& path) {
  const std::string text = read(path);
  if (text.empty()) return false;
  return kill(pid_t(std::stol(text)), 0) == -1 && errno == ESRCH;
}

using Args = std::vector<std::string>;

std::vector<std::string> sh(const std::string& script) { return {"/bin/sh", "-c", script}; }

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

bool ompi_server_on_path() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t pos = 0;
  while (pos <= dirs.size()) {
    const size_t colon = std::min(dirs.find(':', pos), dirs.size());
    const std::string p = dirs.substr(pos, colon - pos) + "/ompi-server";
    if (access(p.c_str(), X_OK) == 0) return true;
    pos = colon + 1;
  }
  return false;
}

const char* const kPrintEnv =
    "echo \"RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE "
    "GROUP_RANK=$GROUP_RANK MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT "
    "OMPI_COMM_WORLD_RANK=${OMPI_COMM_WORLD_RANK-unset}\" > \"$0/env.$RANK\"";

}  // namespace

class WickLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef WICK_LAUNCH_PATH
    GTEST_SKIP() << "wick-launch is not built (WICK_BUILD_TOOLS=OFF)";
#endif
  }
};

TEST_F(WickLaunch, SetsTheVariablesOfEachProcess) {
  TempDir dir;
  // mpirun's variables, when wick-launch itself got them, must not reach the processes.
  Result r = launch(dir, Args{"--nproc-per-node", "3"} + sh(kPrintEnv) + Args{dir.str()},
                    {"OMPI_COMM_WORLD_RANK=5"});
  ASSERT_EQ(r.code, 0) << r.text;
  for (int rank = 0; rank < 3; ++rank) {
    const std::string k = std::to_string(rank);
    EXPECT_EQ(read(dir.file("env." + k)),
              "RANK=" + k + " LOCAL_RANK=" + k +
                  " WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 GROUP_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 "
                  "OMPI_COMM_WORLD_RANK=unset\n");
  }
}

// Several processes a host get one OpenMP thread each unless the user set a number (torchrun's
// rule); a single process keeps OpenMP's default.
TEST_F(WickLaunch, OneCpuThreadEachUnlessTold) {
  const char* print = "echo \"${OMP_NUM_THREADS-unset}\" > \"$0/omp.$RANK\"";
  TempDir dir;
  Result r = launch(dir, Args{"--nproc-per-node", "2"} + sh(print) + Args{dir.str()}, {"OMP_NUM_THREADS"});
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_EQ(read(dir.file("omp.0")), "1\n");
  EXPECT_EQ(read(dir.file("omp.1")), "1\n");
  TempDir told;
  r = launch(told, Args{"--nproc-per-node", "2"} + sh(print) + Args{told.str()}, {"OMP_NUM_THREADS=3"});
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_EQ(read(told.file("omp.1")), "3\n");
  TempDir one;
  r = launch(one, Args{"--nproc-per-node", "1"} + sh(print) + Args{one.str()}, {"OMP_NUM_THREADS"});
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_EQ(read(one.file("omp.0")), "unset\n");
}

TEST_F(WickLaunch, SecondNodeOfTwo) {
  TempDir dir;
  Result r = launch(dir, Args{"--nnodes=2", "--node_rank", "1", "--nproc-per-node", "2", "--master-addr",
                              "10.1.2.3", "--master-port=1234", "--"} +
                             sh(kPrintEnv) + Args{dir.str()});
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_FALSE(fs::exists(dir.file("env.0")));
  EXPECT_EQ(read(dir.file("env.2")),
            "RANK=2 LOCAL_RANK=0 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=1 MASTER_ADDR=10.1.2.3 "
            "MASTER_PORT=1234 OMPI_COMM_WORLD_RANK=unset\n");
  EXPECT_EQ(read(dir.file("env.3")),
            "RANK=3 LOCAL_RANK=1 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=1 MASTER_ADDR=10.1.2.3 "
            "MASTER_PORT=1234 OMPI_COMM_WORLD_RANK=unset\n");
}

TEST_F(WickLaunch, StandalonePicksAFreePort) {
  TempDir dir;
  Result r =
      launch(dir, Args{"--standalone", "--nproc-per-node", "2"} +
                      sh("echo \"$MASTER_ADDR $MASTER_PORT\" > \"$0/master.$RANK\"") + Args{dir.str()});
  ASSERT_EQ(r.code, 0) << r.text;
  const std::string master = read(dir.file("master.0"));
  EXPECT_EQ(read(dir.file("master.1")), master);
  ASSERT_TRUE(master.starts_with("127.0.0.1 ")) << master;
  const int port = std::stoi(master.substr(10));
  EXPECT_TRUE(port >= 1 && port <= 65535) << master;
}

TEST_F(WickLaunch, OmpiServerForSeveralProcessesOfOneNode) {
  if (!ompi_server_on_path()) GTEST_SKIP() << "ompi-server is not on PATH";
  TempDir dir;
  // Each process records the server's address file and a copy of what it says.
  const std::string script =
      "echo \"${OMPI_MCA_pmix_server_uri-unset}\" > \"$0/uri.$RANK\"; "
      "f=${OMPI_MCA_pmix_server_uri#file:}; [ -f \"$f\" ] && cat \"$f\" > \"$0/address.$RANK\"; true";
  Result r =
      launch(dir, Args{"--nproc-per-node", "2"} + sh(script) + Args{dir.str()}, {"OMPI_MCA_pmix_server_uri"});
  ASSERT_EQ(r.code, 0) << r.text;
  const std::string uri = read(dir.file("uri.0"));
  ASSERT_TRUE(uri.starts_with("file:")) << uri;
  EXPECT_EQ(read(dir.file("uri.1")), uri);
  EXPECT_TRUE(has(read(dir.file("address.0")), "tcp://")) << read(dir.file("address.0"));
  // Stopped and cleaned up at the end.
  EXPECT_FALSE(fs::exists(uri.substr(5, uri.size() - 6)));

  // Not for one process, not when told so, not across nodes, and not over the caller's own.
  const std::vector<std::vector<std::string>> without = {
      {"--nproc-per-node", "1"},
      {"--nproc-per-node", "2", "--no-ompi-server"},
      {"--nproc-per-node", "2", "--nnodes", "2"},
  };
  for (const auto& opts : without) {
    fs::remove(dir.file("uri.0"));
    Result w = launch(dir, opts + sh(script) + Args{dir.str()}, {"OMPI_MCA_pmix_server_uri"});
    ASSERT_EQ(w.code, 0) << w.text;
    EXPECT_EQ(read(dir.file("uri.0")), "unset\n") << opts[opts.size() - 1];
  }
  Result own = launch(dir, Args{"--nproc-per-node", "2"} + sh(script) + Args{dir.str()},
                      {"OMPI_MCA_pmix_server_uri=file:/somewhere/else"});
  ASSERT_EQ(own.code, 0) << own.text;
  EXPECT_EQ(read(dir.file("uri.1")), "file:/somewhere/else\n");
}

TEST_F(WickLaunch, AllSucceedExitsZero) {
  TempDir dir;
  Result r = launch(dir, Args{"--nproc-per-node", "2"} + sh("echo hello from $RANK"));
  EXPECT_EQ(r.code, 0) << r.text;
  EXPECT_TRUE(has(r.text, "hello from 0\n")) << r.text;
  EXPECT_TRUE(has(r.text, "hello from 1\n")) << r.text;
}

TEST_F(WickLaunch, FailureStopsTheOthersAndGivesItsCode) {
  TempDir dir;
  // Rank 0 sleeps far longer than the test may take; rank 1 fails with 3 once rank 0 is up.
  const std::string script =
      "if [ $RANK = 0 ]; then echo $$ > \"$0/pid.0\"; exec sleep 600; fi; "
      "while [ ! -f \"$0/pid.0\" ]; do sleep 0.01; done; exit 3";
  Result r = launch(dir, Args{"--nproc-per-node", "2"} + sh(script) + Args{dir.str()});
  EXPECT_EQ(r.code, 3) << r.text;
  EXPECT_TRUE(has(r.text, "rank 1 (local rank 1, pid ")) << r.text;
  EXPECT_TRUE(has(r.text, "exited with code 3; stopping the other processes")) << r.text;
  EXPECT_TRUE(gone(dir.file("pid.0"))) << "the sleeping rank 0 was not stopped";
}

TEST_F(WickLaunch, KilledBySignalGives128PlusSignal) {
  TempDir dir;
  const std::string script =
      "if [ $RANK = 1 ]; then echo $$ > \"$0/pid.1\"; exec sleep 600; fi; "
      "while [ ! -f \"$0/pid.1\" ]; do sleep 0.01; done; kill -KILL $$";
  Result r = launch(dir, Args{"--nproc-per-node", "2"} + sh(script) + Args{dir.str()});
  EXPECT_EQ(r.code, 128 + SIGKILL) << r.text;
  EXPECT_TRUE(has(r.text, "rank 0 (local rank 0, pid ")) << r.text;
  EXPECT_TRUE(has(r.text, "was killed by SIGKILL")) << r.text;
  EXPECT_TRUE(gone(dir.file("pid.1")));
}

TEST_F(WickLaunch, SigkillAfterTheGracePeriod) {
  TempDir dir;
  // Rank 0 ignores SIGTERM (so does the sleep it becomes).
  const std::string script =
      "if [ $RANK = 0 ]; then trap '' TERM; echo $$ > \"$0/pid.0\"; exec sleep 600; fi; "
      "while [ ! -f \"$0/pid.0\" ]; do sleep 0.01; done; exit 5";
  Result r =
      launch(dir, Args{"--grace-period", "0.2", "--nproc-per-node", "2"} + sh(script) + Args{dir.str()});
  EXPECT_EQ(r.code, 5) << r.text;
  EXPECT_TRUE(has(r.text, "1 process still running 0.2 s after SIGTERM; sending SIGKILL")) << r.text;
  EXPECT_TRUE(gone(dir.file("pid.0")));
}

TEST_F(WickLaunch, PassesSignalsOn) {
  for (int sig : {SIGINT, SIGTERM}) {
    TempDir dir;
    const std::string name = sig == SIGINT ? "INT" : "TERM";
    // Each process notes the signal it got, then exits with 7 + its rank.
    const std::string script = "trap 'echo " + name + " > \"$0/got.$RANK\"; exit $((7 + RANK))' " + name +
                               "; echo $$ > \"$0/ready.$RANK\"; while true; do sleep 0.05; done";
    Result r =
        launch(dir, Args{"--nproc-per-node", "2"} + sh(script) + Args{dir.str()}, {}, [&](pid_t launcher) {
          ASSERT_TRUE(wait_for(dir.file("ready.0")));
          ASSERT_TRUE(wait_for(dir.file("ready.1")));
          kill(launcher, sig);
        });
    EXPECT_TRUE(r.code == 7 || r.code == 8) << name << ": " << r.code << "\n" << r.text;
    EXPECT_EQ(read(dir.file("got.0")), name + "\n");
    EXPECT_EQ(read(dir.file("got.1")), name + "\n");
  }
}

TEST_F(WickLaunch, UsageErrors) {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{}, "no program to run"},
      {{"--nproc-per-node", "2"}, "no program to run"},
      {{"--nproc-per-node", "0", "true"}, "--nproc-per-node must be at least 1, got 0"},
      {{"--nproc-per-node", "two", "true"}, "--nproc-per-node expects an integer, got 'two'"},
      {{"--nproc-per-node"}, "--nproc-per-node expects a value"},
      {{"--nnodes", "0", "true"}, "--nnodes must be at least 1, got 0"},
      {{"--nnodes", "2", "--node-rank", "2", "true"}, "--node-rank must be in [0, 2) for --nnodes 2, got 2"},
      {{"--node-rank", "-1", "true"}, "--node-rank must be in [0, 1) for --nnodes 1, got -1"},
      {{"--master-port", "70000", "true"}, "--master-port must be in [1, 65535], got 70000"},
      {{"--master-addr=", "true"}, "--master-addr must not be empty"},
      {{"--grace-period", "-1", "true"}, "--grace-period expects a number of seconds >= 0, got '-1'"},
      {{"--frobnicate", "true"}, "unknown option --frobnicate"},
      {{"--standalone", "--nnodes", "2", "true"}, "--standalone is for one node, not --nnodes 2"},
      {{"--standalone", "--master-port", "1234", "true"},
       "--standalone picks the address and port itself; leave out --master-addr and --master-port"},
  };
  for (const auto& c : cases) {
    Result r = launch(dir, c.args);
    EXPECT_EQ(r.code, 2) << r.text;
    EXPECT_TRUE(has(r.text, "wick-launch: error: " + c.message + "\n")) << r.text;
    EXPECT_TRUE(has(r.text, "usage: wick-launch")) << r.text;
  }
  Result help = launch(dir, {"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_TRUE(help.text.starts_with("usage: wick-launch")) << help.text;
  EXPECT_TRUE(has(help.text, "RANK = K * N + i")) << help.text;

  Result missing = launch(dir, {"--nproc-per-node", "2", "no-such-program-anywhere"});
  EXPECT_EQ(missing.code, 127);
  EXPECT_TRUE(has(missing.text, "wick-launch: no-such-program-anywhere: no such program")) << missing.text;
}
