// The forward launcher: layout from (dtype, hidden, alignment), then the
// dispatch table onto a kernel instance.
#ifndef NORMSERVE_KERNELS_CUDA_FORWARD_LAUNCH_CUH_
#define NORMSERVE_KERNELS_CUDA_FORWARD_LAUNCH_CUH_

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
      ForwardStreamKernel<T, kVec><<<static_cast<unsigned>(a.rows), kMaxThreads, 0, stream>>>(a);
    } else {
      const int64_t blocks = (a.rows + layout.rows_per_cta - 1) / layout.rows_per_cta;
      // At most one block per SM (MaxChunksPerSegment is 2 per SM): the launch
      // is latency-bound, so weight / bias are preloaded into shared memory
      // while the row is reduced (16-byte vectors only; cp.async).
      auto* kernel = &ForwardKernel<T, kVec, kIters, false>;
      size_t preload_bytes = 0;
      if constexpr (kVec * sizeof(T) == 16) {
        if (2 * blocks <= MaxChunksPerSegment()) {
          kernel = &ForwardKernel<T, kVec, kIters, true>;
          preload_bytes = 2 * sizeof(T) * static_cast<size_t>(layout.rows_per_cta) *
                          static_cast<size_t>(a.hidden);
          if (const cudaError_t err = AllowDynamicShared(kernel, preload_bytes);
              err != cudaSuccess) {
            return err;
          }
        }
      }
      kernel<<<static_cast<unsigned>(blocks), layout.threads(), preload_bytes, stream>>>(
          a, layout.tpr, layout.rows_per_cta);
    }
    return cudaGetLastError();
  });
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_FORWARD_LAUNCH_CUH_
