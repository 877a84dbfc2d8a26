#include "normserve/client/half.h"

#include <bit>

namespace normserve::client {

uint16_t FloatToHalfBits(float f) {
  // After F. Giesen's float_to_half_fast3_rtne: subnormal results use the FPU's
  // own round-to-nearest-even through a magic addend; normal results add the
  // rounding bias (0xfff plus the lowest kept mantissa bit) before truncating.
  constexpr uint32_t kF32Inf = 255u << 23;
  constexpr uint32_t kF16Overflow = (127u + 16u) << 23;  // 65536.0f
  constexpr uint32_t kDenormMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint32_t out;
  if (u >= kF16Overflow) {
    out = u > kF32Inf ? 0x7e00u : 0x7c00u;  // NaN -> quiet NaN, else inf
  } else if (u < (113u << 23)) {            // below 2^-14: subnormal or zero
    const float sum = std::bit_cast<float>(u) + std::bit_cast<float>(kDenormMagic);
    out = std::bit_cast<uint32_t>(sum) - kDenormMagic;
  } else {
    const uint32_t mantissa_odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + mantissa_odd;
    out = u >> 13;  // a carry out of the mantissa rounds up to inf correctly
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

float HalfBitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in fp32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  if (exponent == 31) {
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t FloatToBf16Bits(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((u >> 16) | 0x0040u);  // keep NaN, make it quiet
  }
  const uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding_bias) >> 16);
}

float Bf16BitsToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

std::vector<uint16_t> FloatsToHalfBits(std::span<const float> values) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = FloatToHalfBits(values[i]);
  return out;
}

std::vector<uint16_t> FloatsToBf16Bits(std::span<const float> values) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = FloatToBf16Bits(values[i]);
  return out;
}

}  // namespace normserve::client
