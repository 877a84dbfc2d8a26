// Storage element traits of the CPU backend: how a tensor element of each
// DType is stored in memory and turned into fp32 and back.
//
//   using E = Element<DType::kBF16>;
//   float v = E::Load(x[i]);         // exact
//   out[i] = E::Store(v);            // round to nearest even
#ifndef NORMSERVE_KERNELS_CPU_ELEMENT_H_
#define NORMSERVE_KERNELS_CPU_ELEMENT_H_

#include <cstdint>

#include "normserve/kernels/dtype.h"
#include "normserve/kernels/half.h"

namespace normserve::kernels::cpu {

template <DType D>
struct Element;

template <>
struct Element<DType::kF32> {
  using Storage = float;
  // Whether Load costs so little (no more than a shift) that a kernel may
  // read a row in this dtype on every pass instead of converting it once
  // into an fp32 scratch row.
  static constexpr bool kCheapLoad = true;
  static float Load(float v) { return v; }
  static float Store(float v) { return v; }
};

template <>
struct Element<DType::kF16> {
  using Storage = uint16_t;
  static constexpr bool kCheapLoad = false;  // a dozen integer and float ops
  static float Load(uint16_t v) { return HalfToFloat(v); }
  static uint16_t Store(float v) { return FloatToHalf(v); }
};

template <>
struct Element<DType::kBF16> {
  using Storage = uint16_t;
  static constexpr bool kCheapLoad = true;  // a shift
  static float Load(uint16_t v) { return BFloat16ToFloat(v); }
  static uint16_t Store(float v) { return FloatToBFloat16(v); }
};

}  // namespace normserve::kernels::cpu

#endif  // NORMSERVE_KERNELS_CPU_ELEMENT_H_
