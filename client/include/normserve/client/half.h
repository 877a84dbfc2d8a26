// Conversions between fp32 and the two 16-bit float formats of the wire
// contract: IEEE 754 binary16 (fp16) and bfloat16 (bf16).
//
// Each narrowing conversion rounds to nearest, ties to even, like a hardware
// cvt.rn: overflow becomes +-inf, NaN stays NaN (quiet), fp16 subnormals are
// produced exactly. Widening conversions are exact. All functions are pure and
// thread-safe.
//
//   uint16_t h = normserve::client::FloatToHalfBits(1.0f);  // 0x3c00
//   float f = normserve::client::HalfBitsToFloat(h);       // 1.0f
#ifndef NORMSERVE_CLIENT_HALF_H_
#define NORMSERVE_CLIENT_HALF_H_

#include <cstdint>
#include <span>
#include <vector>

namespace normserve::client {

// fp32 -> fp16 bits, round to nearest even. |f| >= 65520 becomes inf.
uint16_t FloatToHalfBits(float f);
// fp16 bits -> fp32, exact (subnormals included).
float HalfBitsToFloat(uint16_t bits);

// fp32 -> bf16 bits (the upper half of the fp32, rounded to nearest even).
uint16_t FloatToBf16Bits(float f);
// bf16 bits -> fp32, exact.
float Bf16BitsToFloat(uint16_t bits);

// Element-wise versions over spans.
std::vector<uint16_t> FloatsToHalfBits(std::span<const float> values);
std::vector<uint16_t> FloatsToBf16Bits(std::span<const float> values);

}  // namespace normserve::client

#endif  // NORMSERVE_CLIENT_HALF_H_
