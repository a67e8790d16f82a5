#include "ir/npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sp::ir {
namespace {

std::string fixture(const std::string& name) {
  return std::string(SP_SOURCE_DIR) + "/tests/data/npy/" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.getAsDouble(i));
  return v;
}

Tensor read(const std::string& name) {
  auto t = readNpy(fixture(name));
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().str());
  return t.ok() ? *t : Tensor();
}

TEST(Npy, ReadsNumpyFixtures) {
  Tensor f32 = read("f32_2x3.npy");
  EXPECT_EQ(f32.dtype(), DType::F32);
  EXPECT_EQ(f32.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(f32), (std::vector<double>{-1, -0.5, 0, 0.5, 1, 1.5}));

  Tensor f64 = read("f64_4.npy");
  EXPECT_EQ(f64.dtype(), DType::F64);
  EXPECT_EQ(values(f64), (std::vector<double>{1.5, -2.25, 1e300, -0.0}));
  EXPECT_TRUE(std::signbit(f64.getAsDouble(3)));

  Tensor f16 = read("f16_3.npy");
  EXPECT_EQ(f16.dtype(), DType::F16);
  EXPECT_EQ(values(f16), (std::vector<double>{1.0, -0.5, 65504.0}));

  Tensor i64 = read("i64_2x2.npy");
  EXPECT_EQ(i64.dtype(), DType::I64);
  EXPECT_EQ(i64.data<int64_t>()[2], int64_t(1) << 40);
  EXPECT_EQ(i64.data<int64_t>()[3], -(int64_t(1) << 40));
  EXPECT_EQ(i64.data<int64_t>()[1], -2);

  EXPECT_EQ(values(read("i32_3.npy")), (std::vector<double>{7, -8, 2147483647}));
  EXPECT_EQ(read("i16_2.npy").dtype(), DType::I16);
  EXPECT_EQ(values(read("i16_2.npy")), (std::vector<double>{-32768, 32767}));
  EXPECT_EQ(read("i8_3.npy").dtype(), DType::I8);
  EXPECT_EQ(values(read("i8_3.npy")), (std::vector<double>{-128, 0, 127}));
  EXPECT_EQ(read("u8_3.npy").dtype(), DType::U8);
  EXPECT_EQ(values(read("u8_3.npy")), (std::vector<double>{0, 128, 255}));
  Tensor b = read("bool_4.npy");
  EXPECT_EQ(b.dtype(), DType::Bool);
  EXPECT_EQ(values(b), (std::vector<double>{1, 0, 0, 1}));

  Tensor s = read("scalar_f32.npy");
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(values(s), (std::vector<double>{3.25}));
  Tensor e = read("empty_0x3.npy");
  EXPECT_EQ(e.dims(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(e.numel(), 0);
}

TEST(Npy, ReadsFormatVersions2And3) {
  Tensor v2 = read("v2_i32_2x2.npy");
  EXPECT_EQ(v2.dtype(), DType::I32);
  EXPECT_EQ(values(v2), (std::vector<double>{1, 2, 3, 4}));
  Tensor v3 = read("v3_f32_3.npy");
  EXPECT_EQ(values(v3), (std::vector<double>{1, 2, 3}));
}

TEST(Npy, SerializeMatchesNumpyBytes) {
  // numpy 1.x writes the same header text and 64-byte padding.
  for (const char* name : {"f32_2x3.npy", "i64_2x2.npy", "bool_4.npy", "scalar_f32.npy",
                           "u8_3.npy", "empty_0x3.npy"}) {
    std::string bytes = slurp(fixture(name));
    auto t = parseNpy(bytes, name);
    ASSERT_TRUE(t.ok()) << t.error().str();
    EXPECT_EQ(serializeNpy(*t), bytes) << name;
  }
}

TEST(Npy, RoundTripsEveryDType) {
  for (DType dt : kAllDTypes) {
    Tensor t(dt, {2, 3});
    for (int64_t i = 0; i < t.numel(); ++i) t.setFromDouble(i, dt == DType::Bool ? i % 2 : double(i) - 2);
    auto back = parseNpy(serializeNpy(t), "mem");
    ASSERT_TRUE(back.ok()) << back.error().str();
    if (dt == DType::BF16) {
      // bf16 is written as f32, exactly.
      EXPECT_EQ(back->dtype(), DType::F32);
      EXPECT_EQ(values(*back), values(t));
    } else {
      EXPECT_TRUE(back->identical(t)) << dtypeName(dt);
    }
  }
}

TEST(Npy, WriteThenReadFile) {
  std::string path = std::string(SP_BINARY_DIR) + "/npy_test_roundtrip.npy";
  Tensor t(DType::F64, {3});
  t.setFromDouble(0, 0.1);
  t.setFromDouble(1, -7);
  t.setFromDouble(2, 1e-300);
  ASSERT_TRUE(writeNpy(path, t).ok());
  auto back = readNpy(path);
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_TRUE(back->identical(t));
  std::remove(path.c_str());
}

void expectError(const std::string& bytes, const std::string& id, const std::string& text) {
  auto r = parseNpy(bytes, "x.npy");
  ASSERT_FALSE(r.ok()) << "expected " << id;
  EXPECT_EQ(r.error().id, id) << r.error().str();
  EXPECT_NE(r.error().message.find(text), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.rfind("x.npy: ", 0), 0u) << r.error().message;
}

TEST(Npy, RejectsUnsupportedLayouts) {
  expectError(slurp(fixture("fortran_f32_2x3.npy")), "npy-fortran", "fortran_order");
  expectError(slurp(fixture("bigendian_f4_2.npy")), "npy-dtype", "big-endian dtype '>f4'");
  expectError(slurp(fixture("c8_1.npy")), "npy-dtype", "unsupported dtype '<c8'");
}

TEST(Npy, RejectsCorruptFiles) {
  std::string good = slurp(fixture("f32_2x3.npy"));
  expectError("", "npy-magic", "bad magic");
  expectError("PK\x03\x04 not npy at all", "npy-magic", "bad magic");
  std::string v9 = good;
  v9[6] = 9;
  expectError(v9, "npy-version", "unsupported format version 9.0");
  expectError(good.substr(0, 9), "npy-header", "truncated before the header length");
  expectError(good.substr(0, 40), "npy-header", "truncated header: 118 bytes declared, 30 present");
  expectError(good.substr(0, good.size() - 1), "npy-size", "data is 23 bytes but <f4 [2, 3] needs 24");
  expectError(good + "x", "npy-size", "data is 25 bytes");
  std::string noShape = good;
  noShape.replace(noShape.find("'shape'"), 7, "'shXpe'");
  expectError(noShape, "npy-header", "header has no 'shape'");
  std::string badTuple = good;
  badTuple.replace(badTuple.find("(2, 3)"), 6, "(2; 3)");
  expectError(badTuple, "npy-header", "expected ',' or ')' in shape");
  std::string unterminated = good;
  unterminated.replace(unterminated.find("}"), 1, " ");
  expectError(unterminated, "npy-header", "bad header");
  std::string huge = good;
  huge.replace(huge.find("(2, 3)"), 6, "(99999999999999999999,)");
  expectError(huge, "npy-header", "integer exceeds 2^48");
  std::string tooMany = good;
  tooMany.replace(tooMany.find("(2, 3)"), 6, "(1048576, 1048576, 1024)");
  expectError(tooMany, "npy-size", "more than 2^48 elements");
}

// A shape whose product overflows int64 used to wrap to 0 and be accepted
// as an empty array with no data; so did huge dims beside a zero dim.
TEST(Npy, ShapeProductOverflowIsAnError) {
  std::string good = slurp(fixture("f32_2x3.npy"));
  std::string wraps = good;
  wraps.replace(wraps.find("(2, 3)"), 6, "(4294967296, 4294967296, 4294967296)");
  expectError(wraps, "npy-size", "shape [4294967296, 4294967296, 4294967296] has more than 2^48 elements");
  std::string zero = good;
  zero.replace(zero.find("(2, 3)"), 6, "(1099511627776, 1099511627776, 0)");
  expectError(zero, "npy-size", "has more than 2^48 elements in its non-zero dims");
  // An empty array with a large dim needs no data: the same header length,
  // the longer shape taking padding.
  std::string empty = good.substr(0, good.size() - 24);
  const std::string shape = "(0, 1099511627776)";
  empty.replace(empty.find("(2, 3)"), 6, shape);
  empty.erase(empty.rfind('\n') - (shape.size() - 6), shape.size() - 6);
  auto e = parseNpy(empty, "e.npy");
  ASSERT_TRUE(e.ok()) << e.error().str();
  EXPECT_EQ(e->numel(), 0);
}

// writeNpy goes through PATH.tmp and a rename: a failed write leaves
// neither a half-written PATH nor the temporary file.
TEST(Npy, FailedWriteLeavesNothingBehind) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(SP_BINARY_DIR) / "npy_test_write";
  fs::remove_all(dir);
  fs::create_directories(dir / "taken");
  Tensor t(DType::F32, {2});
  auto st = writeNpy((dir / "taken").string(), t);  // a directory is in the way
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().id, "npy-io");
  EXPECT_FALSE(fs::exists(dir / "taken.tmp"));
  EXPECT_TRUE(fs::is_directory(dir / "taken"));
  EXPECT_FALSE(writeNpy((dir / "no_dir" / "x.npy").string(), t).ok());
  EXPECT_FALSE(fs::exists(dir / "no_dir"));
  ASSERT_TRUE(writeNpy((dir / "x.npy").string(), t).ok());
  EXPECT_TRUE(fs::exists(dir / "x.npy"));
  EXPECT_FALSE(fs::exists(dir / "x.npy.tmp"));
  fs::remove_all(dir);
}

TEST(Npy, FuzzedPrefixesNeverCrash) {
  // Every truncation and every single-byte corruption of a valid file either
  // parses or returns an error; it never crashes.
  std::string good = slurp(fixture("i64_2x2.npy"));
  for (size_t n = 0; n < good.size(); ++n) EXPECT_FALSE(parseNpy(good.substr(0, n), "p").ok());
  for (size_t i = 0; i < good.size(); ++i) {
    for (int delta : {1, 0x40, 0x80}) {
      std::string bad = good;
      bad[i] = char(bad[i] + delta);
      (void)parseNpy(bad, "c");
    }
  }
}

TEST(Npy, ReadMissingFile) {
  auto r = readNpy("/nonexistent/dir/x.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().id, "npy-io");
  EXPECT_EQ(r.error().message, "/nonexistent/dir/x.npy: cannot open for reading");
}

}  // namespace
}  // namespace sp::ir
