// Tokenizer: SentencePiece's BPE trainer and processor behind a small class. Built only with
// WICK_HAVE_SENTENCEPIECE (cmake/WickDependencies.cmake); without it every call throws
// NotImplementedError.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/atomic_file.h"
#include "wick/error.h"
#include "wick/text.h"

#ifdef WICK_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#endif

namespace wick::text {

#ifdef WICK_HAVE_SENTENCEPIECE

struct Tokenizer::Impl {
  sentencepiece::SentencePieceProcessor sp;
};

namespace {

// The lines of a text, for the trainer (empty lines skipped: they hold nothing to learn).
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(std::string_view text) : text_(text) { advance(); }
  bool done() const override { return done_; }
  void Next() override { advance(); }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void advance() {
    while (pos_ < text_.size()) {
      size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      line_.assign(text_.substr(pos_, end - pos_));
      pos_ = end + 1;
      if (!line_.empty() && line_.back() == '\r') line_.pop_back();
      if (!line_.empty()) return;
    }
    done_ = true;
  }
  std::string_view text_;
  size_t pos_ = 0;
  std::string line_;
  bool done_ = false;
};

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::train(std::string_view text, const TokenizerOptions& options) {
  constexpr const char* op = "Tokenizer.train";
  WICK_CHECK(text.find_first_not_of("\r\n") != std::string_view::npos, ValueError, op,
             "the training text is empty");
  WICK_CHECK(options.vocab_size > 0 && options.vocab_size <= (int64_t(1) << 31) - 1, ValueError, op,
             "vocab_size must be positive, got ", options.vocab_size);
  WICK_CHECK(options.max_lines >= 0, ValueError, op, "max_lines must be non-negative, got ", options.max_lines);
  WICK_CHECK(options.num_threads > 0, ValueError, op, "num_threads must be positive, got ", options.num_threads);
  // Identity normalization and whitespace kept as it is, byte fallback: decode(encode(s)) == s.
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"character_coverage", "1.0"},
      {"byte_fallback", "true"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"split_digits", "true"},
      {"unk_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
      {"pad_id", "3"},
      {"input_sentence_size", std::to_string(options.max_lines)},
      {"shuffle_input_sentence", "true"},
      {"num_threads", std::to_string(options.num_threads)},
      {"minloglevel", "2"},
  };
  sentencepiece::SetRandomGeneratorSeed(1);
  LineIterator lines(text);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &model);
  WICK_CHECK(status.ok(), ValueError, op, "SentencePiece could not train a vocabulary of ", options.vocab_size,
             " pieces: ", status.ToString());
  auto impl = std::make_unique<Impl>();
  const auto loaded = impl->sp.LoadFromSerializedProto(model);
  WICK_CHECK(loaded.ok(), ValueError, op, "the trained model does not load: ", loaded.ToString());
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::load(const std::string& path) {
  constexpr const char* op = "Tokenizer.load";
  // Read here rather than by SentencePiece's own reader, which throws a stream exception for a
  // folder and says nothing of the path.
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  WICK_CHECK(std::filesystem::exists(st), ValueError, op, "cannot load a SentencePiece model from '", path,
             "': no such file");
  WICK_CHECK(std::filesystem::is_regular_file(st), ValueError, op, "cannot load a SentencePiece model from '", path,
             "': not a regular file");
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  WICK_CHECK(in.good() || in.eof(), ValueError, op, "cannot read '", path, "'");
  WICK_CHECK(!bytes.empty(), ValueError, op, "cannot load a SentencePiece model from '", path, "': the file is empty");
  auto impl = std::make_unique<Impl>();
  sentencepiece::util::Status status;
  try {
    status = impl->sp.LoadFromSerializedProto(bytes);
  } catch (const std::exception& e) {
    detail::raise<ValueError>(op, "cannot load a SentencePiece model from '", path, "': ", e.what());
  }
  WICK_CHECK(status.ok(), ValueError, op, "cannot load a SentencePiece model from '", path, "': ", status.ToString());
  return Tokenizer(std::move(impl));
}

void Tokenizer::save(const std::string& path) const {
  const std::string bytes = impl_->sp.serialized_model_proto();
  detail::AtomicFile out(path, "Tokenizer.save");
  out.write(bytes.data(), bytes.size());
  out.commit();
}

std::vector<int64_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto status = impl_->sp.Encode(text, &ids);
  WICK_CHECK(status.ok(), ValueError, "Tokenizer.encode", status.ToString());
  return std::vector<int64_t>(ids.begin(), ids.end());
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
  const int64_t n = vocab_size();
  std::vector<int> v;
  v.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    WICK_CHECK(ids[i] >= 0 && ids[i] < n, ValueError, "Tokenizer.decode", "id ", ids[i], " at position ", i,
               " is outside the vocabulary [0, ", n, ")");
    v.push_back(int(ids[i]));
  }
  std::string out;
  const auto status = impl_->sp.Decode(v, &out);
  WICK_CHECK(status.ok(), ValueError, "Tokenizer.decode", status.ToString());
  return out;
}

int64_t Tokenizer::vocab_size() const { return impl_->sp.GetPieceSize(); }
int64_t Tokenizer::unk_id() const { return impl_->sp.unk_id(); }
int64_t Tokenizer::bos_id() const { return impl_->sp.bos_id(); }
int64_t Tokenizer::eos_id() const { return impl_->sp.eos_id(); }
int64_t Tokenizer::pad_id() const { return impl_->sp.pad_id(); }

#else  // !WICK_HAVE_SENTENCEPIECE

struct Tokenizer::Impl {};

namespace {
[[noreturn]] void no_sentencepiece(const char* op) {
  detail::raise<NotImplementedError>(op, "wick was built without SentencePiece (apt-get install "
                                         "libsentencepiece-dev and rebuild; scripts/setup.sh installs it)");
}
}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;
Tokenizer Tokenizer::train(std::string_view, const TokenizerOptions&) { no_sentencepiece("Tokenizer.train"); }
Tokenizer Tokenizer::load(const std::string&) { no_sentencepiece("Tokenizer.load"); }
void Tokenizer::save(const std::string&) const { no_sentencepiece("Tokenizer.save"); }
std::vector<int64_t> Tokenizer::encode(std::string_view) const { no_sentencepiece("Tokenizer.encode"); }
std::string Tokenizer::decode(const std::vector<int64_t>&) const { no_sentencepiece("Tokenizer.decode"); }
int64_t Tokenizer::vocab_size() const { no_sentencepiece("Tokenizer.vocab_size"); }
int64_t Tokenizer::unk_id() const { no_sentencepiece("Tokenizer.unk_id"); }
int64_t Tokenizer::bos_id() const { no_sentencepiece("Tokenizer.bos_id"); }
int64_t Tokenizer::eos_id() const { no_sentencepiece("Tokenizer.eos_id"); }
int64_t Tokenizer::pad_id() const { no_sentencepiece("Tokenizer.pad_id"); }

#endif

}  // namespace wick::text
