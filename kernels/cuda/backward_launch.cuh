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
  // Only the generic instance: plain rows are staged.
  auto* kernel = &BackwardKernel<T, VEC, ITERS, false, kCenter, kCtas>;
  const size_t acc_bytes =
      partials ? 2 * sizeof(float) * LocalRowLength<VEC, ITERS, kCtas>(a.hidden, layout.tpr) : 0;
  if (const cudaError_t err = AllowDynamicShared(kernel, acc_bytes); err != cudaSuccess) {
    return err;
  }
  return LaunchClusters(kernel, static_cast<unsigned>(a.total_chunks), kCtas,
                        static_cast<unsigned>(layout.threads()), acc_bytes, stream, a, layout.tpr,
                        layout.rows_per_cta, chunk_rows);
}

// Plain rows of full vectors, staged (BackwardStagedKernel), one block (kCtas
// 1) or cluster per chunk. Measured on the H100: 16-bit rows faster staged,
// fp32 rows of one block on the register kernel (round4.md); rows split over
// a cluster faster staged in both (round7.md: fp32 8192 x 16384 RMSNorm
// 686 -> 629 us, LayerNorm 716 -> 657 us; bf16 4096 x 20000 361 -> 280 us,
// 430 -> 330 us).
template <typename T, int VEC, int ITERS, bool kCenter, int kCtas>
cudaError_t LaunchStagedBackward(const BackwardArgs& a, const RowLayout& layout, int64_t chunk_rows,
                                 cudaStream_t stream) {
  auto* kernel = a.grad_bias != nullptr
                     ? &BackwardStagedKernel<T, VEC, ITERS, true, kCenter, kCtas>
                     : &BackwardStagedKernel<T, VEC, ITERS, false, kCenter, kCtas>;
  const size_t bytes = StagedSharedBytes(
      layout.rows_per_cta, LocalRowLength<VEC, ITERS, kCtas>(a.hidden, layout.tpr), sizeof(T));
  if (const cudaError_t err = AllowDynamicShared(kernel, bytes); err != cudaSuccess) return err;
  if constexpr (kCtas == 1) {
    kernel<<<a.total_chunks, layout.threads(), bytes, stream>>>(a, layout.tpr, layout.rows_per_cta,
                                                                chunk_rows);
    return cudaGetLastError();
  } else {
    return LaunchClusters(kernel, static_cast<unsigned>(a.total_chunks), kCtas,
                          static_cast<unsigned>(layout.threads()), bytes, stream, a, layout.tpr,
                          layout.rows_per_cta, chunk_rows);
  }
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
      const bool plain = a.y == nullptr && a.grad_residual_out == nullptr;
      constexpr bool kStageable = sizeof(T) == 2 && kVec == 8;
      if (layout.ctas_per_row > 1) {
        // ChooseRowLayout splits only rows of full vectors, four per thread,
        // into clusters of kClusterCtas blocks holding one row each.
        constexpr bool kSplit = kVec == 16 / sizeof(T) && kIters == 4;
        if (layout.ctas_per_row != kClusterCtas || layout.rows_per_cta != 1) {
          return cudaErrorInvalidConfiguration;
        }
        if constexpr (kSplit) {
          if (plain) {
            return LaunchStagedBackward<T, kVec, kIters, kCenter, kClusterCtas>(a, layout,
                                                                                chunk_rows, stream);
          }
          return LaunchClusterBackward<T, kVec, kIters, kCenter>(a, layout, chunk_rows, partials,
                                                                 stream);
        } else {
          return cudaErrorInvalidConfiguration;
        }
      }
      if constexpr (kStageable) {
        if (plain) {
          return LaunchStagedBackward<T, kVec, kIters, kCenter, 1>(a, layout, chunk_rows, stream);
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

// Blocks per SM of the layout's stage-one kernel, counted up to 2 (see
// MaxBackwardChunks). Taken from the plain LayerNorm-with-bias instance (the
// most registers) whatever the launch will run, so that a segment's chunk plan,
// and with it its dw / db bits, never depends on its neighbours.
template <typename T>
int BackwardBlocksPerSm(const RowLayout& layout, int64_t hidden) {
  int blocks = 0;
  const cudaError_t err =
      DispatchRowLayout<Pass::kBackward, T>(layout, [&](auto vec, auto iters) -> cudaError_t {
        constexpr int kVec = decltype(vec)::value;
        constexpr int kIters = decltype(iters)::value;
        auto occupancy = [&](auto* kernel, size_t bytes) {
          if (const cudaError_t e = AllowDynamicShared(kernel, bytes); e != cudaSuccess) return e;
          return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, layout.threads(),
                                                               bytes);
        };
        if constexpr (kIters == 0) {
          return occupancy(&BackwardStreamKernel<T, kVec>, 0);
        } else if constexpr (kVec == 16 / sizeof(T) && kIters == 4) {
          if (layout.ctas_per_row > 1) {
            const int64_t len = LocalRowLength<kVec, kIters, kClusterCtas>(hidden, layout.tpr);
            return occupancy(&BackwardStagedKernel<T, kVec, kIters, true, true, kClusterCtas>,
                             StagedSharedBytes(layout.rows_per_cta, len, sizeof(T)));
          }
        }
        if constexpr (kIters != 0) {
          if constexpr (sizeof(T) == 2 && kVec == 8) {
            return occupancy(&BackwardStagedKernel<T, kVec, kIters, true, true, 1>,
                             StagedSharedBytes(layout.rows_per_cta, hidden, sizeof(T)));
          } else {
            constexpr bool kPlain = sizeof(T) == 4 && kVec != 1;
            return occupancy(&BackwardKernel<T, kVec, kIters, kPlain, true>,
                             2 * sizeof(float) * layout.rows_per_cta * hidden);
          }
        }
        return cudaErrorInvalidConfiguration;
      });
  if (err != cudaSuccess || blocks < 1) return 2;
  return blocks < 2 ? 1 : 2;
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
    a.total_chunks = BackwardChunks(a.rows, layout, MaxBackwardChunks(a.dtype, a.hidden, layout));
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
