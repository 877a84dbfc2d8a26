// The fused residual forward (p = x + y) for 16-bit rows too long to keep
// enough of them in flight in one block per row (more than 16384 elements, 8
// vectors per thread; forward_launch.cuh):
// persistent blocks walk a chunk of rows, and each thread copies its own
// vectors of the next row's x and y into shared memory with cp.async while the
// current row is reduced and written, reading back only those bytes, so the
// pipeline needs no block barrier. The arithmetic and its order are
// ForwardKernel's (p = x + y, the same RowStats sums,
// o = (p - mean) * mul * w + b), so a row's bits do not depend on which of
// the two ran (a launch with y may hold rows without; theirs is 0).
#ifndef NORMSERVE_KERNELS_CUDA_FORWARD_STAGED_CUH_
#define NORMSERVE_KERNELS_CUDA_FORWARD_STAGED_CUH_

#include "async_copy.cuh"
#include "forward_kernels.cuh"

namespace normserve::kernels::cuda {

// Dynamic shared memory of a staged forward: [2 stages][rows_per_cta][x, y][hidden].
inline size_t ForwardStagedSharedBytes(const RowLayout& layout, int64_t hidden, size_t elem_size) {
  return 2 * 2 * elem_size * static_cast<size_t>(layout.rows_per_cta) * static_cast<size_t>(hidden);
}

template <typename T, int VEC, int ITERS, bool kCenter>
__global__ void __launch_bounds__(kMaxThreads)
    ForwardStagedKernel(const ForwardArgs a, const int tpr, const int rows_per_cta,
                        const int64_t chunk_rows) {
  static_assert(sizeof(T) * VEC == 16, "staged rows move 16-byte vectors");
  extern __shared__ __align__(16) unsigned char staged[];
  __shared__ float scratch_buffers[GroupScratch::kFloats];
  GroupScratch scratch{scratch_buffers};
  const int group = threadIdx.x / tpr;
  const int t = threadIdx.x - group * tpr;
  const int d = static_cast<int>(a.hidden);
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * chunk_rows;
  const int64_t end = min(a.rows, begin + chunk_rows);
  const T* x = static_cast<const T*>(a.x);
  const T* y = static_cast<const T*>(a.y);
  const bool residual_f32 = a.residual_dtype == DType::kF32;

  // This group's x (which = 0) or y (which = 1) row in stage s.
  auto slot = [&](int s, int which) {
    return reinterpret_cast<T*>(staged) +
           (static_cast<int64_t>(s * rows_per_cta + group) * 2 + which) * d;
  };
  // Starts copying `row` into stage s (zeros for a row past the chunk).
  auto stage_row = [&](int64_t row, int s) {
    const bool live = row < end;
    const int64_t base = live ? row * a.hidden : 0;
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int col = (it * tpr + t) * VEC;
      if (col < d) {
        CpAsync16(slot(s, 0) + col, x + base + col, live);
        CpAsync16(slot(s, 1) + col, y + base + col, live);
      }
    }
    CpAsyncCommit();
  };
  // Vector `it` of p = x + y (zeros past the row's end).
  auto load_p = [&](int s, int it, float(&p)[VEC]) {
    const int col = (it * tpr + t) * VEC;
    float yv[VEC] = {};
    if (col < d) {
      LoadFloats(slot(s, 0) + col, p);
      LoadFloats(slot(s, 1) + col, yv);
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) p[i] = 0.0f;
    }
#pragma unroll
    for (int i = 0; i < VEC; ++i) p[i] += yv[i];
  };

  const int64_t steps = (end - begin + rows_per_cta - 1) / rows_per_cta;
  int64_t row = begin + group;
  stage_row(row, 0);
  for (int64_t step = 0; step < steps; ++step) {
    const int s = static_cast<int>(step & 1);
    const int64_t next = row + rows_per_cta;
    const bool live = row < end;
    stage_row(next, s ^ 1);  // the stage this thread read in the previous step
    CpAsyncWait<1>();        // this row's copies have landed

    float mean, rstd;
    RowStatsOf<kCenter, VEC, ITERS>([&](int it, float(&v)[VEC]) { load_p(s, it, v); }, tpr, t, d,
                                    a.norm, scratch, mean, rstd);
    const float mul = rstd * a.norm.scale;
    const int64_t base = row * a.hidden;
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int col = (it * tpr + t) * VEC;
      if (!live || col >= d) continue;
      float p[VEC], w[VEC], b[VEC], o[VEC];
      load_p(s, it, p);
      if (a.weight != nullptr) {
        LoadFloats(static_cast<const T*>(a.weight) + col, w);
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) w[i] = 1.0f;
      }
      if (a.bias != nullptr) {
        LoadFloats(static_cast<const T*>(a.bias) + col, b);
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) b[i] = 0.0f;
      }
#pragma unroll
      for (int i = 0; i < VEC; ++i) o[i] = (p[i] - mean) * mul * w[i] + b[i];
      StoreFloats(static_cast<T*>(a.out) + base + col, o);
      if (a.residual_out != nullptr) {
        StoreFloatsEither<T>(a.residual_out, base + col, residual_f32, p);
      }
    }
    if (live && t == 0) {
      if (a.mean != nullptr) a.mean[row] = mean;
      if (a.rstd != nullptr) a.rstd[row] = rstd;
    }
    row = next;
  }
  CpAsyncWait<0>();  // the last (empty) stage's copies
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_FORWARD_STAGED_CUH_
