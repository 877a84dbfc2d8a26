// The forward launcher: layout from (dtype, hidden, alignment), then the
// dispatch table onto a kernel instance.
#ifndef NORMSERVE_KERNELS_CUDA_FORWARD_LAUNCH_CUH_
#define NORMSERVE_KERNELS_CUDA_FORWARD_LAUNCH_CUH_

#include <cstdlib>

#include "dispatch.cuh"
#include "forward_kernels.cuh"
#include "launch.h"
#include "row_layout.h"

namespace normserve::kernels::cuda {

template <typename T>
cudaError_t LaunchForwardTyped(const ForwardArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return cudaSuccess;
  const bool aligned =
      VectorAligned(a.dtype, a.hidden, {a.x, a.y, a.weight, a.bias, a.out, a.residual_out});
  const RowLayout layout = ChooseRowLayout(Pass::kForward, a.dtype, a.hidden, aligned);
  return DispatchRowLayout<Pass::kForward, T>(layout, [&](auto vec, auto iters) {
    constexpr int kVec = decltype(vec)::value;
    constexpr int kIters = decltype(iters)::value;
    if constexpr (kIters == 0) {
      ForwardStreamKernel<T, kVec>
          <<<static_cast<unsigned>(a.rows), kMaxThreads, 0, stream>>>(a);
    } else {
      const int64_t blocks = (a.rows + layout.rows_per_cta - 1) / layout.rows_per_cta;
      // At most one block per SM (MaxChunksPerSegment is 2 per SM): the launch
      // is latency-bound, so weight / bias are loaded up front. Experiment
      // knob (benchmark only): NORMSERVE_CUDA_PRELOAD=0 turns that off.
      static const bool preload_off = [] {
        const char* v = std::getenv("NORMSERVE_CUDA_PRELOAD");
        return v != nullptr && v[0] == '0';
      }();
      auto* kernel = &ForwardKernel<T, kVec, kIters, false>;
      // fp32 only, up to 32 elements per thread: measured on the H100
      // (bench/results/gpu-2026-11-23-round2.md), fp32 256 x 4096 / 1 x 4096
      // gain 1.3-2.5 us per call, while the 16-bit 8 x 4 preload instance
      // spills (128 registers) and lost 1.7-3.2 us.
      if constexpr (sizeof(T) == 4 && kVec * kIters <= 32) {
        if (!preload_off && 2 * blocks <= MaxChunksPerSegment()) {
          kernel = &ForwardKernel<T, kVec, kIters, true>;
        }
      }
      kernel<<<static_cast<unsigned>(blocks), layout.threads(), 0, stream>>>(a, layout.tpr,
                                                                          layout.rows_per_cta);
    }
    return cudaGetLastError();
  });
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_FORWARD_LAUNCH_CUH_
