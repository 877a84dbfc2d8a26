// The parameter space shared by the kernel suite: backends x dtypes x hidden
// sizes, and the row counts used at each hidden size (enough rows to cross
// the 32-row gradient chunks and the multi-threaded path at small hidden
// sizes, a few rows at 65536 to keep the suite fast). 10000 is 16-byte
// aligned and over 8192: the CUDA backward splits its fp32 rows over a cluster
// of two blocks.
#ifndef NORMSERVE_TESTS_KERNELS_SUITE_PARAMS_H_
#define NORMSERVE_TESTS_KERNELS_SUITE_PARAMS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "backends.h"
#include "normserve/kernels/dtype.h"

namespace normserve::kernels_test {

// 1002 and 1004: rows of half vectors (8 bytes: fp32 and 16-bit respectively).
inline constexpr int64_t kHiddenSizes[] = {1,    7,    127,   1000,  1002, 1004,
                                           4096, 8191, 10000, 32768, 65536};

inline ::testing::internal::ParamGenerator<kernels::DType> AllDTypes() {
  return ::testing::Values(kernels::DType::kF32, kernels::DType::kF16, kernels::DType::kBF16);
}

// Rows of the batch at this hidden size, split into two segments where there
// are at least two rows: {max(1, rows / 3), the rest}.
std::vector<int64_t> SegmentRowsFor(int64_t hidden);

// "cpu_bf16_d4096" for (backend, dtype, hidden) parameters.
std::string SuiteParamName(
    const ::testing::TestParamInfo<std::tuple<std::string, kernels::DType, int64_t>>& info);

}  // namespace normserve::kernels_test

#endif  // NORMSERVE_TESTS_KERNELS_SUITE_PARAMS_H_
