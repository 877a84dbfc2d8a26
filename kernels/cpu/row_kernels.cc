#include "row_kernels.h"

#include <algorithm>

#include "scratch.h"
#include "task_size.h"

// Function multiversioning: one clone per instruction set, chosen once by the
// dynamic loader. Only where GCC-compatible ifuncs exist (x86-64 ELF).
// Not under sanitizers: ifunc resolvers run before their runtime starts.
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define NORMSERVE_CPU_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "avx2", "default"), flatten))
#else
#define NORMSERVE_CPU_CLONES
#endif

namespace normserve::kernels::cpu {
namespace {

template <DType D>
using Storage = typename Element<D>::Storage;

// Row `row` of a [rows, hidden] tensor; null stays null.
template <typename T>
T* RowPointer(T* base, int64_t row, int64_t hidden) {
  return base == nullptr ? nullptr : base + row * hidden;
}

template <DType D, DType R>
inline void ForwardRows(const ForwardRowParams& params, const ForwardSegment& segment,
                        int64_t row_begin, int64_t row_end) {
  const int64_t d = params.hidden;
  float* scratch = ThreadScratch(0, d);
  const auto* x = static_cast<const Storage<D>*>(segment.x);
  const auto* y = static_cast<const Storage<D>*>(segment.y);
  auto* out = static_cast<Storage<D>*>(segment.out);
  auto* residual_out = static_cast<Storage<R>*>(segment.residual_out);
  for (int64_t row = row_begin; row < row_end; ++row) {
    ForwardRow<D, R>(params, RowPointer(x, row, d), RowPointer(y, row, d), RowPointer(out, row, d),
                     RowPointer(residual_out, row, d),
                     segment.mean == nullptr ? nullptr : segment.mean + row,
                     segment.rstd == nullptr ? nullptr : segment.rstd + row, scratch);
  }
}

template <DType D, DType R>
inline void BackwardRows(const BackwardRowParams& params, const BackwardSegment& segment,
                         int64_t row_begin, int64_t row_end, float* dw_partial, float* db_partial) {
  const int64_t d = params.hidden;
  float* scratch0 = ThreadScratch(0, d);
  float* scratch1 = ThreadScratch(1, d);
  if (dw_partial != nullptr) std::fill(dw_partial, dw_partial + d, 0.0f);
  if (db_partial != nullptr) std::fill(db_partial, db_partial + d, 0.0f);
  const auto* x = static_cast<const Storage<D>*>(segment.x);
  const auto* y = static_cast<const Storage<D>*>(segment.y);
  const auto* grad_out = static_cast<const Storage<D>*>(segment.grad_out);
  const auto* grad_residual_out = static_cast<const Storage<R>*>(segment.grad_residual_out);
  auto* grad_in = static_cast<Storage<D>*>(segment.grad_in);
  const int64_t ahead = PrefetchRowsAhead(d * static_cast<int64_t>(sizeof(Storage<D>)));
  for (int64_t row = row_begin; row < row_end; ++row) {
    RowStats saved;
    const bool have_saved = segment.mean != nullptr;
    if (have_saved) saved = {segment.mean[row], segment.rstd[row]};
    NextRowInputs<D> next;
    if (row + ahead < row_end) {
      next = {RowPointer(x, row + ahead, d), RowPointer(grad_out, row + ahead, d)};
    }
    BackwardRow<D, R>(params, RowPointer(x, row, d), RowPointer(y, row, d),
                      RowPointer(grad_out, row, d), RowPointer(grad_residual_out, row, d),
                      have_saved ? &saved : nullptr, RowPointer(grad_in, row, d), dw_partial,
                      db_partial, scratch0, scratch1, next);
  }
  // Before the pool reports the task done, after which other threads read grad_in.
  if (params.stream_grad_in) StreamFence();
}

// The instances: (dtype, residual dtype) in {(f32, f32), (f16, f16),
// (f16, f32), (bf16, bf16), (bf16, f32)}.
#define NORMSERVE_CPU_INSTANCE(NAME, D, R)                                                  \
  NORMSERVE_CPU_CLONES void Forward##NAME(const ForwardRowParams& params,                   \
                                          const ForwardSegment& segment, int64_t row_begin, \
                                          int64_t row_end) {                                \
    ForwardRows<D, R>(params, segment, row_begin, row_end);                                 \
  }                                                                                         \
  NORMSERVE_CPU_CLONES void Backward##NAME(                                                 \
      const BackwardRowParams& params, const BackwardSegment& segment, int64_t row_begin,   \
      int64_t row_end, float* dw_partial, float* db_partial) {                              \
    BackwardRows<D, R>(params, segment, row_begin, row_end, dw_partial, db_partial);        \
  }

NORMSERVE_CPU_INSTANCE(F32, DType::kF32, DType::kF32)
NORMSERVE_CPU_INSTANCE(F16, DType::kF16, DType::kF16)
NORMSERVE_CPU_INSTANCE(F16ResidualF32, DType::kF16, DType::kF32)
NORMSERVE_CPU_INSTANCE(BF16, DType::kBF16, DType::kBF16)
NORMSERVE_CPU_INSTANCE(BF16ResidualF32, DType::kBF16, DType::kF32)
#undef NORMSERVE_CPU_INSTANCE

NORMSERVE_CPU_CLONES void ReduceChunkPartialsImpl(const float* partials, int64_t chunks,
                                                  int64_t hidden, int64_t begin, int64_t end,
                                                  double factor, float* out) {
  double sums[kMaxReduceColumns] = {};
  const int64_t width = end - begin;
  for (int64_t c = 0; c < chunks; ++c) {
    const float* row = partials + c * hidden + begin;
    for (int64_t j = 0; j < width; ++j) sums[j] += static_cast<double>(row[j]);
  }
  for (int64_t j = 0; j < width; ++j) out[begin + j] = static_cast<float>(factor * sums[j]);
}

}  // namespace

void ReduceChunkPartials(const float* partials, int64_t chunks, int64_t hidden, int64_t begin,
                         int64_t end, double factor, float* out) {
  ReduceChunkPartialsImpl(partials, chunks, hidden, begin, end, factor, out);
}

ForwardRowsFn ForwardRowsFor(DType dtype, DType residual_dtype) {
  const bool f32_residual = residual_dtype == DType::kF32;
  switch (dtype) {
    case DType::kF32:
      return &ForwardF32;
    case DType::kF16:
      return f32_residual ? &ForwardF16ResidualF32 : &ForwardF16;
    case DType::kBF16:
      return f32_residual ? &ForwardBF16ResidualF32 : &ForwardBF16;
  }
  return nullptr;
}

BackwardRowsFn BackwardRowsFor(DType dtype, DType residual_dtype) {
  const bool f32_residual = residual_dtype == DType::kF32;
  switch (dtype) {
    case DType::kF32:
      return &BackwardF32;
    case DType::kF16:
      return f32_residual ? &BackwardF16ResidualF32 : &BackwardF16;
    case DType::kBF16:
      return f32_residual ? &BackwardBF16ResidualF32 : &BackwardBF16;
  }
  return nullptr;
}

void ConvertToFloat(DType dtype, const void* src, int64_t n, float* dst) {
  switch (dtype) {
    case DType::kF32:
      std::copy_n(static_cast<const float*>(src), n, dst);
      return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = HalfToFloat(static_cast<const uint16_t*>(src)[i]);
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = BFloat16ToFloat(static_cast<const uint16_t*>(src)[i]);
      }
      return;
  }
}

}  // namespace normserve::kernels::cpu
