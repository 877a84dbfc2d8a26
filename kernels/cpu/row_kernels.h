// The CPU backend's table from (dtype, residual dtype) to compiled row
// kernels: the one place where the templates of row_math.h are instantiated.
//
// Each kernel is compiled for x86-64-v4 (AVX-512), AVX2 and baseline x86-64
// and picks the best at load time (function multiversioning), so one binary
// runs on any x86-64 machine. All versions give the same bits: they do the same
// IEEE operations in the same order (-ffp-contract=off).
#ifndef NORMSERVE_KERNELS_CPU_ROW_KERNELS_H_
#define NORMSERVE_KERNELS_CPU_ROW_KERNELS_H_

#include <cstdint>

#include "normserve/kernels/batch.h"
#include "normserve/kernels/dtype.h"
#include "row_math.h"

namespace normserve::kernels::cpu {

// Forward for rows [row_begin, row_end) of one segment.
using ForwardRowsFn = void (*)(const ForwardRowParams& params, const ForwardSegment& segment,
                               int64_t row_begin, int64_t row_end);

// Backward for rows [row_begin, row_end) of one segment. dw_partial and
// db_partial (fp32 [hidden], each optional) are overwritten with
// sum over those rows of dy * r and of dy.
using BackwardRowsFn = void (*)(const BackwardRowParams& params, const BackwardSegment& segment,
                                int64_t row_begin, int64_t row_end, float* dw_partial,
                                float* db_partial);

// The kernels for a batch of dtype with residual_out / grad_residual_out in
// residual_dtype (dtype or kF32, as ValidateForwardBatch checks).
ForwardRowsFn ForwardRowsFor(DType dtype, DType residual_dtype);
BackwardRowsFn BackwardRowsFor(DType dtype, DType residual_dtype);

// out[j] = fp32(factor * sum over chunks c = 0, 1, ... in order of
// partials[c * hidden + j]), summed in double, for j in [begin, end);
// end - begin <= kMaxReduceColumns.
inline constexpr int64_t kMaxReduceColumns = 512;
void ReduceChunkPartials(const float* partials, int64_t chunks, int64_t hidden, int64_t begin,
                         int64_t end, double factor, float* out);

// dst[i] = src[i] converted to fp32, for n elements of dtype.
void ConvertToFloat(DType dtype, const void* src, int64_t n, float* dst);

}  // namespace normserve::kernels::cpu

#endif  // NORMSERVE_KERNELS_CPU_ROW_KERNELS_H_
