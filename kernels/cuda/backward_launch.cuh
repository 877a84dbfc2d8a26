// The backward launcher: chunk plan, stage one (rows -> dx and per-chunk
// dw / db partials), stage two (partials -> per-segment dw / db).
#ifndef NORMSERVE_KERNELS_CUDA_BACKWARD_LAUNCH_CUH_
#define NORMSERVE_KERNELS_CUDA_BACKWARD_LAUNCH_CUH_

#include "backward_kernels.cuh"
#include "backward_staged.cuh"
#include "dispatch.cuh"
#include "launch.h"
#include "row_layout.h"

namespace normserve::kernels::cuda {

// A layout with ctas_per_row > 1: BackwardKernel launched as clusters of that
// many blocks, one per chunk.
template <typename T, int VEC, int ITERS, bool kCenter>
cudaError_t LaunchClusterBackward(const BackwardArgs& a, const RowLayout& layout,
                                  int64_t chunk_rows, bool partials, cudaStream_t stream) {
  constexpr int kCtas = kClusterCtas;
  if (layout.ctas_per_row != kCtas || layout.rows_per_cta != 1) {
    return cudaErrorInvalidConfiguration;
  }
  // The plain instance gives the same bits as the generic one (see
  // BackwardRow) with fewer registers.
  const bool plain = a.y == nullptr && a.grad_residual_out == nullptr;
  auto* kernel = plain ? &BackwardKernel<T, VEC, ITERS, true, kCenter, kCtas>
                       : &BackwardKernel<T, VEC, ITERS, false, kCenter, kCtas>;
  const size_t acc_bytes =
      partials ? 2 * sizeof(float) * LocalRowLength<VEC, ITERS, kCtas>(a.hidden, layout.tpr) : 0;
  if (const cudaError_t err = AllowDynamicShared(kernel, acc_bytes); err != cudaSuccess) {
    return err;
  }
  return LaunchClusters(kernel, static_cast<unsigned>(a.total_chunks), kCtas,
                        static_cast<unsigned>(layout.threads()), acc_bytes, stream, a, layout.tpr,
                        layout.rows_per_cta, chunk_rows);
}

// Stage one for the layout's instance; kCenter: LayerNorm.
template <typename T, bool kCenter>
cudaError_t LaunchBackwardRows(const BackwardArgs& a, const RowLayout& layout, int64_t chunk_rows,
                               bool partials, cudaStream_t stream) {
  return DispatchRowLayout<Pass::kBackward, T>(layout, [&](auto vec, auto iters) {
    constexpr int kVec = decltype(vec)::value;
    constexpr int kIters = decltype(iters)::value;
    if constexpr (kIters == 0) {
      BackwardStreamKernel<T, kVec><<<a.total_chunks, kMaxThreads, 0, stream>>>(a, chunk_rows);
    } else {
      if (layout.ctas_per_row > 1) {
        // ChooseRowLayout splits only rows of full vectors, four per thread.
        if constexpr (kIters == 4 && kVec == 16 / sizeof(T)) {
          return LaunchClusterBackward<T, kVec, kIters, kCenter>(a, layout, chunk_rows, partials,
                                                                 stream);
        } else {
          return cudaErrorInvalidConfiguration;
        }
      }
      const bool plain = a.y == nullptr && a.grad_residual_out == nullptr;
      // Plain 16-bit rows of full vectors take the staged kernel; fp32 rows
      // measured faster on the register kernel (both on the H100,
      // bench/results/gpu-2026-11-23-round4.md).
      if constexpr (sizeof(T) == 2 && kVec == 8) {
        if (plain) {
          auto* staged = a.grad_bias != nullptr
                             ? &BackwardStagedKernel<T, kVec, kIters, true, kCenter>
                             : &BackwardStagedKernel<T, kVec, kIters, false, kCenter>;
          const size_t bytes = StagedSharedBytes(layout, a.hidden, sizeof(T));
          if (const cudaError_t err = AllowDynamicShared(staged, bytes); err != cudaSuccess) {
            return err;
          }
          staged<<<a.total_chunks, layout.threads(), bytes, stream>>>(
              a, layout.tpr, layout.rows_per_cta, chunk_rows);
          return cudaGetLastError();
        }
      }
      // dw / db accumulators: [2][rows_per_cta][hidden] fp32.
      const size_t acc_bytes = partials ? 2 * sizeof(float) * layout.rows_per_cta * a.hidden : 0;
      // The specialised "plain" instance (no y, no grad_residual_out) exists
      // for fp32 full-width vectors only (16-bit ones are staged), to keep
      // the instance count down.
      auto* kernel = &BackwardKernel<T, kVec, kIters, false, kCenter>;
      if constexpr (sizeof(T) == 4 && kVec != 1) {
        if (plain) kernel = &BackwardKernel<T, kVec, kIters, true, kCenter>;
      }
      if (const cudaError_t err = AllowDynamicShared(kernel, acc_bytes); err != cudaSuccess) {
        return err;
      }
      kernel<<<a.total_chunks, layout.threads(), acc_bytes, stream>>>(
          a, layout.tpr, layout.rows_per_cta, chunk_rows);
    }
    return cudaGetLastError();
  });
}

template <typename T>
cudaError_t LaunchBackwardTyped(const BackwardArgs& in, cudaStream_t stream) {
  BackwardArgs a = in;
  const bool aligned = VectorAligned(
      a.dtype, a.hidden, {a.x, a.y, a.grad_out, a.grad_residual_out, a.weight, a.grad_in});
  const RowLayout layout = ChooseRowLayout(Pass::kBackward, a.dtype, a.hidden, aligned);
  int64_t chunk_rows = 0;
  if (a.segments == nullptr) {
    a.num_segments = 1;
    a.total_chunks = BackwardChunks(a.rows, layout, MaxChunksPerSegment());
    chunk_rows = BackwardChunkRows(a.rows, a.total_chunks);
  }
  const bool partials = a.grad_weight != nullptr || a.grad_bias != nullptr;
  if (partials && a.workspace == nullptr) return cudaErrorInvalidValue;
  if (!partials) a.workspace = nullptr;
  if (a.num_segments < 1 || a.num_segments > 65535) return cudaErrorInvalidValue;

  if (a.total_chunks > 0) {
    const cudaError_t err =
        a.norm.center ? LaunchBackwardRows<T, true>(a, layout, chunk_rows, partials, stream)
                      : LaunchBackwardRows<T, false>(a, layout, chunk_rows, partials, stream);
    if (err != cudaSuccess) return err;
  }
  if (partials) {
    const dim3 grid(static_cast<unsigned>((a.hidden + 31) / 32), a.num_segments, 2);
    ReducePartialsKernel<T><<<grid, dim3(32, kReduceLanes), 0, stream>>>(a, a.total_chunks);
    return cudaGetLastError();
  }
  return cudaSuccess;
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_BACKWARD_LAUNCH_CUH_
