#include "normserve/npy/npy.h"

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace normserve::npy {
namespace {

// A .npy file as numpy.save writes it, with a hand-written header.
std::string NpyBytes(int major, const std::string& dict, const std::string& payload) {
  std::string header = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const size_t len = header.size();
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i)
    out.push_back(static_cast<char>(len >> (8 * i)));
  return out + header + payload;
}

std::string Floats(std::initializer_list<float> values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

TEST(NpyTest, Float32ArraysRoundTripThroughBytesAndFiles) {
  NpyArray array = MakeF4({2, 3}, {1, 2, 3, 4, 5, 6.5f});
  absl::StatusOr<std::string> bytes = SerializeNpy(array);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ((bytes->size() - array.data.size()) % 64, 0u);  // header padded like numpy
  absl::StatusOr<NpyArray> back = ParseNpy(*bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dtype, NpyDType::kF4);
  EXPECT_EQ(back->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back->data, array.data);

  const std::string path =
      (std::filesystem::temp_directory_path() / absl::StrCat("npy_test_", getpid(), ".npy"))
          .string();
  ASSERT_TRUE(WriteNpy(path, array).ok());
  absl::StatusOr<NpyArray> from_file = ReadNpy(path);
  std::remove(path.c_str());
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  EXPECT_EQ(from_file->data, array.data);
}

TEST(NpyTest, Float16AndRankOneAndScalarShapesRoundTrip) {
  NpyArray half;
  half.dtype = NpyDType::kF2;
  half.shape = {3};
  half.data = std::string("\x00\x3c\x00\xc0\x00\x00", 6);
  absl::StatusOr<std::string> bytes = SerializeNpy(half);
  ASSERT_TRUE(bytes.ok());
  EXPECT_NE(bytes->find("'shape': (3,)"), std::string::npos);  // numpy's 1-tuple
  absl::StatusOr<NpyArray> back = ParseNpy(*bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dtype, NpyDType::kF2);
  EXPECT_EQ(back->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(back->data, half.data);

  NpyArray scalar = MakeF4({}, {42.0f});
  absl::StatusOr<NpyArray> scalar_back = ParseNpy(*SerializeNpy(scalar));
  ASSERT_TRUE(scalar_back.ok());
  EXPECT_TRUE(scalar_back->shape.empty());
  EXPECT_EQ(scalar_back->elements(), 1);
}

TEST(NpyTest, NumpyWrittenHeadersOfVersionOneAndTwoParse) {
  const std::string payload = Floats({1, 2, 3, 4});
  for (int major : {1, 2, 3}) {
    absl::StatusOr<NpyArray> a = ParseNpy(
        NpyBytes(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", payload));
    ASSERT_TRUE(a.ok()) << major << ": " << a.status();
    EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 2}));
  }
  // Key order is free.
  EXPECT_TRUE(
      ParseNpy(NpyBytes(1, "{'shape': (4,), 'fortran_order': False, 'descr': '<f4'}", payload))
          .ok());
}

TEST(NpyTest, BadFilesAreRejectedWithTheReason) {
  const std::string payload = Floats({1, 2, 3, 4});
  struct Case {
    std::string bytes;
    std::string expect;  // a fragment of the message
  };
  const std::vector<Case> cases = {
      {"not an npy file at all", "magic"},
      {NpyBytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", payload), ">f4"},
      {NpyBytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", payload), "<f8"},
      {NpyBytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", payload), "<i4"},
      {NpyBytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", payload),
       "Fortran"},
      {NpyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", payload),
       "needs 20 bytes, file has 16"},
      {NpyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", payload),
       "dimension"},
      {NpyBytes(1, "{'descr': '<f4', 'fortran_order': False, }", payload), "shape"},
      {NpyBytes(9, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", payload),
       "version 9"},
      {std::string("\x93NUMPY\x01\x00\xff\x7f{}", 12), "header claims"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<NpyArray> a = ParseNpy(c.bytes);
    ASSERT_FALSE(a.ok()) << c.expect;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(a.status().message().find(c.expect), absl::string_view::npos) << a.status();
  }
}

TEST(NpyTest, MissingFilesAndInconsistentArraysAreErrors) {
  absl::Status missing = ReadNpy("/nonexistent/x.npy").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("/nonexistent/x.npy"), absl::string_view::npos);
  NpyArray bad = MakeF4({2, 2}, {1, 2, 3});
  EXPECT_EQ(SerializeNpy(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace normserve::npy
