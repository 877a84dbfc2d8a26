#include "normserve/client/half.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace normserve::client {
namespace {

float NextUp(float f) { return std::nextafter(f, std::numeric_limits<float>::infinity()); }
float NextDown(float f) { return std::nextafter(f, -std::numeric_limits<float>::infinity()); }

TEST(HalfTest, EveryFp16ValueSurvivesARoundTripThroughFp32) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = HalfBitsToFloat(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfBitsToFloat(FloatToHalfBits(f)))) << std::hex << bits;
      continue;
    }
    EXPECT_EQ(FloatToHalfBits(f), h) << std::hex << bits;
  }
}

TEST(HalfTest, NarrowingRoundsToNearestEvenAtEveryMidpoint) {
  // Between consecutive finite positive halves a and b the fp32 midpoint is
  // exact: it must go to the one with an even mantissa; one fp32 ulp either
  // side must go to the nearer one.
  for (uint16_t a = 0; a < 0x7bff; ++a) {
    const auto b = static_cast<uint16_t>(a + 1);
    const float fa = HalfBitsToFloat(a);
    const float fb = HalfBitsToFloat(b);
    const float mid = (fa + fb) / 2;
    ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(fa) + fb) / 2);
    const uint16_t even = (a & 1) == 0 ? a : b;
    EXPECT_EQ(FloatToHalfBits(mid), even) << std::hex << a;
    EXPECT_EQ(FloatToHalfBits(NextDown(mid)), a) << std::hex << a;
    EXPECT_EQ(FloatToHalfBits(NextUp(mid)), b) << std::hex << a;
    EXPECT_EQ(FloatToHalfBits(-mid), even | 0x8000) << std::hex << a;
  }
}

TEST(HalfTest, OverflowBecomesInfinityAndNanStaysNan) {
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalfBits(65519.99f), 0x7bff);  // below the midpoint to 65536
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7c00);   // the midpoint: ties to even = inf
  EXPECT_EQ(FloatToHalfBits(1e10f), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(-1e10f), 0xfc00);
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::infinity()), 0x7c00);
  const uint16_t nan = FloatToHalfBits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
}

TEST(HalfTest, SubnormalsAndSignedZeroConvertExactly) {
  EXPECT_EQ(FloatToHalfBits(0x1p-24f), 0x0001);    // smallest subnormal
  EXPECT_EQ(FloatToHalfBits(0x1p-25f), 0x0000);    // half of it: ties to even 0
  EXPECT_EQ(FloatToHalfBits(0x1.8p-24f), 0x0002);  // 1.5 ulp: ties to even 2
  EXPECT_EQ(FloatToHalfBits(0x1p-14f), 0x0400);    // smallest normal
  EXPECT_EQ(FloatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(HalfBitsToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(HalfBitsToFloat(0x03ff), 0x3ffp-24f);
  EXPECT_EQ(FloatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalfBits(-2.5f), 0xc100);
}

TEST(Bf16Test, EveryBf16ValueSurvivesARoundTripThroughFp32) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = Bf16BitsToFloat(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Bf16BitsToFloat(FloatToBf16Bits(f))));
      continue;
    }
    EXPECT_EQ(FloatToBf16Bits(f), h) << std::hex << bits;
  }
}

TEST(Bf16Test, NarrowingRoundsToNearestEvenAtEveryMidpoint) {
  for (uint32_t a = 0; a < 0x7f7f; ++a) {
    const auto lo = static_cast<uint16_t>(a);
    const auto hi = static_cast<uint16_t>(a + 1);
    // The midpoint's fp32 bits: lo's bits with the next bit below set.
    const float mid = std::bit_cast<float>((a << 16) | 0x8000u);
    const uint16_t even = (lo & 1) == 0 ? lo : hi;
    EXPECT_EQ(FloatToBf16Bits(mid), even) << std::hex << a;
    EXPECT_EQ(FloatToBf16Bits(NextDown(mid)), lo) << std::hex << a;
    EXPECT_EQ(FloatToBf16Bits(NextUp(mid)), hi) << std::hex << a;
  }
}

TEST(Bf16Test, OverflowBecomesInfinityAndNanStaysQuietNan) {
  EXPECT_EQ(FloatToBf16Bits(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(FloatToBf16Bits(-std::numeric_limits<float>::infinity()), 0xff80);
  // A signalling NaN whose payload lives only in the low 16 bits must not
  // collapse into infinity.
  const uint16_t nan = FloatToBf16Bits(std::bit_cast<float>(0x7f800001u));
  EXPECT_TRUE(std::isnan(Bf16BitsToFloat(nan)));
  EXPECT_EQ(FloatToBf16Bits(1.0f), 0x3f80);
}

TEST(HalfTest, SpanConversionsMatchScalarOnes) {
  const float values[] = {0.1f, -3.75f, 1e-6f, 7e4f};
  const std::vector<uint16_t> half = FloatsToHalfBits(values);
  const std::vector<uint16_t> bf16 = FloatsToBf16Bits(values);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(half[i], FloatToHalfBits(values[i]));
    EXPECT_EQ(bf16[i], FloatToBf16Bits(values[i]));
  }
}

}  // namespace
}  // namespace normserve::client
