// The forward launcher: layout from (dtype, hidden, alignment), then the
// dispatch table onto a kernel instance.
#ifndef NORMSERVE_KERNELS_CUDA_FORWARD_LAUNCH_CUH_
#define NORMSERVE_KERNELS_CUDA_FORWARD_LAUNCH_CUH_

#include <algorithm>

#include "dispatch.cuh"
#include "forward_kernels.cuh"
#include "forward_staged.cuh"
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
      // Fused residual on 16-bit rows of 15361-32768 elements (8 vectors per
      // thread): the staged kernel, over at most 2 blocks per SM. Measured on
      // the H100 (bench/results/gpu-2026-11-23-round4.md): add + RMSNorm
      // 8192 x 16384 435 -> 400 us, while plain RMSNorm / LayerNorm lost
      // (204 -> 223, 214 -> 292 us) and keep the register kernel. Its bits
      // equal the register kernel's (DeterminismTest mixes the two).
      if constexpr (sizeof(T) == 2 && kVec == 8 && kIters == 8) {
        if (a.y != nullptr) {
          auto* staged = &ForwardStagedKernel<T, kVec, kIters>;
          const size_t bytes = ForwardStagedSharedBytes(layout, a.hidden, sizeof(T));
          if (const cudaError_t err = AllowDynamicShared(staged, bytes); err != cudaSuccess) {
            return err;
          }
          const int64_t chunks = std::min<int64_t>(blocks, MaxChunksPerSegment());
          const int64_t chunk_rows = (a.rows + chunks - 1) / chunks;
          staged<<<static_cast<unsigned>(chunks), layout.threads(), bytes, stream>>>(
              a, layout.tpr, layout.rows_per_cta, chunk_rows);
          return cudaGetLastError();
        }
      }
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
