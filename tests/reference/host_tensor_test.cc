// HostTensor: encoding rounds to nearest even, decoding is exact, random
// tensors are never all zero, poisoned tensors are NaN, offsets keep values.
#include "host_tensor.h"

#include <gtest/gtest.h>

#include <cmath>

namespace normserve::reference {
namespace {

TEST(HostTensorTest, EncodeRoundsToNearestEven) {
  // fp16: ulp at 1 is 2^-10.
  EXPECT_EQ(EncodeElement(DType::kF16, 1.0), 0x3C00u);
  EXPECT_EQ(EncodeElement(DType::kF16, 1.0 + std::ldexp(1, -11)), 0x3C00u);      // tie, even
  EXPECT_EQ(EncodeElement(DType::kF16, 1.0 + 3 * std::ldexp(1, -11)), 0x3C02u);  // tie, even
  EXPECT_EQ(EncodeElement(DType::kF16, 65504.0), 0x7BFFu);
  EXPECT_EQ(EncodeElement(DType::kF16, 65520.0), 0x7C00u);
  EXPECT_EQ(EncodeElement(DType::kF16, -std::ldexp(1, -24)), 0x8001u);
  // bf16: ulp at 1 is 2^-7.
  EXPECT_EQ(EncodeElement(DType::kBF16, 1.0 + std::ldexp(1, -8)), 0x3F80u);
  EXPECT_EQ(EncodeElement(DType::kBF16, 1.0 + 3 * std::ldexp(1, -8)), 0x3F82u);
  EXPECT_EQ(EncodeElement(DType::kBF16, -2.0), 0xC000u);
}

TEST(HostTensorTest, DecodeInvertsEncodeForEveryFiniteHalfPattern) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
      const double v = DecodeElement(dtype, bits);
      if (std::isnan(v)) continue;
      ASSERT_EQ(EncodeElement(dtype, v), bits) << std::hex << bits;
    }
  }
}

// Every interval between neighbouring finite values of fp16 and bf16, of
// either sign: its midpoint rounds to the neighbour with the even pattern, the
// doubles either side of the midpoint to the nearer neighbour. Covers the
// integer path for normal results and the frexp path (subnormals, overflow).
TEST(HostTensorTest, EncodeRoundsEveryIntervalToTheNearerNeighbour) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (uint32_t sign : {0u, 0x8000u}) {
      for (uint32_t bits = sign; bits < sign + 0x7FFF; ++bits) {
        const double low = DecodeElement(dtype, bits);
        const double high = DecodeElement(dtype, bits + 1);
        if (!std::isfinite(high)) break;
        const double mid = (low + high) / 2;  // exact: a few more bits than the format
        ASSERT_EQ(EncodeElement(dtype, mid), (bits & 1) ? bits + 1 : bits) << std::hex << bits;
        ASSERT_EQ(EncodeElement(dtype, std::nextafter(mid, low)), bits) << std::hex << bits;
        ASSERT_EQ(EncodeElement(dtype, std::nextafter(mid, high)), bits + 1) << std::hex << bits;
      }
    }
  }
}

TEST(HostTensorTest, RandomTensorsHoldTheirValuesExactly) {
  std::mt19937_64 rng(1);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const HostTensor t = HostTensor::Random(dtype, 1000, rng);
    const std::vector<double> v = t.Values();
    int zeros = 0;
    for (double e : v) zeros += e == 0.0;
    EXPECT_LT(zeros, 10);
    const HostTensor again = HostTensor::FromValues(dtype, v);
    EXPECT_EQ(again.Values(), v);
    const HostTensor shifted = t.Offset(1);
    EXPECT_EQ(shifted.Values(), v);
    EXPECT_NE(shifted.data(), t.data());
  }
}

TEST(HostTensorTest, PoisonedTensorsAreNaN) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (double v : HostTensor::Poisoned(dtype, 7).Values()) EXPECT_TRUE(std::isnan(v));
  }
}

}  // namespace
}  // namespace normserve::reference
