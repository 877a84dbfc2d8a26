// The one table from a RowLayout (see row_layout.h) to kernel template
// instances, for forward and backward alike:
//   vec   in {16 / sizeof(T), 8 / sizeof(T), 1}
//   iters in {1, 2, 4, 8} with vec * iters <= MaxElemsPerThread(pass, sizeof(T))
//         (and 16 / 32 for 16-bit forward rows of vec 1: HeldScalarForwardRow;
//         16 for fp32 forward rows of half vectors),
//         or 0 for the streaming kernel, or 5 / 6 / 8 for the held fp32
//         backward rows (HeldIters).
// 16-bit backward rows never stream and never take vec 1 (rows up to 65536
// fit registers, a cluster at most, and those of no whole vector are
// realigned: RealignedRow); fp32 backward rows of vec 1 only stream (those up
// to 32768 are realigned); so those instances are not compiled.
// `launch` is called as launch(std::integral_constant<int, VEC>{},
// std::integral_constant<int, ITERS>{}) and returns a cudaError_t.
#ifndef NORMSERVE_KERNELS_CUDA_DISPATCH_CUH_
#define NORMSERVE_KERNELS_CUDA_DISPATCH_CUH_

#include <cuda_runtime_api.h>

#include <type_traits>

#include "row_layout.h"

namespace normserve::kernels::cuda {

template <int N>
using IntConst = std::integral_constant<int, N>;

template <Pass kPass, typename T, int VEC, int ITERS, typename Launch>
cudaError_t LaunchInstance(Launch& launch) {
  if constexpr (kPass == Pass::kBackward && ((sizeof(T) == 2 && (VEC == 1 || ITERS == 0)) ||
                                             (sizeof(T) == 4 && VEC == 1 && ITERS != 0))) {
    return cudaErrorInvalidConfiguration;  // ChooseRowLayout never picks it (above)
  } else if constexpr (ITERS == 0 || HeldIters(kPass, static_cast<int>(sizeof(T)), VEC, ITERS) ||
                       ((ITERS & (ITERS - 1)) == 0 &&
                        (ITERS <= 8 || (kPass == Pass::kForward && VEC == 1 && sizeof(T) == 2) ||
                         (kPass == Pass::kForward && VEC == 2 && sizeof(T) == 4 && ITERS == 16)) &&
                        VEC * ITERS <= MaxElemsPerThread(kPass, static_cast<int>(sizeof(T))))) {
    return launch(IntConst<VEC>{}, IntConst<ITERS>{});
  } else {
    return cudaErrorInvalidConfiguration;  // ChooseRowLayout never picks it
  }
}

template <Pass kPass, typename T, int VEC, typename Launch>
cudaError_t DispatchIters(int iters, Launch& launch) {
  switch (iters) {
    case 0:
      return LaunchInstance<kPass, T, VEC, 0>(launch);
    case 1:
      return LaunchInstance<kPass, T, VEC, 1>(launch);
    case 2:
      return LaunchInstance<kPass, T, VEC, 2>(launch);
    case 4:
      return LaunchInstance<kPass, T, VEC, 4>(launch);
    case 5:
      return LaunchInstance<kPass, T, VEC, 5>(launch);
    case 6:
      return LaunchInstance<kPass, T, VEC, 6>(launch);
    case 7:
      return LaunchInstance<kPass, T, VEC, 7>(launch);
    case 8:
      return LaunchInstance<kPass, T, VEC, 8>(launch);
    case 16:
      return LaunchInstance<kPass, T, VEC, 16>(launch);
    case 32:
      return LaunchInstance<kPass, T, VEC, 32>(launch);
    default:
      return cudaErrorInvalidConfiguration;
  }
}

template <Pass kPass, typename T, typename Launch>
cudaError_t DispatchRowLayout(const RowLayout& layout, Launch&& launch) {
  constexpr int kWide = static_cast<int>(16 / sizeof(T));
  if (layout.vec == kWide) return DispatchIters<kPass, T, kWide>(layout.iters, launch);
  if (layout.vec == kWide / 2) return DispatchIters<kPass, T, kWide / 2>(layout.iters, launch);
  if (layout.vec == 1) return DispatchIters<kPass, T, 1>(layout.iters, launch);
  return cudaErrorInvalidConfiguration;
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_DISPATCH_CUH_
