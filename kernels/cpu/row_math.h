// The per-row math of the CPU backend: seed 004's forward and backward for one
// row, with seed 003's partial statistic, in fp32.
//
// Each function reads a row from memory once, then makes short passes over it
// (L1/L2 resident) that the compiler vectorizes: forward over fp32 x itself
// or an fp32 scratch copy, backward over the row itself where its dtype
// converts cheaply (ReadType). Reductions use BlockedSum, whose order of operations is fixed
// by the row length alone; the library is compiled with -ffp-contract=off, so
// a row's results are bitwise the same whatever its address, thread or batch.
//
// Notation as in norm_config.h: p = x + y, q = p - mean (mean = 0 for
// RMSNorm), sigma = sqrt(sum_{i<k} q_i^2 / k + eps), rstd = 1 / sigma,
// r = q * rstd, o = scale * r * w + b with scale = c / sqrt(d).
#ifndef NORMSERVE_KERNELS_CPU_ROW_MATH_H_
#define NORMSERVE_KERNELS_CPU_ROW_MATH_H_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "element.h"
#include "normserve/kernels/dtype.h"

namespace normserve::kernels::cpu {

// What every row of a forward batch shares.
struct ForwardRowParams {
  int64_t hidden = 0;       // d
  int64_t stat_length = 0;  // k, in [1, d]
  bool center = false;      // LayerNorm when true
  float eps = 0.0f;
  float scale = 1.0f;             // c / sqrt(d)
  const float* weight = nullptr;  // fp32 [d]; null when the batch has none (w = 1)
  const float* bias = nullptr;    // fp32 [d]; null when the batch has none (b = 0)
};

// What every row of a backward batch shares.
struct BackwardRowParams {
  int64_t hidden = 0;
  int64_t stat_length = 0;
  bool center = false;
  float eps = 0.0f;
  float scale = 1.0f;
  const float* scaled_weight = nullptr;  // fp32 [d]: scale * w (scale when no weight)
  // Write grad_in with non-temporal stores: for batches too large for the
  // cache to hold them, where the lines written would be evicted unread.
  bool stream_grad_in = false;
};

struct RowStats {
  float mean = 0.0f;  // 0 for RMSNorm
  float rstd = 0.0f;  // 1 / sigma
};

// Sums of N streams of terms over i in [begin, end): term(i) returns the N
// terms of element i as std::array<float, N> (and may store per-element
// results as a side effect). Each stream is summed in 16 fp32 lanes inside
// blocks of 1024 elements counted from begin (a lane adds at most 64 terms),
// lanes combined as a tree, block sums added in double. The order of
// operations depends on end - begin only, so the results do too.
template <int N, typename Term>
inline std::array<double, N> BlockedSums(int64_t begin, int64_t end, Term term) {
  constexpr int kLanes = 16;
  constexpr int64_t kBlock = 1024;
  std::array<double, N> totals{};
  for (int64_t block = begin; block < end; block += kBlock) {
    const int64_t len = std::min(kBlock, end - block);
    float lanes[N][kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= len; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) {
        const std::array<float, N> t = term(block + i + j);
        for (int s = 0; s < N; ++s) lanes[s][j] += t[s];
      }
    }
    for (int j = 0; i + j < len; ++j) {
      const std::array<float, N> t = term(block + i + j);
      for (int s = 0; s < N; ++s) lanes[s][j] += t[s];
    }
    for (int s = 0; s < N; ++s) {
      for (int width = kLanes / 2; width > 0; width /= 2) {
        for (int j = 0; j < width; ++j) lanes[s][j] += lanes[s][j + width];
      }
      totals[s] += lanes[s][0];
    }
  }
  return totals;
}

// The sum of one stream of terms over [0, n), as BlockedSums.
template <typename Term>
inline double BlockedSum(int64_t n, Term term) {
  return BlockedSums<1>(0, n, [&term](int64_t i) { return std::array<float, 1>{term(i)}; })[0];
}

// mean and rstd of the fp32 row p: the one definition both forward and
// backward (when statistics are not saved) use, so they agree bitwise.
inline RowStats ComputeRowStats(const float* p, int64_t hidden, int64_t stat_length, bool center,
                                float eps) {
  RowStats stats;
  if (center) {
    stats.mean = static_cast<float>(BlockedSum(hidden, [p](int64_t i) { return p[i]; }) /
                                    static_cast<double>(hidden));
  }
  const float mean = stats.mean;
  const double sum_sq = BlockedSum(stat_length, [p, mean](int64_t i) {
    const float q = p[i] - mean;
    return q * q;
  });
  const double variance = sum_sq / static_cast<double>(stat_length) + static_cast<double>(eps);
  stats.rstd = static_cast<float>(1.0 / std::sqrt(variance));
  return stats;
}

// p[i] = x[i] + y[i] in fp32 (y = 0 when null); also stores p into
// residual_out (in dtype R) when that is not null.
template <DType D, DType R>
inline void LoadResidualSum(const typename Element<D>::Storage* x,
                            const typename Element<D>::Storage* y,
                            typename Element<R>::Storage* residual_out, float* p, int64_t hidden) {
  using E = Element<D>;
  using ER = Element<R>;
  if (y != nullptr && residual_out != nullptr) {
    for (int64_t i = 0; i < hidden; ++i) {
      p[i] = E::Load(x[i]) + E::Load(y[i]);
      residual_out[i] = ER::Store(p[i]);
    }
  } else if (y != nullptr) {
    for (int64_t i = 0; i < hidden; ++i) p[i] = E::Load(x[i]) + E::Load(y[i]);
  } else if (residual_out != nullptr) {
    for (int64_t i = 0; i < hidden; ++i) {
      p[i] = E::Load(x[i]);
      residual_out[i] = ER::Store(p[i]);
    }
  } else {
    for (int64_t i = 0; i < hidden; ++i) p[i] = E::Load(x[i]);
  }
}

// The fp32 row p = x + y: x itself when no conversion or addition is needed,
// otherwise converted into scratch (which must hold hidden floats).
template <DType D>
inline const float* ResidualSumRow(const typename Element<D>::Storage* x,
                                   const typename Element<D>::Storage* y, int64_t hidden,
                                   float* scratch) {
  if constexpr (D == DType::kF32) {
    if (y == nullptr) return x;
  }
  LoadResidualSum<D, D>(x, y, nullptr, scratch, hidden);
  return scratch;
}

// Forward for one row. scratch holds hidden floats. mean and rstd (optional)
// receive the row statistics.
template <DType D, DType R>
inline void ForwardRow(const ForwardRowParams& params, const typename Element<D>::Storage* x,
                       const typename Element<D>::Storage* y, typename Element<D>::Storage* out,
                       typename Element<R>::Storage* residual_out, float* mean, float* rstd,
                       float* scratch) {
  using E = Element<D>;
  const int64_t d = params.hidden;
  const float* p;
  if (residual_out != nullptr) {
    LoadResidualSum<D, R>(x, y, residual_out, scratch, d);
    p = scratch;
  } else {
    p = ResidualSumRow<D>(x, y, d, scratch);
  }
  const RowStats stats = ComputeRowStats(p, d, params.stat_length, params.center, params.eps);
  if (mean != nullptr) *mean = stats.mean;
  if (rstd != nullptr) *rstd = stats.rstd;

  const float m = stats.mean;
  const float a = stats.rstd * params.scale;  // o = (q * rstd * scale) * w + b
  const float* w = params.weight;
  const float* b = params.bias;
  // One loop per presence of w and b, so none reads a constant array.
  if (w != nullptr && b != nullptr) {
    for (int64_t i = 0; i < d; ++i) out[i] = E::Store((p[i] - m) * a * w[i] + b[i]);
  } else if (w != nullptr) {
    for (int64_t i = 0; i < d; ++i) out[i] = E::Store((p[i] - m) * a * w[i]);
  } else if (b != nullptr) {
    for (int64_t i = 0; i < d; ++i) out[i] = E::Store((p[i] - m) * a + b[i]);
  } else {
    for (int64_t i = 0; i < d; ++i) out[i] = E::Store((p[i] - m) * a);
  }
}

// Backward reads a row's p (x, or x + y) and dy in "read dtypes" P and G:
// either the row's own dtype, converted on every pass where Load is cheap
// (fp32, bf16), or fp32 scratch rows filled once (fp16; p = x + y; p whose
// statistics must be recomputed). Converting in place saves writing and
// re-reading two fp32 scratch rows per row; both ways give the same values.
template <DType P>
using ReadType = typename Element<P>::Storage;

// The row sums of pass 1 of a backward row.
struct BackwardSums {
  double r_dot_dr = 0.0;  // sum r * dr
  double sum_dr = 0.0;    // sum dr (LayerNorm only)
  double sum_rk = 0.0;    // sum_{i<k} r (LayerNorm only)
};

// Pass 1 of a backward row (reads only): with r = (p - m) * rstd and
// dr = dy * sw (sw = scale * w), the sums r . dr and, when center, sum(dr)
// and sum_{i<k} r.
template <DType P, DType G>
inline BackwardSums SumBackwardRow(const ReadType<P>* p, const ReadType<G>* dy, const float* sw,
                                   float m, float rstd, int64_t k, int64_t d, bool center) {
  auto r_at = [=](int64_t i) { return (Element<P>::Load(p[i]) - m) * rstd; };
  auto dr_at = [=](int64_t i) { return Element<G>::Load(dy[i]) * sw[i]; };
  BackwardSums sums;
  if (center) {
    const std::array<double, 3> head = BlockedSums<3>(0, k, [=](int64_t i) {
      const float r = r_at(i);
      const float dr = dr_at(i);
      return std::array<float, 3>{dr * r, dr, r};
    });
    const std::array<double, 2> tail = BlockedSums<2>(k, d, [=](int64_t i) {
      const float dr = dr_at(i);
      return std::array<float, 2>{dr * r_at(i), dr};
    });
    sums.r_dot_dr = head[0] + tail[0];
    sums.sum_dr = head[1] + tail[1];
    sums.sum_rk = head[2];
  } else {
    sums.r_dot_dr = BlockedSum(d, [=](int64_t i) { return dr_at(i) * r_at(i); });
  }
  return sums;
}

// The last pass of a backward row, for i < n (elements [0, n) of the row's
// arrays, k of them within the statistic's length):
//   r = (p - m) * rstd
//   dq = rstd * (dr - [i < k] r * coef)   with dr = dy * sw (sw = scale * w)
//   grad_in = dq - mean_dq (+ grad_residual_out)
//   dw += dy * r, db += dy                (when kDw / kDb)
// The buffers never overlap (restrict: grad_in must not alias an input), so
// the loops vectorize without run-time alias checks.
template <DType P, DType G, DType D, DType R, bool kResidual, bool kDw, bool kDb>
inline void FinishBackwardRange(const ReadType<G>* __restrict dy, const float* __restrict sw,
                                const ReadType<P>* __restrict p, float m,
                                const typename Element<R>::Storage* __restrict grad_residual_out,
                                typename Element<D>::Storage* __restrict grad_in,
                                float* __restrict dw, float* __restrict db, int64_t k, int64_t n,
                                float rstd, float coef, float mean_dq) {
  // The body is written out in each loop (no lambda): accesses through a
  // closure lose the restrict qualifiers, and fp32 loops then stay scalar.
  for (int64_t i = 0; i < k; ++i) {
    const float g = Element<G>::Load(dy[i]);
    const float r = (Element<P>::Load(p[i]) - m) * rstd;
    float dx = rstd * (g * sw[i] - r * coef) - mean_dq;
    if constexpr (kResidual) dx += Element<R>::Load(grad_residual_out[i]);
    grad_in[i] = Element<D>::Store(dx);
    if constexpr (kDw) dw[i] += g * r;
    if constexpr (kDb) db[i] += g;
  }
  for (int64_t i = k; i < n; ++i) {
    const float g = Element<G>::Load(dy[i]);
    const float r = (Element<P>::Load(p[i]) - m) * rstd;
    float dx = rstd * (g * sw[i]) - mean_dq;
    if constexpr (kResidual) dx += Element<R>::Load(grad_residual_out[i]);
    grad_in[i] = Element<D>::Store(dx);
    if constexpr (kDw) dw[i] += g * r;
    if constexpr (kDb) db[i] += g;
  }
}

// Copies bytes from src to dst, with non-temporal stores where dst is 16-byte
// aligned: those do not read dst's cache lines from memory before writing
// them, a quarter of a large backward's memory traffic. The caller issues
// StreamFence before other threads may read dst.
inline void StreamStore(void* dst, const void* src, int64_t bytes) {
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  int64_t at = std::min<int64_t>(bytes, (16 - reinterpret_cast<uintptr_t>(out) % 16) % 16);
  std::memcpy(out, in, at);
#if defined(__SSE2__)
  for (; at + 16 <= bytes; at += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + at),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + at)));
  }
#endif
  std::memcpy(out + at, in + at, bytes - at);
}

// Orders this thread's earlier StreamStore writes before its later stores.
inline void StreamFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// x and dy of a later row of the batch (PrefetchRowsAhead in task_size.h),
// which a backward row prefetches (null: none).
template <DType D>
struct NextRowInputs {
  const typename Element<D>::Storage* x = nullptr;
  const typename Element<D>::Storage* grad_out = nullptr;
};

// Asks for the cache lines of [base, base + bytes) to be brought into L2.
inline void PrefetchToL2(const void* base, int64_t bytes) {
  const char* first = static_cast<const char*>(base);
  for (int64_t at = 0; at < bytes; at += 64) __builtin_prefetch(first + at, 0, 2);
}

// Pass 2 of a backward row (FinishBackwardRange) in pieces, two things
// interleaved with it:
//  - after each piece, a prefetch of the same piece of a later row's x and
//    dy (next). Pass 1 streams a row from memory while pass 2 works from L1/L2 and
//    leaves the memory bus idle; this keeps it busy. Locality 2 (prefetcht1,
//    L2) measured faster on Zen 4 than 3 (prefetcht0): filling L1 as well
//    evicts this pass's operands.
//  - with stream, dx is written into an L1 staging piece, then to grad_in
//    with StreamStore.
template <DType P, DType G, DType D, DType R, bool kResidual, bool kDw, bool kDb>
inline void FinishBackwardRow(const ReadType<G>* dy, const float* sw, const ReadType<P>* p, float m,
                              const typename Element<R>::Storage* grad_residual_out,
                              typename Element<D>::Storage* grad_in, float* dw, float* db,
                              int64_t k, int64_t d, float rstd, float coef, float mean_dq,
                              bool stream, const NextRowInputs<D>& next) {
  using Out = typename Element<D>::Storage;
  constexpr int64_t kPiece = 512;
  alignas(64) Out staging[kPiece];
  for (int64_t begin = 0; begin < d; begin += kPiece) {
    const int64_t n = std::min(kPiece, d - begin);
    const int64_t piece_bytes = n * static_cast<int64_t>(sizeof(Out));
    FinishBackwardRange<P, G, D, R, kResidual, kDw, kDb>(
        dy + begin, sw + begin, p + begin, m, kResidual ? grad_residual_out + begin : nullptr,
        stream ? staging : grad_in + begin, kDw ? dw + begin : nullptr, kDb ? db + begin : nullptr,
        std::clamp<int64_t>(k - begin, 0, n), n, rstd, coef, mean_dq);
    if (stream) StreamStore(grad_in + begin, staging, piece_bytes);
    if (next.x != nullptr) {
      PrefetchToL2(next.x + begin, piece_bytes);
      PrefetchToL2(next.grad_out + begin, piece_bytes);
    }
  }
}

// Backward for one row from p and dy in read dtypes P and G (see ReadType)
// and the row's statistics; the rest as BackwardRow.
template <DType P, DType G, DType D, DType R>
inline void BackwardRowFrom(const BackwardRowParams& params, const ReadType<P>* p,
                            const ReadType<G>* dy, RowStats stats,
                            const typename Element<R>::Storage* grad_residual_out,
                            typename Element<D>::Storage* grad_in, float* dw_partial,
                            float* db_partial, const NextRowInputs<D>& next) {
  const int64_t d = params.hidden;
  const int64_t k = params.stat_length;
  const float m = stats.mean;
  const float rstd = stats.rstd;
  const float* sw = params.scaled_weight;
  const BackwardSums sums = SumBackwardRow<P, G>(p, dy, sw, m, rstd, k, d, params.center);

  // dq = rstd * (dr - [i < k] r * (r . dr) / k); dp = dq - mean(dq) for
  // LayerNorm, where mean(dq) = rstd * (sum(dr) - (r . dr) / k * sum_{i<k} r) / d.
  const double coef_d = sums.r_dot_dr / static_cast<double>(k);
  double mean_dq_d = 0.0;
  if (params.center) {
    mean_dq_d =
        static_cast<double>(rstd) * (sums.sum_dr - coef_d * sums.sum_rk) / static_cast<double>(d);
  }
  const float coef = static_cast<float>(coef_d);
  const float mean_dq = static_cast<float>(mean_dq_d);

  // Pass 2: dx and the chunk partials of dw and db.
  auto finish = [&](auto residual, auto with_dw, auto with_db) {
    FinishBackwardRow<P, G, D, R, decltype(residual)::value, decltype(with_dw)::value,
                      decltype(with_db)::value>(dy, sw, p, m, grad_residual_out, grad_in,
                                                dw_partial, db_partial, k, d, rstd, coef, mean_dq,
                                                params.stream_grad_in, next);
  };
  auto with_partials = [&](auto residual) {
    if (dw_partial != nullptr && db_partial != nullptr) {
      finish(residual, std::true_type(), std::true_type());
    } else if (dw_partial != nullptr) {
      finish(residual, std::true_type(), std::false_type());
    } else if (db_partial != nullptr) {
      finish(residual, std::false_type(), std::true_type());
    } else {
      finish(residual, std::false_type(), std::false_type());
    }
  };
  if (grad_residual_out != nullptr) {
    with_partials(std::true_type());
  } else {
    with_partials(std::false_type());
  }
}

// Backward for one row: grad_in = dp (+ grad_residual_out), and the row's
// terms added to the per-chunk partial sums dw_partial += dy * r and
// db_partial += dy (each optional; dw is scaled by c / sqrt(d) by the caller).
// stats: the saved statistics, or null to recompute them from x and y.
// scratch0 and scratch1 hold hidden floats each.
template <DType D, DType R>
inline void BackwardRow(const BackwardRowParams& params, const typename Element<D>::Storage* x,
                        const typename Element<D>::Storage* y,
                        const typename Element<D>::Storage* grad_out,
                        const typename Element<R>::Storage* grad_residual_out,
                        const RowStats* saved_stats, typename Element<D>::Storage* grad_in,
                        float* dw_partial, float* db_partial, float* scratch0, float* scratch1,
                        const NextRowInputs<D>& next) {
  using E = Element<D>;
  const int64_t d = params.hidden;
  if constexpr (E::kCheapLoad) {
    if (y == nullptr && saved_stats != nullptr) {  // p = x, read in place
      BackwardRowFrom<D, D, D, R>(params, x, grad_out, *saved_stats, grad_residual_out, grad_in,
                                  dw_partial, db_partial, next);
      return;
    }
  }
  const float* p = ResidualSumRow<D>(x, y, d, scratch0);
  const RowStats stats = saved_stats != nullptr
                             ? *saved_stats
                             : ComputeRowStats(p, d, params.stat_length, params.center, params.eps);
  if constexpr (E::kCheapLoad) {
    BackwardRowFrom<DType::kF32, D, D, R>(params, p, grad_out, stats, grad_residual_out, grad_in,
                                          dw_partial, db_partial, next);
  } else {
    for (int64_t i = 0; i < d; ++i) scratch1[i] = E::Load(grad_out[i]);
    BackwardRowFrom<DType::kF32, DType::kF32, D, R>(params, p, scratch1, stats, grad_residual_out,
                                                    grad_in, dw_partial, db_partial, next);
  }
}

}  // namespace normserve::kernels::cpu

#endif  // NORMSERVE_KERNELS_CPU_ROW_MATH_H_
