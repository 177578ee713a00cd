// Text for language models: a corpus, a SentencePiece BPE tokenizer, token shards on disk read
// back memory-mapped, and a dataset of fixed-length windows of them for wick's DataLoader.
//
//   std::string text = wick::text::bible_kjv();                      // Debian's bible-kjv
//   auto tok = wick::text::Tokenizer::train(text, {.vocab_size = 4096});
//   tok.save("ckpt/tokenizer.model");
//   wick::text::write_shard("ckpt/train.tokens", tok.encode(text), tok.vocab_size());
//   wick::text::TokenWindows windows({"ckpt/train.tokens"}, /*T=*/256);
//   wick::data::DataLoader loader(windows, {.batch_size = 32, .shuffle = true});
//   for (auto& batch : loader) { ... }  // batch.data, batch.target: int64 [32, 256]
//
// The tokenizer needs SentencePiece (libsentencepiece-dev); a wick built without it throws
// NotImplementedError from every Tokenizer call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "wick/data/dataset.h"

namespace wick::text {

// ---- corpus

// The text of the King James Bible (Debian's bible-kjv, read by running its `bible` program),
// one verse a line without its reference. `verses` is a range in the program's notation
// ("gen1:1-rev22:21", the whole book, or "jn3:1-jn3:36"). ValueError "[bible_kjv] ..." when
// the program or its data is missing, or the range gives no text.
std::string bible_kjv(const std::string& verses = "gen1:1-rev22:21");

// The files' contents, one after another (a newline is put between two files when the first
// does not end with one). ValueError "[read_corpus] ..." naming a file that cannot be read,
// or when there are no files or no text at all.
std::string read_corpus(const std::vector<std::string>& files);

// ---- tokenizer

struct TokenizerOptions {
  // Pieces in the vocabulary, the special and byte pieces included (at least 300 or so: every
  // byte has a piece, so any text encodes and decodes back exactly).
  int64_t vocab_size = 8000;
  // Training reads at most this many lines of the text (0: all), chosen by SentencePiece with
  // a fixed seed.
  int64_t max_lines = 0;
  int num_threads = 2;
};

// A SentencePiece BPE model: trained on text, saved as SentencePiece's model file (which the
// `spm_encode` tool and Python's sentencepiece read), loaded back. Normalization is the
// identity and every byte has a piece, so decode(encode(s)) == s for any UTF-8 s.
// Ids: unk 0, bos 1, eos 2, pad 3, then the bytes and the merged pieces.
class Tokenizer {
 public:
  // Trains on the lines of text. ValueError "[Tokenizer.train] ..." for an empty text or
  // options SentencePiece refuses (its reason included).
  static Tokenizer train(std::string_view text, const TokenizerOptions& options = {});
  // Reads a model written by save (or by SentencePiece). ValueError "[Tokenizer.load] ..."
  // naming the file when it is missing or not a model.
  static Tokenizer load(const std::string& path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Writes the model (beside the checkpoints), through a temporary file renamed over path.
  void save(const std::string& path) const;
  std::vector<int64_t> encode(std::string_view text) const;
  // ValueError "[Tokenizer.decode] ..." for an id outside [0, vocab_size).
  std::string decode(const std::vector<int64_t>& ids) const;
  int64_t vocab_size() const;
  int64_t unk_id() const;
  int64_t bos_id() const;
  int64_t eos_id() const;
  int64_t pad_id() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---- token shards
//
// A shard file: a 32-byte little-endian header (8 bytes magic "WICKTOK\0", uint32 version 1,
// uint32 bytes per token, 2 or 4; uint64 vocabulary size; uint64 token count), then the
// tokens: uint16 when the vocabulary has at most 65536 ids, else uint32.

// Writes tokens as a shard, through a temporary file that is flushed, synced and renamed over
// path. ValueError "[write_shard] ..." for a token outside [0, vocab_size) (naming its
// position) or a vocab_size outside [1, 2^32]; the file is then not touched.
void write_shard(const std::string& path, const std::vector<int64_t>& tokens, int64_t vocab_size);

// A shard mapped read-only. Opening checks the magic, the version, the token width against
// the vocabulary, the file's length against the count, and every token against the
// vocabulary: ValueError "[TokenShard] '<path>': ..." otherwise.
class TokenShard {
 public:
  explicit TokenShard(const std::string& path);
  ~TokenShard();
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;

  const std::string& path() const { return path_; }
  int64_t size() const { return count_; }
  int64_t vocab_size() const { return vocab_; }
  // Bytes per token: 2 (uint16) or 4 (uint32).
  int token_bytes() const { return width_; }
  int64_t operator[](int64_t i) const;
  // Tokens [begin, begin + n) as int64 into out (0 <= begin, begin + n <= size()).
  void read(int64_t begin, int64_t n, int64_t* out) const;
  // Every token, as an int64 tensor.
  Tensor tokens() const;

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const unsigned char* data_ = nullptr;
  int64_t count_ = 0, vocab_ = 0;
  int width_ = 2;
};

// ---- windows dataset

// Windows of T + 1 consecutive tokens of the shards, starting every `stride` tokens
// (stride T by default) and never crossing from one shard into the next. Example i is
// {x, y}: x the window's first T tokens, y its last T (x shifted by one), int64 [T]; batches
// from a DataLoader are [B, T]. Copies share the mapped shards.
class TokenWindows : public data::Dataset {
 public:
  // ValueError "[TokenWindows] ..." for T or stride below 1, no shards, shards of different
  // vocabularies, or no shard holding T + 1 tokens; a bad shard raises TokenShard's error.
  TokenWindows(const std::vector<std::string>& shard_paths, int64_t T, int64_t stride = 0);
  TokenWindows(std::vector<std::shared_ptr<const TokenShard>> shards, int64_t T, int64_t stride = 0);

  int64_t size() const override { return total_; }
  data::Example<> get(int64_t index) const override;
  data::Example<> get_batch(const std::vector<int64_t>& indices) const override;
  int64_t window() const { return T_; }
  int64_t stride() const { return stride_; }
  int64_t vocab_size() const { return shards_.front()->vocab_size(); }
  const std::vector<std::shared_ptr<const TokenShard>>& shards() const { return shards_; }

 private:
  // The shard and token offset of window index (0 <= index < size()).
  std::pair<const TokenShard*, int64_t> locate(int64_t index, const char* op) const;

  std::vector<std::shared_ptr<const TokenShard>> shards_;
  std::vector<int64_t> first_;  // window index of each shard's first window; then the total
  int64_t T_ = 0, stride_ = 0, total_ = 0;
};

}  // namespace wick::text
