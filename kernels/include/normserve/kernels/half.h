// fp16 (IEEE binary16) and bf16 (bfloat16) <-> fp32 conversion on raw bits.
//
// Tensors of dtype kF16 and kBF16 are stored as uint16_t bit patterns; these
// functions are the one place that turns them into floats and back. Every
// conversion is exact where the value is representable, and otherwise rounds
// to nearest, ties to even:
//
//   uint16_t h = normserve::kernels::FloatToHalf(0.1f);   // 0x2E66
//   float f = normserve::kernels::HalfToFloat(h);         // 0.0999755859375f
//
// Special values: +-0, subnormals, +-Inf keep their meaning; fp32 values
// beyond the fp16 range round to +-Inf; NaN stays NaN (quiet, sign kept).
// float -> bf16 never turns a NaN into Inf.
//
// The functions are branch-free (selects, no table lookups), so loops over
// arrays of them vectorize. They assume the default floating-point environment
// (round to nearest, no flush-to-zero). Thread-safe.
#ifndef NORMSERVE_KERNELS_HALF_H_
#define NORMSERVE_KERNELS_HALF_H_

#include <bit>
#include <cstdint>

namespace normserve::kernels {

namespace half_internal {
// a where c, else b, with masks rather than a branch or a select of
// floating-point values: GCC if-converts only this form, and then vectorizes
// loops of the conversions below at every instruction set level.
inline uint32_t Select(bool c, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(c);
  return (a & mask) | (b & ~mask);
}
}  // namespace half_internal

// fp16 bits -> fp32 (exact).
inline float HalfToFloat(uint16_t h) {
  // Move the fp16 exponent and mantissa into fp32 position, then rescale the
  // exponent bias (15 -> 127) by a multiplication, which also turns fp16
  // Inf/NaN into fp32 Inf/NaN. Subnormals are built as (0.5 + m) - 0.5.
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;  // exponent and mantissa, sign shifted out
  const uint32_t normalized =
      std::bit_cast<uint32_t>(std::bit_cast<float>((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f);
  const uint32_t denormalized =
      std::bit_cast<uint32_t>(std::bit_cast<float>((two_w >> 17) | (126u << 23)) - 0.5f);
  return std::bit_cast<float>(sign |
                              half_internal::Select(two_w < (1u << 27), denormalized, normalized));
}

// fp32 -> fp16 bits, round to nearest even; overflow to Inf, NaN to quiet NaN.
inline uint16_t FloatToHalf(float f) {
  // Adding a power of two whose ulp equals the fp16 ulp at f's exponent makes
  // the FPU round the mantissa to 10 bits (ties to even), subnormals included;
  // scaling |f| up then down by powers of two first turns values beyond the
  // fp16 range into Inf.
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const uint32_t shl1_w = w + w;  // sign shifted out
  const uint32_t sign = w & 0x80000000u;
  const float magnitude = (std::bit_cast<float>(w & 0x7FFFFFFFu) * 0x1.0p+112f) * 0x1.0p-110f;
  uint32_t bias = shl1_w & 0xFF000000u;
  bias = half_internal::Select(bias < 0x71000000u, 0x71000000u, bias);
  const float base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + magnitude;
  const uint32_t bits = std::bit_cast<uint32_t>(base);
  const uint32_t nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
  return static_cast<uint16_t>((sign >> 16) |
                               half_internal::Select(shl1_w > 0xFF000000u, 0x7E00u, nonsign));
}

// bf16 bits -> fp32 (exact).
inline float BFloat16ToFloat(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

// fp32 -> bf16 bits, round to nearest even; NaN to quiet NaN (sign kept).
inline uint16_t FloatToBFloat16(float f) {
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (w + 0x7FFFu + ((w >> 16) & 1u)) >> 16;
  const bool is_nan = (w & 0x7FFFFFFFu) > 0x7F800000u;
  return static_cast<uint16_t>(half_internal::Select(is_nan, (w >> 16) | 0x0040u, rounded));
}

}  // namespace normserve::kernels

#endif  // NORMSERVE_KERNELS_HALF_H_
