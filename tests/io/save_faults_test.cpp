// Faults while saving, for every writer of files a user keeps: wick::save of a tensor, a list of
// tensors, a module and an optimizer; the safetensors save; save_checkpoint (wick-gpt's
// checkpoints); write_shard; Tokenizer::save. For each: the process killed in the middle, the
// file-size limit and a full disk leave the previous file whole and loadable, and where the
// process lives on the error names the op called and the path (docs/design.md, "Saving and
// loading").
//
// Each fault runs in a child process (this binary run again on a DISABLED_ test), so that the
// file-size limit, the signal disposition and the mount namespace never touch this process.
// The full disk is a real one: a 1 MiB tmpfs mounted in a private user and mount namespace
// (unshare(CLONE_NEWUSER | CLONE_NEWNS), which needs no root), filled to its last block. A
// kernel or container that refuses unprivileged user namespaces (sysctl
// kernel.unprivileged_userns_clone=0, or a seccomp profile denying unshare) gives no other way
// to fill a file system without root and without touching the machine's own disks: that test
// then skips, saying so; the file-size limit still drives the same failing-write path.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../test_files.h"
#include "wick/wick.h"

namespace fs = std::filesystem;
using namespace wick;
using Json = nlohmann::json;

namespace {

// One writer: what it writes as version k (small or large), and the version a file at path
// holds, checked whole (-1 with a failure added when it is not).
struct Writer {
  const char* name;
  const char* op;  // the op its errors name
  std::function<void(const std::string& path, int64_t k, bool large)> write;
  std::function<int64_t(const std::string& path)> read;
};

constexpr int64_t kLarge = int64_t(1) << 20;  // elements of a large version: 4 MiB of float32
constexpr int64_t kSmall = 64;

// The version k that every element of t holds; -1 (and a failure) when they differ.
int64_t constant_of(const Tensor& t) {
  const Tensor flat = t.detach().cpu().to(kFloat64).reshape({-1});
  if (flat.numel() == 0) {
    ADD_FAILURE() << "an empty tensor";
    return -1;
  }
  const double k = flat[0].item<double>();
  const int64_t differ = flat.ne(k).sum().item<int64_t>();
  if (differ != 0) {
    ADD_FAILURE() << differ << " elements differ from the first (" << k << "): a torn file";
    return -1;
  }
  return int64_t(k);
}

struct BigNetImpl : nn::Module {
  explicit BigNetImpl(int64_t n) {
    w = register_parameter("w", zeros({n}));
    register_buffer("b", zeros({3}));
  }
  Tensor w;
};
WICK_MODULE(BigNet);

// Two models of vocabularies 500 and 600, trained once by the test process and loaded from its
// files by the children it starts (WICK_TEST_TOKENIZERS); null without SentencePiece.
const text::Tokenizer* tokenizer(int which) {
  static std::unique_ptr<text::Tokenizer> toks[2];
  static bool tried = false;
  if (!tried) {
    tried = true;
    try {
      if (const char* dir = std::getenv("WICK_TEST_TOKENIZERS")) {
        for (int i = 0; i < 2; ++i)
          toks[i] = std::make_unique<text::Tokenizer>(
              text::Tokenizer::load(std::string(dir) + "/" + std::to_string(i) + ".model"));
      } else {
        const std::string text = text::bible_kjv("gen1:1-gen11:32");
        const std::string first = wick::test::temp_path("wick_save_faults", "0.model");
        for (int i = 0; i < 2; ++i) {
          toks[i] = std::make_unique<text::Tokenizer>(text::Tokenizer::train(text, {.vocab_size = 500 + 100 * i}));
          toks[i]->save(wick::test::temp_path("wick_save_faults", std::to_string(i) + ".model"));
        }
        ::setenv("WICK_TEST_TOKENIZERS", fs::path(first).parent_path().c_str(), 1);
      }
    } catch (const NotImplementedError&) {
    }
  }
  return toks[which].get();
}

const std::vector<Writer>& writers() {
  static const std::vector<Writer> all = {
      {"tensor", "save",
       [](const std::string& p, int64_t k, bool large) { save(full({large ? kLarge : kSmall}, double(k)), p); },
       [](const std::string& p) {
         Tensor t;
         load(t, p);
         return constant_of(t);
       }},
      {"tensors", "save",
       [](const std::string& p, int64_t k, bool large) {
         save(std::vector<Tensor>{full({2}, double(k)), full({large ? kLarge : kSmall}, double(k))}, p);
       },
       [](const std::string& p) {
         std::vector<Tensor> ts;
         load(ts, p);
         if (ts.size() != 2) ADD_FAILURE() << ts.size() << " tensors";
         const int64_t k = constant_of(ts.at(1));
         if (constant_of(ts.at(0)) != k) ADD_FAILURE() << "the two tensors come from two saves";
         return k;
       }},
      {"module", "save",
       [](const std::string& p, int64_t k, bool large) {
         BigNet net(large ? kLarge : kSmall);
         NoGradGuard g;
         for (auto& t : net->parameters()) t.fill_(double(k));
         for (auto& t : net->buffers()) t.fill_(double(k));
         save(net, p);
       },
       [](const std::string& p) {
         const auto n = load_checkpoint(p).tensors.at("w").numel();
         BigNet net(n);
         load(net, p);
         const int64_t k = constant_of(net->w);
         if (constant_of(net->buffers().at(0)) != k) ADD_FAILURE() << "parameter and buffer from two saves";
         return k;
       }},
      {"optimizer", "save",
       [](const std::string& p, int64_t k, bool large) {
         Tensor w = zeros({large ? kLarge : kSmall}).requires_grad_();
         optim::SGD opt({w}, optim::SGDOptions(double(k)).momentum(0.5));
         w.mutable_grad() = full({w.numel()}, double(k));
         opt.step();  // the momentum buffer is the gradient, k
         save(opt, p);
       },
       [](const std::string& p) {
         const auto n = load_checkpoint(p).tensors.begin()->second.numel();
         Tensor w = zeros({n}).requires_grad_();
         optim::SGD opt({w}, optim::SGDOptions(1.0).momentum(0.5));
         load(opt, p);
         const Checkpoint sd = opt.state_dict();
         const int64_t k = constant_of(sd.tensors.begin()->second);
         const auto groups = Json::parse(sd.metadata.at("param_groups"));
         if (groups[0]["lr"].get<double>() != double(k)) ADD_FAILURE() << "state and lr from two saves";
         return k;
       }},
      {"safetensors", "save",
       [](const std::string& p, int64_t k, bool large) {
         save(TensorMap{{"x", full({large ? kLarge : kSmall}, double(k), kFloat16)}}, p,
              {{"version", std::to_string(k)}});
       },
       [](const std::string& p) {
         const int64_t k = constant_of(load(p).at("x"));
         if (load_metadata(p).at("version") != std::to_string(k)) ADD_FAILURE() << "metadata of another save";
         return k;
       }},
      {"checkpoint", "save_checkpoint",
       [](const std::string& p, int64_t k, bool large) {
         Checkpoint c;
         c.put("model.", TensorMap{{"w", full({large ? kLarge : kSmall}, double(k))}});
         c.metadata["run.step"] = std::to_string(k);
         save_checkpoint(c, p);
       },
       [](const std::string& p) {
         const Checkpoint c = load_checkpoint(p);
         const int64_t k = constant_of(c.tensors.at("model.w"));
         if (c.metadata.at("run.step") != std::to_string(k)) ADD_FAILURE() << "metadata of another save";
         return k;
       }},
      {"shard", "write_shard",
       [](const std::string& p, int64_t k, bool large) {
         text::write_shard(p, std::vector<int64_t>(size_t(large ? kLarge : kSmall), k % 65536), 65536);
       },
       [](const std::string& p) {
         text::TokenShard s(p);
         return constant_of(s.tokens());
       }},
      {"tokenizer", "Tokenizer.save",
       // Two models of vocabularies 500 and 600; version k is the model of 500 + 100 * (k % 2),
       // and its size cannot grow: "large" is the same file.
       [](const std::string& p, int64_t k, bool) { tokenizer(int(k % 2))->save(p); },
       [](const std::string& p) { return text::Tokenizer::load(p).vocab_size() == 600 ? int64_t(1) : int64_t(2); }},
  };
  return all;
}

// The version read back after writing version k (the tokenizer has two).
int64_t read_as(const Writer& w, int64_t k) { return w.name == std::string("tokenizer") ? 2 - k % 2 : k; }

const Writer& writer_named(std::string_view name) {
  for (const Writer& w : writers())
    if (name == w.name) return w;
  throw std::runtime_error("no writer " + std::string(name));
}

std::string self_exe() { return fs::read_symlink("/proc/self/exe").string(); }

// Runs this binary's DISABLED_ test `test` in a child with the environment given, after
// `before` (run in the child between fork and exec: system calls only); its exit status.
int run_child(const std::string& test, const std::vector<std::pair<std::string, std::string>>& env,
              const std::function<int()>& before = {}, pid_t* started = nullptr) {
  const std::string exe = self_exe(), filter = "--gtest_filter=SaveFaults.DISABLED_" + test;
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    if (before) {
      const int rc = before();
      if (rc != 0) ::_exit(rc);
    }
    ::execl(exe.c_str(), "wick_tests", filter.c_str(), "--gtest_also_run_disabled_tests",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (started) {
    *started = pid;
    return 0;
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool have_tokenizer(const std::string& name) { return name != "tokenizer" || tokenizer(0) != nullptr; }

std::string dir_for(const std::string& what, const std::string& writer) {
  const std::string d = wick::test::temp_path("wick_save_faults", what + "_" + writer);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// After a failed save: the error is a ValueError naming op and path (and why), the previous
// version loads unchanged, no temporary file is left, and the next save goes through.
void expect_failed_save_kept(const Writer& w, const std::string& path, const std::function<void()>& save_large,
                             const std::string& why) {
  const std::string before = wick::test::read_bytes(path);
  wick::test::expect_error<ValueError>(save_large, w.op, {path, why, "was not changed"});
  EXPECT_EQ(wick::test::read_bytes(path), before);
  EXPECT_EQ(w.read(path), 1);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

// ---- the file-size limit

TEST(SaveFaults, DISABLED_FileSizeLimitChild) {
  const Writer& w = writer_named(std::getenv("WICK_TEST_WRITER"));
  const std::string path = std::getenv("WICK_TEST_PATH");
  w.write(path, 1, false);
  ASSERT_EQ(w.read(path), 1);
  std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  rlimit low{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &low), 0);
  low.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &low), 0);
  expect_failed_save_kept(w, path, [&] { w.write(path, 2, true); }, std::strerror(EFBIG));
}

TEST(SaveFaults, FileSizeLimitKeepsThePreviousFile) {
  for (const Writer& w : writers()) {
    if (!have_tokenizer(w.name)) continue;
    SCOPED_TRACE(w.name);
    const std::string path = dir_for("fsize", w.name) + "/file";
    EXPECT_EQ(run_child("FileSizeLimitChild", {{"WICK_TEST_WRITER", w.name}, {"WICK_TEST_PATH", path}}), 0);
    EXPECT_EQ(w.read(path), 1);
    fs::remove_all(fs::path(path).parent_path());
  }
}

// ---- a full disk

// In the child, before exec: a user and mount namespace of its own with a 1 MiB tmpfs on dir.
int mount_small_tmpfs(const std::string& dir) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return 77;
  auto put = [](const char* file, const std::string& text) {
    const int fd = ::open(file, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
    ::close(fd);
    return ok;
  };
  // Files created in the new namespace keep this user's ids (setgroups must be denied first).
  put("/proc/self/setgroups", "deny");
  if (!put("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n")) return 78;
  if (!put("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n")) return 78;
  if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 79;
  if (::mount("wick_full", dir.c_str(), "tmpfs", 0, "size=1m") != 0) return 80;
  return 0;
}

// Fills the file system holding dir to its last byte with dir/filler.
void fill(const std::string& dir) {
  const int fd = ::open((dir + "/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  std::vector<char> block(4096, 'x');
  for (size_t n = block.size(); n > 0;) {
    const ssize_t w = ::write(fd, block.data(), n);
    if (w < 0 && errno == ENOSPC) {
      if (n == 1) break;
      n /= 2;  // the last partial block
    } else {
      ASSERT_GT(w, 0) << std::strerror(errno);
    }
  }
  ::close(fd);
}

TEST(SaveFaults, DISABLED_FullDiskChild) {
  const Writer& w = writer_named(std::getenv("WICK_TEST_WRITER"));
  const std::string dir = std::getenv("WICK_TEST_DIR"), path = dir + "/file";
  w.write(path, 1, false);
  ASSERT_EQ(w.read(path), 1);
  fill(dir);
  // Large or small, the new version finds no room.
  expect_failed_save_kept(w, path, [&] { w.write(path, 2, false); }, std::strerror(ENOSPC));
  expect_failed_save_kept(w, path, [&] { w.write(path, 2, true); }, std::strerror(ENOSPC));
  // Room again: the next save goes through.
  fs::remove(dir + "/filler");
  w.write(path, 3, false);
  EXPECT_EQ(w.read(path), read_as(w, 3));
}

TEST(SaveFaults, FullDiskKeepsThePreviousFile) {
  for (const Writer& w : writers()) {
    if (!have_tokenizer(w.name)) continue;
    SCOPED_TRACE(w.name);
    const std::string dir = dir_for("full", w.name);
    const int rc = run_child("FullDiskChild", {{"WICK_TEST_WRITER", w.name}, {"WICK_TEST_DIR", dir}},
                             [&] { return mount_small_tmpfs(dir); });
    if (rc >= 77 && rc <= 80)
      GTEST_SKIP() << "no private tmpfs (step " << rc - 77
                   << " of unshare/id maps/mount failed): unprivileged user namespaces are off here";
    EXPECT_EQ(rc, 0);
    // The tmpfs was the child's alone: nothing was written to the folder here.
    EXPECT_TRUE(fs::is_empty(dir));
    fs::remove_all(dir);
  }
}

// ---- the process killed in the middle

// Saves versions 1, 2, 3, ... (large) to the path until it is killed.
TEST(SaveFaults, DISABLED_WriterLoopChild) {
  const Writer& w = writer_named(std::getenv("WICK_TEST_WRITER"));
  const std::string path = std::getenv("WICK_TEST_PATH");
  for (int64_t k = 1;; ++k) w.write(path, k, true);
}

TEST(SaveFaults, KilledWhileSavingKeepsAWholeFile) {
  for (const Writer& w : writers()) {
    if (!have_tokenizer(w.name)) continue;
    SCOPED_TRACE(w.name);
    const std::string dir = dir_for("killed", w.name), path = dir + "/file", tmp = path + ".tmp";
    for (int delay_us : {0, 1500, 6000}) {
      pid_t pid = -1;
      ASSERT_EQ(run_child("WriterLoopChild", {{"WICK_TEST_WRITER", w.name}, {"WICK_TEST_PATH", path}}, {}, &pid), 0);
      ASSERT_GT(pid, 0);
      // Once a whole file is there, kill the writer as soon as (after delay_us) it is in the
      // middle of the next one: its temporary file exists.
      for (int i = 0; i < 20000 && !fs::exists(path); ++i) ::usleep(500);
      for (int i = 0; i < 200000 && !fs::exists(tmp); ++i) ::usleep(10);
      ::usleep(useconds_t(delay_us));
      ::kill(pid, SIGKILL);
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the writer ended on its own: " << status;
      ASSERT_TRUE(fs::exists(path)) << "no whole file within 10 s";
      EXPECT_GE(w.read(path), 1) << "after " << delay_us << " us";
    }
    // A temporary file the killed writer left does not stop the next save, which removes it.
    w.write(path, 7, false);
    EXPECT_EQ(w.read(path), read_as(w, 7));
    EXPECT_FALSE(fs::exists(tmp));
    fs::remove_all(dir);
  }
}

// ---- two saves of one path at once (two threads, as every rank of a job saving one file)

TEST(SaveFaults, ConcurrentSavesOfOnePathNeverTear) {
  const std::string path = dir_for("concurrent", "checkpoint") + "/file";
  const Writer& w = writer_named("checkpoint");
  Checkpoint versions[2];
  for (int v = 0; v < 2; ++v) {
    versions[v].tensors["model.w"] = full({int64_t(1) << 20}, double(v + 1));
    versions[v].metadata["run.step"] = std::to_string(v + 1);
  }
  save_checkpoint(versions[0], path);
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int v = 0; v < 2; ++v)
    threads.emplace_back([&, v] {
      for (int i = 0; i < 12; ++i) {
        try {
          save_checkpoint(versions[v], path);
        } catch (const Error&) {
          failed = true;
        }
      }
    });
  // Every file a reader sees meanwhile is one whole save.
  for (int i = 0; i < 12; ++i) {
    const int64_t k = w.read(path);
    EXPECT_TRUE(k == 1 || k == 2) << k;
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(failed);
  const int64_t k = w.read(path);
  EXPECT_TRUE(k == 1 || k == 2) << k;
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

// A symbolic link at the temporary name is never followed: the file it points at stays as it
// was (opening it for writing would have truncated it), and the save goes through.
TEST(SaveFaults, LinkAtTheTemporaryNameIsNotFollowed) {
  const std::string dir = dir_for("link", "tensor"), path = dir + "/file", victim = dir + "/victim";
  { std::ofstream(victim) << "keep me"; }
  fs::create_symlink(victim, path + ".tmp");
  save(full({3}, 5.0), path);
  EXPECT_EQ(wick::test::read_bytes(victim), "keep me");
  EXPECT_EQ(writer_named("tensor").read(path), 5);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  // A folder at the temporary name is refused, naming both.
  fs::remove(path);
  fs::create_directory(path + ".tmp");
  wick::test::expect_error<ValueError>([&] { save(full({3}, 5.0), path); }, "save",
                                       {path + ".tmp", std::strerror(EISDIR)});
  EXPECT_FALSE(fs::exists(path));
  fs::remove_all(dir);
}

}  // namespace
