// half.h against the test reference's independent fp16 / bf16 codec:
// exact decoding of every bit pattern, round-to-nearest-even encoding
// (midpoints, subnormals, overflow), NaN and Inf.
#include "normserve/kernels/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "host_tensor.h"

namespace normserve::kernels {
namespace {

using reference::DecodeElement;
using reference::EncodeElement;

bool SameValue(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TEST(HalfTest, HalfToFloatIsExactForEveryBitPattern) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    ASSERT_TRUE(SameValue(HalfToFloat(static_cast<uint16_t>(h)), DecodeElement(DType::kF16, h)))
        << std::hex << h;
  }
}

TEST(HalfTest, BFloat16ToFloatIsExactForEveryBitPattern) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    ASSERT_TRUE(
        SameValue(BFloat16ToFloat(static_cast<uint16_t>(h)), DecodeElement(DType::kBF16, h)))
        << std::hex << h;
  }
}

TEST(HalfTest, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    if (std::isnan(HalfToFloat(bits))) continue;
    ASSERT_EQ(FloatToHalf(HalfToFloat(bits)), bits) << std::hex << h;
    ASSERT_EQ(FloatToBFloat16(BFloat16ToFloat(bits)), bits) << std::hex << h;
  }
}

// The exact midpoint between two neighbours (and the values just beside it)
// rounds as round-to-nearest-even says, for every pair of finite neighbours.
TEST(HalfTest, MidpointsRoundToEven) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    auto encode = [dtype](float f) {
      return dtype == DType::kF16 ? FloatToHalf(f) : FloatToBFloat16(f);
    };
    for (uint32_t h = 0; h < 0x7FFF; ++h) {
      const double lo = DecodeElement(dtype, h);
      const double hi = DecodeElement(dtype, h + 1);
      if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
      const auto mid = static_cast<float>((lo + hi) / 2);  // exact in fp32
      const uint32_t even = (h % 2 == 0) ? h : h + 1;
      ASSERT_EQ(encode(mid), even) << DTypeName(dtype) << " " << std::hex << h;
      ASSERT_EQ(encode(-mid), even | 0x8000) << DTypeName(dtype) << " " << std::hex << h;
      ASSERT_EQ(encode(std::nextafter(mid, 0.0f)), h) << DTypeName(dtype) << " " << std::hex << h;
      ASSERT_EQ(encode(std::nextafter(mid, INFINITY)), h + 1)
          << DTypeName(dtype) << " " << std::hex << h;
    }
  }
}

TEST(HalfTest, RandomFloatsRoundLikeTheReferenceCodec) {
  std::mt19937 rng(51);
  for (int i = 0; i < 1000000; ++i) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f), EncodeElement(DType::kF16, f)) << f;
    ASSERT_EQ(FloatToBFloat16(f), EncodeElement(DType::kBF16, f)) << f;
  }
}

TEST(HalfTest, OverflowRoundsToInfinity) {
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65519.99f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);
  EXPECT_EQ(FloatToHalf(-1e10f), 0xFC00);
  EXPECT_EQ(FloatToHalf(INFINITY), 0x7C00);
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(FloatToBFloat16(-INFINITY), 0xFF80);
}

TEST(HalfTest, NanStaysNan) {
  for (uint32_t bits : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0xFFC00000u}) {
    const float nan = std::bit_cast<float>(bits);
    EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(nan)))) << std::hex << bits;
    EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(nan)))) << std::hex << bits;
    EXPECT_EQ(std::signbit(BFloat16ToFloat(FloatToBFloat16(nan))), std::signbit(nan));
  }
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7C01)));
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(0x7F81)));
}

TEST(HalfTest, SignedZerosAndSubnormalsKeepTheirValue) {
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(0x1p-24f), 0x0001);       // smallest fp16 subnormal
  EXPECT_EQ(FloatToHalf(0x1p-25f), 0x0000);       // tie to even: 0
  EXPECT_EQ(FloatToHalf(0x1.8p-25f), 0x0001);     // above the tie
  EXPECT_EQ(HalfToFloat(0x03FF), 0x1.ff8p-15f);   // largest fp16 subnormal
  EXPECT_EQ(FloatToBFloat16(0x1p-133f), 0x0001);  // bf16 subnormal
}

}  // namespace
}  // namespace normserve::kernels
