// safetensors: round trips of every dtype, the bytes on disk read back by hand (header length,
// JSON, alignment, offsets), a file written by hand read by wick, and malformed files.
#include "wick/io/safetensors.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "wick/wick.h"

namespace fs = std::filesystem;
using namespace wick;
using Json = nlohmann::json;

namespace {

std::string temp_file(const std::string& name) {
  auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return (fs::temp_directory_path() /
          ("wick_st_" + std::to_string(getpid()) + "_" + info->name() + "_" + name))
      .string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// A file from a header (padded to 8 bytes as the format asks) and data bytes.
std::string make_file(const std::string& header, const std::string& data) {
  std::string h = header;
  h.append((8 - h.size() % 8) % 8, ' ');
  uint64_t n = h.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return out + h + data;
}

template <class F>
std::string load_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool same(const Tensor& a, const Tensor& b) {
  return a.sizes().equals(b.sizes()) && eq(a, b).sum().item<int64_t>() == a.numel();
}

}  // namespace

TEST(Safetensors, RoundTripEveryDtype) {
  const std::string path = temp_file("a.safetensors");
  TensorMap in;
  const Dtype all[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
  for (Dtype t : all) {
    Tensor x = (randn({3, 5}) * 10).to(t);
    in[std::string(name(t))] = x;
  }
  in["scalar"] = full({}, 2.5);
  in["empty"] = empty({0, 4});
  in["transposed"] = arange(12, kFloat32).view({3, 4}).t();  // not contiguous
  save(in, path, {{"format", "pt"}, {"epoch", "3"}});

  TensorMap out = load(path);
  ASSERT_EQ(out.size(), in.size());
  for (auto& [k, x] : in) {
    ASSERT_TRUE(out.count(k)) << k;
    const Tensor& y = out.at(k);
    EXPECT_EQ(y.dtype(), x.dtype()) << k;
    EXPECT_EQ(y.sizes().vec(), x.sizes().vec()) << k;
    EXPECT_TRUE(y.is_contiguous());
    EXPECT_EQ(y.to_vector<double>(), x.to_vector<double>()) << k;
  }
  auto meta = load_metadata(path);
  EXPECT_EQ(meta, (std::map<std::string, std::string>{{"epoch", "3"}, {"format", "pt"}}));
  fs::remove(path);
}

TEST(Safetensors, BytesOnDisk) {
  const std::string path = temp_file("b.safetensors");
  Tensor w = tensor({{1.f, -2.f}, {3.5f, 4.f}});
  Tensor b = tensor({7, -1}, kInt16);
  Tensor d = tensor({0.1}, kFloat64);
  save(std::vector<std::pair<std::string, Tensor>>{{"w", w}, {"b", b}, {"d", d}}, path);

  std::string bytes = read_bytes(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | uint8_t(bytes[size_t(i)]);  // little-endian
  EXPECT_EQ((8 + n) % 8, 0u) << "data should start 8-byte aligned";
  Json h = Json::parse(bytes.substr(8, n));
  EXPECT_FALSE(h.contains("__metadata__"));
  const std::string data = bytes.substr(8 + n);
  EXPECT_EQ(data.size(), 16u + 4u + 8u);

  auto check = [&](const char* key, const char* dtype, std::vector<int64_t> shape, const Tensor& t) {
    ASSERT_TRUE(h.contains(key)) << key;
    EXPECT_EQ(h[key]["dtype"], dtype);
    EXPECT_EQ(h[key]["shape"].get<std::vector<int64_t>>(), shape);
    auto off = h[key]["data_offsets"].get<std::vector<uint64_t>>();
    ASSERT_EQ(off.size(), 2u);
    ASSERT_EQ(off[1] - off[0], uint64_t(t.nbytes()));
    EXPECT_EQ(off[0] % uint64_t(t.element_size()), 0u) << key << " is not aligned";
    EXPECT_EQ(std::memcmp(data.data() + off[0], t.data_ptr(), size_t(t.nbytes())), 0) << key;
  };
  check("w", "F32", {2, 2}, w);
  check("b", "I16", {2}, b);
  check("d", "F64", {1}, d);
  fs::remove(path);
}

TEST(Safetensors, ReadsAHandWrittenFile) {
  const std::string path = temp_file("c.safetensors");
  // Two tensors given in the opposite order of their data; values as raw little-endian bytes.
  std::string data;
  const int32_t ints[] = {1, -5, 1000};
  const float floats[] = {0.5f, -8.0f};
  data.append(reinterpret_cast<const char*>(floats), sizeof floats);
  data.append(reinterpret_cast<const char*>(ints), sizeof ints);
  write_bytes(path, make_file(R"({"ints":{"dtype":"I32","shape":[3],"data_offsets":[8,20]},)"
                              R"("__metadata__":{"note":"hand"},)"
                              R"("f":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]}})",
                              data));
  TensorMap m = load(path);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m["ints"].dtype(), kInt32);
  EXPECT_EQ(m["ints"].to_vector<int64_t>(), (std::vector<int64_t>{1, -5, 1000}));
  EXPECT_EQ(m["f"].sizes().vec(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(m["f"].to_vector<float>(), (std::vector<float>{0.5f, -8.0f}));
  EXPECT_EQ(load_metadata(path).at("note"), "hand");
  fs::remove(path);
}

TEST(Safetensors, MalformedFiles) {
  const std::string path = temp_file("bad.safetensors");
  const std::string eight(8, 'x');
  auto error_for = [&](const std::string& bytes) {
    write_bytes(path, bytes);
    return load_error([&] { load(path); });
  };
  EXPECT_NE(load_error([&] { load(temp_file("missing")); }).find("[load] cannot open"), std::string::npos);
  EXPECT_NE(error_for("abc").find("too short"), std::string::npos);
  std::string huge(8, '\xff');
  EXPECT_NE(error_for(huge + "{}").find("header length"), std::string::npos);
  EXPECT_NE(error_for(make_file("{not json", "")).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_for(make_file("[1,2]", "")).find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_for(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234"))
                .find("data_offsets outside"),
            std::string::npos);
  EXPECT_NE(error_for(make_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight))
                .find("needs 12 bytes"),
            std::string::npos);
  EXPECT_NE(error_for(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight))
                .find("does not start where the previous tensor ends"),
            std::string::npos);
  EXPECT_NE(error_for(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", eight))
                .find("4 bytes after the last tensor"),
            std::string::npos);
  EXPECT_NE(error_for(make_file(R"({"a":{"dtype":"F32","shape":[2]}})", eight)).find("has no data_offsets"),
            std::string::npos);
  {
    write_bytes(path, make_file(R"({"a":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", eight));
    try {
      load(path);
      ADD_FAILURE() << "F8_E4M3 loaded";
    } catch (const TypeError& e) {
      EXPECT_NE(std::string(e.what()).find("dtype 'F8_E4M3'"), std::string::npos);
    }
  }
  EXPECT_THROW(save(TensorMap{{"__metadata__", zeros({1})}}, path), ValueError);
  fs::remove(path);
}

// Crafted headers: each must give a ValueError (or TypeError for a dtype) starting with
// "[load] ", never a foreign exception, a huge allocation or a read past the file.
TEST(Safetensors, CraftedFiles) {
  const std::string path = temp_file("crafted.safetensors");
  const std::string four(4, '\0');
  struct Case {
    std::string bytes, expect;
  };
  const std::string f32 = R"("dtype":"F32")";
  const std::vector<Case> cases = {
      {"", "too short for the header length"},
      {std::string("\x10\0\0\0\0\0\0\0", 8) + "{}", "header length 16 is beyond the end of the file"},
      {make_file("\"text\"", ""), "not a JSON object"},
      {make_file(R"({"a":3})", four), "is not a JSON object with dtype"},
      {make_file(R"({"a":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", four), "no dtype string"},
      {make_file(R"({"a":{)" + f32 + R"(,"data_offsets":[0,4]}})", four), "has no shape"},
      {make_file(R"({"a":{)" + f32 + R"(,"shape":[1]}})", four), "has no data_offsets"},
      {make_file(R"({"a":{)" + f32 + R"(,"shape":"1","data_offsets":[0,4]}})", four),
       "shape is not an array"},
      {make_file(R"({"a":{)" + f32 + R"(,"shape":[1.0],"data_offsets":[0,4]}})", four),
       "shape holds 1.0, not a non-negative integer"},
      {make_file(R"({"a":{)" + f32 + R"(,"shape":[-1],"data_offsets":[0,4]}})", four),
       "shape holds -1, not a non-negative integer"},
      {make_file(R"({"a":{)" + f32 + R"(,"shape":[1],"data_offsets":[-4,0]}})", four),
       "data_offsets holds -4, not a non-negative integer"},
      {make_file(R"({"a":{)" + f32 + R"(,"shape":[1],"data_offsets":[0,4,4]}})", four),
       "two increasing offsets"},
      {make_file(R"({"a":{)" + f32 + R"(,"shape":[1],"data_offsets":[4,0]}})", four),
       "two increasing offsets"},
      {make_file(R"({"a":{)" + f32 + R"(,"shape":[1],"data_offsets":[0,18446744073709551615]}})", four),
       "outside the 4 bytes of data"},
      // 2^32 * 2^32 wraps to 0 in 64 bits: the product must not be taken modulo 2^64.
      {make_file(R"({"a":{)" + f32 + R"(,"shape":[4294967296,4294967296],"data_offsets":[0,0]}})", ""),
       "needs more than 2^63 bytes"},
      {make_file(R"({"a":{)" + f32 + R"(,"shape":[9223372036854775807],"data_offsets":[0,0]}})", ""),
       "needs more than 2^63 bytes"},
      {make_file(R"({"a":{)" + f32 + R"(,"shape":[9223372036854775808],"data_offsets":[0,0]}})", ""),
       "too large"},
      {make_file(R"({"a":{)" + f32 + R"(,"shape":[1],"data_offsets":[0,4]},"b":{)" + f32 +
                     R"(,"shape":[1],"data_offsets":[0,4]}})",
                 four),
       "overlaps the previous tensor"},
      {make_file(R"({"a":{)" + f32 + R"(,"shape":[1],"data_offsets":[0,4]},"a":{)" + f32 +
                     R"(,"shape":[1],"data_offsets":[0,4]}})",
                 four),
       "names 'a' twice"},
  };
  for (const Case& c : cases) {
    write_bytes(path, c.bytes);
    std::string msg;
    try {
      load(path);
      ADD_FAILURE() << "loaded: " << c.expect;
    } catch (const Error& e) {
      msg = e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "foreign exception for " << c.expect << ": " << e.what();
    }
    EXPECT_EQ(msg.rfind("[load] ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
  }
  // A truncated copy of a good file fails at every length.
  save(TensorMap{{"w", arange(6, kFloat32)}, {"b", ones({2}, kInt64)}}, path);
  const std::string good = read_bytes(path);
  for (size_t n = 0; n < good.size(); ++n) {
    write_bytes(path, good.substr(0, n));
    EXPECT_THROW(load(path), ValueError) << n;
  }
  // A folder is not a file.
  EXPECT_THROW(load(fs::temp_directory_path().string()), ValueError);
  fs::remove(path);
}

TEST(Safetensors, BadMetadata) {
  const std::string path = temp_file("meta.safetensors");
  write_bytes(path, make_file(R"({"__metadata__":{"k":1}})", ""));
  // The reference reader refuses the whole header, and so does load.
  try {
    (void)load(path);
    ADD_FAILURE() << "loaded";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[load] ", 0), 0u) << e.what();
  }
  try {
    load_metadata(path);
    ADD_FAILURE() << "loaded";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[load_metadata] "), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("must map strings to strings"), std::string::npos);
  }
  fs::remove(path);
}

// A name that is not valid UTF-8 can't be written as JSON: ValueError, and no file appears
// (nor is an existing one touched).
TEST(Safetensors, SaveNameNotUtf8) {
  const std::string path = temp_file("utf8.safetensors");
  fs::remove(path);
  const std::string bad = "w\xff\xfe";
  try {
    save(TensorMap{{bad, zeros({2})}}, path);
    ADD_FAILURE() << "saved";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[save] ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  save(TensorMap{{"w", ones({3})}}, path);
  const std::string before = read_bytes(path);
  EXPECT_THROW(save(TensorMap{{"w", zeros({3})}}, path, {{"k", bad}}), ValueError);
  EXPECT_EQ(read_bytes(path), before);
  fs::remove(path);
}

// What load returns, given to load_state_dict with wrong shapes or missing keys, fails with
// the module unchanged.
TEST(Safetensors, LoadStateDictOfBadFile) {
  const std::string path = temp_file("sd.safetensors");
  nn::Linear fc(3, 2);
  const Tensor w0 = fc->weight.detach().clone(), b0 = fc->bias.detach().clone();
  save(TensorMap{{"weight", zeros({3, 2})}, {"bias", zeros({2})}}, path);
  try {
    fc->load_state_dict(load(path));
    ADD_FAILURE() << "loaded";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[load_state_dict] ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("size mismatch for weight"), std::string::npos) << e.what();
  }
  save(TensorMap{{"weight", zeros({2, 3})}}, path);
  EXPECT_THROW(fc->load_state_dict(load(path)), ValueError);
  EXPECT_TRUE(same(fc->weight.detach(), w0));
  EXPECT_TRUE(same(fc->bias.detach(), b0));
  // Another dtype is copied with a cast, as PyTorch's load_state_dict does.
  save(TensorMap{{"weight", ones({2, 3}, kFloat64)}, {"bias", ones({2}, kInt32)}}, path);
  fc->load_state_dict(load(path));
  EXPECT_TRUE(same(fc->weight.detach(), ones({2, 3})));
  EXPECT_TRUE(same(fc->bias.detach(), ones({2})));
  fs::remove(path);
}

namespace {

// Whether this process has `path` mapped (Linux: /proc/self/maps names every mapped file).
bool is_mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  const std::string canonical = fs::canonical(path).string();
  for (std::string line; std::getline(maps, line);)
    if (line.size() >= canonical.size() &&
        line.compare(line.size() - canonical.size(), canonical.size(), canonical) == 0)
      return true;
  return false;
}

}  // namespace

// load maps the file while it reads it, and what it returns owns its memory: the mapping is gone
// when load returns, and rewriting or truncating the file afterwards (as a writer that opens it
// in place does) changes no loaded tensor; writing to a loaded tensor changes neither the file
// nor a second load of it.
TEST(Safetensors, LoadedTensorsDoNotDependOnTheFile) {
  const std::string path = temp_file("mapped.safetensors");
  manual_seed(3);
  Tensor w = randn({64, 33});
  Tensor b = arange(17);
  save(TensorMap{{"w", w}, {"b", b}}, path);
  const std::string before = read_bytes(path);
  TensorMap m = load(path);
  EXPECT_FALSE(is_mapped(path));
  EXPECT_TRUE(same(m["w"], w));
  EXPECT_TRUE(same(m["b"], b));
  m["w"].mul_(2.0);
  m["b"].fill_(-1);
  EXPECT_TRUE(same(m["w"], w * 2.0));
  EXPECT_EQ(read_bytes(path), before);
  TensorMap again = load(path);
  EXPECT_TRUE(same(again["w"], w));
  // The file rewritten in place, then cut short: the loaded tensors keep their values.
  write_bytes(path, std::string(before.size(), '\x7f'));
  EXPECT_TRUE(same(again["w"], w));
  EXPECT_TRUE(same(again["b"], b));
  ASSERT_EQ(::truncate(path.c_str(), 16), 0);
  EXPECT_TRUE(same(again["w"], w));
  EXPECT_EQ(again["b"].to_vector<int64_t>(), b.to_vector<int64_t>());
  fs::remove(path);
}

// A header whose length leaves a tensor's bytes at an address its dtype cannot be read from (the
// format pads headers to 8 bytes, but a file need not): the values are copied out, still right.
TEST(Safetensors, UnalignedDataIsCopied) {
  const std::string path = temp_file("unaligned.safetensors");
  std::string header = R"({"d":{"dtype":"F64","shape":[3],"data_offsets":[0,24]}})";
  header.append((8 - header.size() % 8) % 8 + 3, ' ');  // 8 + header length is 3 mod 8
  const uint64_t n = header.size();
  std::string bytes(reinterpret_cast<const char*>(&n), 8);
  const double values[] = {1.25, -3.5, 1e300};
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(values), sizeof values);
  write_bytes(path, bytes);
  TensorMap m = load(path);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m["d"].data_ptr()) % 8, 0u);
  EXPECT_EQ(m["d"].to_vector<double>(), (std::vector<double>{1.25, -3.5, 1e300}));
  fs::remove(path);
}
