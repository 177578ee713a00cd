// wick::text: the Bible corpus, SentencePiece BPE training and round trips, token shards
// written and read back (and every way a shard can be bad), the windows dataset and its
// batches through the DataLoader and a DistributedSampler over two ranks.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "../test_files.h"
#include "wick/wick.h"

using namespace wick;
using namespace wick::text;
namespace fs = std::filesystem;

namespace {

std::string temp_path(const std::string& name) { return wick::test::temp_path("wick_text_test", name); }
using wick::test::read_bytes;

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

using wick::test::expect_error;

// The first chapters of Genesis, shared by the tokenizer tests (the program runs once).
const std::string& genesis() {
  static const std::string text = bible_kjv("gen1:1-gen11:32");
  return text;
}

// A tokenizer trained once on genesis(); skips the test when wick has no SentencePiece.
const Tokenizer* tokenizer() {
  static std::unique_ptr<Tokenizer> tok;
  static bool tried = false;
  if (!tried) {
    tried = true;
    try {
      tok = std::make_unique<Tokenizer>(Tokenizer::train(genesis(), {.vocab_size = 500}));
    } catch (const NotImplementedError&) {
    }
  }
  return tok.get();
}

#define NEED_TOKENIZER()                                                        \
  const Tokenizer* tok = tokenizer();                                           \
  if (!tok) GTEST_SKIP() << "wick was built without SentencePiece";

// Same shape and the same int64 values.
bool same(const Tensor& a, const Tensor& b) {
  return a.sizes().equals(b.sizes()) && a.contiguous().to_vector<int64_t>() == b.contiguous().to_vector<int64_t>();
}

// ---- corpus

TEST(TextCorpus, BibleVersesWithoutReferences) {
  const std::string t = bible_kjv("gen1:1-gen1:3");
  EXPECT_EQ(t,
            "In the beginning God created the heaven and the earth.\n"
            "And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit "
            "of God moved upon the face of the waters.\n"
            "And God said, Let there be light: and there was light.\n");
  const std::string last = bible_kjv("rev22:21");
  EXPECT_EQ(last, "The grace of our Lord Jesus Christ be with you all. Amen.\n");
  // Genesis 1 to 11: 31+25+24+26+32+22+24+22+29+32+32 verses.
  const std::string g = genesis();
  EXPECT_EQ(std::count(g.begin(), g.end(), '\n'), 299);
}

TEST(TextCorpus, WholeBible) {
  const std::string t = bible_kjv();
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 31102);  // the verses of the KJV
  EXPECT_EQ(t.rfind("The grace of our Lord Jesus Christ be with you all. Amen.\n"), t.size() - 58);
}

TEST(TextCorpus, BadVerseRange) {
  expect_error<ValueError>([] { bible_kjv("xyzzy1:1"); }, "bible_kjv", {"xyzzy1:1", "no text"});
  expect_error<ValueError>([] { bible_kjv(""); }, "bible_kjv");
}

TEST(TextCorpus, Files) {
  const std::string a = temp_path("a.txt"), b = temp_path("b.txt"), empty = temp_path("empty.txt");
  write_bytes(a, "first");
  write_bytes(b, "second\n");
  write_bytes(empty, "");
  EXPECT_EQ(read_corpus({a, b}), "first\nsecond\n");
  EXPECT_EQ(read_corpus({b, empty, a}), "second\nfirst");
  expect_error<ValueError>([&] { read_corpus({a, temp_path("missing.txt")}); }, "read_corpus",
                           {"missing.txt", "does not exist"});
  expect_error<ValueError>([&] { read_corpus({empty}); }, "read_corpus", {"empty", "empty.txt"});
  expect_error<ValueError>([&] { read_corpus({}); }, "read_corpus");
  expect_error<ValueError>([&] { read_corpus({fs::temp_directory_path().string()}); }, "read_corpus",
                           {"not a regular file"});
  EXPECT_EQ(read_bytes(a), "first");
  EXPECT_EQ(read_bytes(empty), "");
}

// ---- tokenizer

TEST(TextTokenizer, TrainsBpeAndRoundTrips) {
  NEED_TOKENIZER();
  EXPECT_EQ(tok->vocab_size(), 500);
  EXPECT_EQ(tok->unk_id(), 0);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->pad_id(), 3);
  const std::string& text = genesis();
  const auto ids = tok->encode(text);
  for (int64_t id : ids) ASSERT_TRUE(id >= 0 && id < 500) << id;
  EXPECT_EQ(tok->decode(ids), text);
  // Merges happened: under one token per two bytes of English.
  EXPECT_LT(ids.size() * 2, text.size());
  // Anything decodes back exactly: bytes never seen in training, runs of spaces, tabs.
  for (const std::string s : {"Zebra\xe2\x84\xa2 \xe4\xbd\xa0\xe5\xa5\xbd", "  two  spaces\tand a tab\n\nx ", "",
                              "1234567890", "\x01\x7f"}) {
    EXPECT_EQ(tok->decode(tok->encode(s)), s) << s;
  }
  // A frequent word is one piece.
  EXPECT_EQ(tok->encode("God").size(), 1u);
}

TEST(TextTokenizer, SaveLoad) {
  NEED_TOKENIZER();
  const std::string path = temp_path("tok.model");
  tok->save(path);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  Tokenizer back = Tokenizer::load(path);
  EXPECT_EQ(back.vocab_size(), tok->vocab_size());
  const std::string s = "And God saw the light, that it was good.";
  EXPECT_EQ(back.encode(s), tok->encode(s));
  EXPECT_EQ(back.decode(back.encode(s)), s);
}

TEST(TextTokenizer, BadInput) {
  NEED_TOKENIZER();
  expect_error<ValueError>([] { Tokenizer::train(""); }, "Tokenizer.train", {"empty"});
  expect_error<ValueError>([] { Tokenizer::train("\n\n"); }, "Tokenizer.train", {"empty"});
  expect_error<ValueError>([] { Tokenizer::train(genesis(), {.vocab_size = 0}); }, "Tokenizer.train");
  expect_error<ValueError>([] { Tokenizer::train(genesis(), {.vocab_size = 40}); }, "Tokenizer.train",
                           {"SentencePiece"});
  expect_error<ValueError>([] { Tokenizer::load(temp_path("no_such.model")); }, "Tokenizer.load",
                           {"no_such.model"});
  const std::string junk = temp_path("junk.model");
  write_bytes(junk, "this is not a model");
  expect_error<ValueError>([&] { Tokenizer::load(junk); }, "Tokenizer.load", {"junk.model"});
  EXPECT_EQ(read_bytes(junk), "this is not a model");
  expect_error<ValueError>([&] { tok->decode({5, 500}); }, "Tokenizer.decode", {"500", "position 1"});
  expect_error<ValueError>([&] { tok->decode({-1}); }, "Tokenizer.decode", {"-1"});
  expect_error<ValueError>([&] { tok->save(temp_path("no_dir/tok.model")); }, "Tokenizer.save", {"no_dir"});
}

// ---- shards

std::vector<int64_t> ramp(int64_t n, int64_t vocab) {
  std::vector<int64_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[size_t(i)] = (i * 7919) % vocab;
  return t;
}

TEST(TextShard, RoundTripUint16AndUint32) {
  for (int64_t vocab : {int64_t(500), int64_t(65536), int64_t(65537), int64_t(1) << 32}) {
    const std::string path = temp_path("rt.tokens");
    std::vector<int64_t> tokens = ramp(1000, std::min<int64_t>(vocab, 1 << 20));
    tokens.push_back(vocab - 1);
    write_shard(path, tokens, vocab);
    const int width = vocab <= 65536 ? 2 : 4;
    EXPECT_EQ(fs::file_size(path), 32u + tokens.size() * width);
    EXPECT_FALSE(fs::exists(path + ".tmp"));
    TokenShard s(path);
    EXPECT_EQ(s.size(), int64_t(tokens.size()));
    EXPECT_EQ(s.vocab_size(), vocab);
    EXPECT_EQ(s.token_bytes(), width);
    EXPECT_EQ(s.path(), path);
    EXPECT_EQ(s[5], tokens[5]);
    EXPECT_EQ(s[int64_t(tokens.size()) - 1], vocab - 1);
    EXPECT_EQ(s.tokens().to_vector<int64_t>(), tokens);
    std::vector<int64_t> part(10);
    s.read(990, 10, part.data());
    EXPECT_EQ(part, std::vector<int64_t>(tokens.begin() + 990, tokens.begin() + 1000));
    EXPECT_THROW(s[int64_t(tokens.size())], IndexError);
    EXPECT_THROW(s.read(995, 7, part.data()), IndexError);
  }
  // An empty shard is a valid shard.
  write_shard(temp_path("empty.tokens"), {}, 10);
  EXPECT_EQ(TokenShard(temp_path("empty.tokens")).size(), 0);
}

TEST(TextShard, WriteRefusesBadTokens) {
  const std::string path = temp_path("keep.tokens");
  write_shard(path, {1, 2, 3}, 10);
  const std::string before = read_bytes(path);
  expect_error<ValueError>([&] { write_shard(path, {1, 10, 3}, 10); }, "write_shard",
                           {"token 10 at position 1", "keep.tokens"});
  expect_error<ValueError>([&] { write_shard(path, {-1}, 10); }, "write_shard", {"-1"});
  expect_error<ValueError>([&] { write_shard(path, {0}, 0); }, "write_shard", {"vocab_size"});
  expect_error<ValueError>([&] { write_shard(path, {0}, (int64_t(1) << 32) + 1); }, "write_shard");
  expect_error<ValueError>([&] { write_shard(temp_path("no_dir/x.tokens"), {0}, 10); }, "write_shard",
                           {"no_dir"});
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(TextShard, ReadRefusesBadFiles) {
  const std::string good = temp_path("good.tokens");
  write_shard(good, {1, 2, 3, 4}, 500);
  const std::string bytes = read_bytes(good);
  ASSERT_EQ(bytes.size(), 40u);
  // Each corruption written to its own file, which must stay as it was.
  auto check = [&](const std::string& name, const std::string& content, const std::vector<std::string>& has) {
    const std::string path = temp_path(name);
    write_bytes(path, content);
    std::vector<std::string> h = has;
    h.push_back("'" + path + "'");
    expect_error<ValueError>([&] { TokenShard s(path); }, "TokenShard", h);
    EXPECT_EQ(read_bytes(path), content) << name;
  };
  std::string magic = bytes;
  magic[0] = 'X';
  check("magic.tokens", magic, {"wrong magic"});
  check("truncated.tokens", bytes.substr(0, 39), {"truncated"});
  check("extra.tokens", bytes + "xy", {"corrupt"});
  check("short.tokens", bytes.substr(0, 20), {"too short"});
  std::string version = bytes;
  version[8] = 2;
  check("version.tokens", version, {"version 2"});
  std::string width = bytes;
  width[12] = 4;
  check("width.tokens", width, {"4-byte tokens"});
  std::string vocab0 = bytes;
  for (int i = 16; i < 24; ++i) vocab0[i] = 0;
  check("vocab0.tokens", vocab0, {"vocabulary size 0"});
  std::string count = bytes;
  count[24] = 100;
  check("count.tokens", count, {"100 tokens", "truncated"});
  std::string oov = bytes;
  oov[32 + 4] = char(0xf4);  // token 2 becomes 500 (0x01f4)
  oov[32 + 5] = char(0x01);
  check("oov.tokens", oov, {"token 500 at position 2", "vocabulary of 500"});
  expect_error<ValueError>([&] { TokenShard s(temp_path("missing.tokens")); }, "TokenShard", {"missing.tokens"});
  expect_error<ValueError>([&] { TokenShard s(fs::temp_directory_path().string()); }, "TokenShard",
                           {"not a regular file"});
}

// ---- windows

// A shard of n tokens 0, 1, ..., n - 1 (vocabulary 1 << 20).
std::string counting_shard(const std::string& name, int64_t first, int64_t n) {
  const std::string path = temp_path(name);
  std::vector<int64_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[size_t(i)] = first + i;
  write_shard(path, t, 1 << 20);
  return path;
}

TEST(TextWindows, XIsYShiftedByOne) {
  const std::string a = counting_shard("w1.tokens", 0, 100);
  TokenWindows w({a}, 8);
  EXPECT_EQ(w.size(), (100 - 9) / 8 + 1);  // 12: the last starts at 88 and ends at 96
  EXPECT_EQ(w.window(), 8);
  EXPECT_EQ(w.stride(), 8);
  for (int64_t i = 0; i < w.size(); ++i) {
    auto [x, y] = w.get(i);
    ASSERT_EQ(x.sizes().vec(), std::vector<int64_t>{8});
    EXPECT_EQ(x.dtype(), kInt64);
    EXPECT_EQ(y.dtype(), kInt64);
    for (int64_t j = 0; j < 8; ++j) {
      EXPECT_EQ(x[j].item<int64_t>(), 8 * i + j);
      EXPECT_EQ(y[j].item<int64_t>(), 8 * i + j + 1);
    }
  }
  // Overlapping windows every 3 tokens; two shards, no window across them.
  const std::string b = counting_shard("w2.tokens", 1000, 20);
  TokenWindows o({a, b}, 8, 3);
  EXPECT_EQ(o.size(), (100 - 9) / 3 + 1 + (20 - 9) / 3 + 1);  // 31 + 4
  auto [x30, y30] = o.get(30);
  EXPECT_EQ(x30[0].item<int64_t>(), 90);
  EXPECT_EQ(y30[7].item<int64_t>(), 98);
  auto [x31, y31] = o.get(31);
  EXPECT_EQ(x31[0].item<int64_t>(), 1000);
  auto [x34, y34] = o.get(34);
  EXPECT_EQ(x34[0].item<int64_t>(), 1009);
  EXPECT_EQ(y34[7].item<int64_t>(), 1017);
  // A batch is the stacked windows.
  const auto batch = o.get_batch({34, 0, 31, 5});
  ASSERT_EQ(batch.data.sizes().vec(), (std::vector<int64_t>{4, 8}));
  ASSERT_EQ(batch.target.sizes().vec(), (std::vector<int64_t>{4, 8}));
  const std::vector<int64_t> idx{34, 0, 31, 5};
  for (int b = 0; b < 4; ++b) {
    auto [x, y] = o.get(idx[size_t(b)]);
    EXPECT_TRUE(same(batch.data[b], x));
    EXPECT_TRUE(same(batch.target[b], y));
  }
  // A shard too short for a window contributes none.
  const std::string tiny = counting_shard("tiny.tokens", 5000, 5);
  TokenWindows t({tiny, b, tiny}, 8);
  EXPECT_EQ(t.size(), 2);
  EXPECT_EQ(t.get(1).data[0].item<int64_t>(), 1008);
}

TEST(TextWindows, BadInput) {
  const std::string a = counting_shard("b1.tokens", 0, 30);
  expect_error<ValueError>([&] { TokenWindows w({a}, 0); }, "TokenWindows", {"T must be positive"});
  expect_error<ValueError>([&] { TokenWindows w({a}, 4, -1); }, "TokenWindows", {"stride"});
  expect_error<ValueError>([&] { TokenWindows w(std::vector<std::string>{}, 4); }, "TokenWindows");
  expect_error<ValueError>([&] { TokenWindows w({a}, 30); }, "TokenWindows", {"T + 1 tokens (T = 30)"});
  const std::string other = temp_path("other_vocab.tokens");
  write_shard(other, {1, 2, 3}, 50);
  expect_error<ValueError>([&] { TokenWindows w({a, other}, 2); }, "TokenWindows",
                           {"other_vocab.tokens", "vocabulary"});
  expect_error<ValueError>([&] { TokenWindows w({a, temp_path("nope.tokens")}, 2); }, "TokenShard",
                           {"nope.tokens"});
  TokenWindows w({a}, 4);
  expect_error<IndexError>([&] { w.get(w.size()); }, "TokenWindows.get");
  expect_error<IndexError>([&] { w.get_batch({0, -1}); }, "TokenWindows.get_batch");
}

// The first token of each batch row identifies its window (windows of counting shards).
std::vector<int64_t> firsts(data::DataLoader& loader, int64_t T, int64_t B, bool* shapes_ok) {
  std::vector<int64_t> out;
  for (auto& batch : loader) {
    const int64_t b = batch.data.size(0);
    *shapes_ok = *shapes_ok && batch.data.dim() == 2 && batch.data.size(1) == T && b <= B &&
                 batch.target.sizes().equals(batch.data.sizes()) && batch.data.dtype() == kInt64;
    *shapes_ok = *shapes_ok && same(batch.target.narrow(1, 0, T - 1), batch.data.narrow(1, 1, T - 1));
    for (int64_t r = 0; r < b; ++r) out.push_back(batch.data[r][0].item<int64_t>());
  }
  return out;
}

TEST(TextWindows, DataLoaderBatchesEveryWindowOnce) {
  const std::string a = counting_shard("dl1.tokens", 0, 801), b = counting_shard("dl2.tokens", 100000, 161);
  TokenWindows w({a, b}, 16);
  ASSERT_EQ(w.size(), 50 + 10);
  std::set<int64_t> want;
  for (int64_t i = 0; i < w.size(); ++i) want.insert(w.get(i).data[0].item<int64_t>());
  data::DataLoader loader(w, {.batch_size = 8, .shuffle = true, .num_workers = 2, .pin_memory = true, .seed = 7});
  bool ok = true;
  auto got = firsts(loader, 16, 8, &ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(got.size(), size_t(w.size()));
  EXPECT_EQ(std::set<int64_t>(got.begin(), got.end()), want);
  EXPECT_FALSE(std::is_sorted(got.begin(), got.end()));  // shuffled

  // Two ranks of a DistributedSampler: disjoint halves that together are every window.
  std::vector<int64_t> all;
  for (int rank = 0; rank < 2; ++rank) {
    auto sampler = std::make_shared<data::DistributedSampler>(
        w, data::DistributedSamplerOptions{.num_replicas = 2, .rank = rank, .seed = 3});
    sampler->set_epoch(1);
    data::DataLoader l(w, {.batch_size = 4, .sampler = sampler, .num_workers = 1});
    bool shapes = true;
    auto part = firsts(l, 16, 4, &shapes);
    EXPECT_TRUE(shapes);
    EXPECT_EQ(part.size(), 30u);
    all.insert(all.end(), part.begin(), part.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()), want);
}

// The whole path: text -> tokens -> shard -> windows, and the windows decode to the text.
TEST(TextWindows, BibleEndToEnd) {
  NEED_TOKENIZER();
  const std::string path = temp_path("genesis.tokens");
  const auto ids = tok->encode(genesis());
  write_shard(path, ids, tok->vocab_size());
  TokenWindows w({path}, 32);
  EXPECT_EQ(w.vocab_size(), 500);
  EXPECT_EQ(TokenShard(path).token_bytes(), 2);
  std::vector<int64_t> joined;
  for (int64_t i = 0; i < w.size(); ++i) {
    auto x = w.get(i).data.to_vector<int64_t>();
    joined.insert(joined.end(), x.begin(), x.end());
  }
  EXPECT_EQ(tok->decode(joined), tok->decode(std::vector<int64_t>(ids.begin(), ids.begin() + 32 * w.size())));
  EXPECT_EQ(genesis().rfind(tok->decode(joined), 0), 0u);
}

}  // namespace
