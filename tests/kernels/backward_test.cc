// Backward of every backend against the float64 reference: every dtype x
// hidden size, LayerNorm and RMSNorm, with saved statistics and recomputed
// ones, residual and incoming residual gradient (batch dtype and fp32),
// partial statistics, custom c, grad_weight and grad_bias.
#include <gtest/gtest.h>

#include "norm_case.h"
#include "suite_params.h"

namespace normserve::kernels_test {
namespace {

using kernels::DType;

class BackwardTest : public BackendTest<DType, int64_t> {
 protected:
  NormCase Base() const {
    NormCase c;
    c.dtype = std::get<1>(GetParam());
    c.hidden = std::get<2>(GetParam());
    c.segment_rows = SegmentRowsFor(c.hidden);
    return c;
  }
};

TEST_P(BackwardTest, RmsNormWithSavedStatsMatchesReference) {
  NormCase c = Base();
  c.weight = true;
  c.saved_stats = true;
  c.grad_weight = true;
  ExpectBackwardMatchesReference(backend(), c, 11);
}

TEST_P(BackwardTest, LayerNormWithSavedStatsMatchesReference) {
  NormCase c = Base();
  c.config.center = true;
  c.weight = true;
  c.saved_stats = true;
  c.grad_weight = true;
  c.grad_bias = true;
  ExpectBackwardMatchesReference(backend(), c, 12);
}

TEST_P(BackwardTest, RecomputedStatsMatchReference) {
  for (bool center : {false, true}) {
    NormCase c = Base();
    c.config.center = center;
    c.weight = center;
    c.grad_weight = true;
    c.grad_bias = true;
    ExpectBackwardMatchesReference(backend(), c, 13);
  }
}

TEST_P(BackwardTest, FusedResidualWithGradResidualOutInBatchDtypeMatchesReference) {
  for (bool center : {false, true}) {
    NormCase c = Base();
    c.config.center = center;
    c.weight = true;
    c.residual = true;
    c.grad_residual_out = true;
    c.residual_dtype = c.dtype;
    c.saved_stats = center;
    c.grad_weight = true;
    ExpectBackwardMatchesReference(backend(), c, 14);
  }
}

TEST_P(BackwardTest, FusedResidualWithGradResidualOutInFp32MatchesReference) {
  for (bool center : {false, true}) {
    NormCase c = Base();
    c.config.center = center;
    c.weight = true;
    c.residual = true;
    c.grad_residual_out = true;
    c.residual_dtype = DType::kF32;
    c.saved_stats = !center;
    c.grad_weight = true;
    c.grad_bias = true;
    ExpectBackwardMatchesReference(backend(), c, 15);
  }
}

// The fused backward of a saved p = x + y (x holds p, no y): what frameworks
// that keep the residual stream pass (the CUDA kernels stage its rows).
TEST_P(BackwardTest, GradResidualOutWithoutResidualMatchesReference) {
  for (bool center : {false, true}) {
    NormCase c = Base();
    c.config.center = center;
    c.weight = true;
    c.grad_residual_out = true;
    c.residual_dtype = c.dtype;
    c.saved_stats = !center;
    c.grad_weight = true;
    c.grad_bias = center;
    ExpectBackwardMatchesReference(backend(), c, 19);
  }
}

TEST_P(BackwardTest, PartialStatisticWithCustomCMatchesReference) {
  for (double partial : {0.25, 0.0625}) {
    for (bool center : {false, true}) {
      NormCase c = Base();
      c.config.center = center;
      c.config.partial = partial;
      c.config.c = 2.5f;
      c.config.eps = 1e-3f;
      c.weight = true;
      c.saved_stats = center;
      c.grad_weight = true;
      c.grad_bias = true;
      ExpectBackwardMatchesReference(backend(), c, 16);
    }
  }
}

TEST_P(BackwardTest, GradInputOnlyMatchesReference) {
  NormCase c = Base();
  c.config.center = true;
  c.weight = true;
  ExpectBackwardMatchesReference(backend(), c, 17);
}

INSTANTIATE_TEST_SUITE_P(Kernels, BackwardTest,
                         ::testing::Combine(::testing::ValuesIn(BackendNames()), AllDTypes(),
                                            ::testing::ValuesIn(kHiddenSizes)),
                         SuiteParamName);

// More rows than the CUDA backward has blocks (two per SM), so each block
// walks several rows: the staged kernels' pipelines refill their stages, and
// dw / db add more than one row per chunk. A short second segment follows.
class ManyRowsBackwardTest : public BackendTest<DType, int64_t> {};

// RMSNorm with saved statistics, LayerNorm without, the fused residual
// backward (y and an fp32 grad_residual_out), and that of a saved p
// (grad_residual_out in the batch dtype, without y: the staged kernels).
TEST_P(ManyRowsBackwardTest, EveryRowAndTheReductionsMatchReference) {
  for (int variant = 0; variant < 4; ++variant) {
    const bool center = variant == 1;
    const bool fused = variant >= 2;
    NormCase c;
    c.dtype = std::get<1>(GetParam());
    c.hidden = std::get<2>(GetParam());
    c.segment_rows = {300, 7};
    c.config.center = center;
    c.weight = true;
    c.saved_stats = variant == 0;
    c.residual = variant == 2;
    c.grad_residual_out = fused;
    if (variant == 3) c.residual_dtype = c.dtype;
    c.grad_weight = true;
    c.grad_bias = center;
    ExpectBackwardMatchesReference(backend(), c, 18);
  }
}

// 8192: 16-bit rows at 2 vectors per thread in a block of 512 threads. 10000
// and 20000: 16-bit rows that the CUDA backward splits over a cluster of two
// blocks, fp32 20000 over four. 16384: 16-bit rows at 4 vectors that fill the
// block (the CUDA instances without bounds tests). 4608, 5000, 5120, 6144,
// 6500, 7500 and 8192: fp32 rows the CUDA backward holds in 256 threads of 5
// to 8 vectors, 10000, 14336, 15000 and 16384 in a cluster of two such blocks
// (5120, 6144, 8192, 14336 and 16384 fill them, no bounds tests). 4608 and 5000:
// 16-bit rows in blocks of 288 / 320 threads, two per SM (the paired
// instances, with and without bounds tests). 15000 and 16384: 16-bit rows
// whose fused stages with y leave no room for scale * w in shared memory.
// 40000: rows split over four blocks (16-bit) or eight (fp32). 14501: rows of
// no whole 16-byte vector (vec 1), realigned (RealignedRow): 480 threads of 4
// vectors, a cluster of two of them in fp32; 4095: realigned in 256 threads of
// 2 vectors (16-bit) or 4 (fp32); 4097, 6001 and 10001: 16-bit ones realigned
// in blocks of 288 threads (the paired instance), 384 and 320 (4 vectors
// each), fp32 ones in 288 and 384 threads of 4 and a cluster of two blocks of
// 320. 8196, 14500 and 20004: 16-bit rows of half vectors (8 bytes) past
// one block at 4 per thread, realigned in blocks of 288 and 480 threads and
// a cluster of two of 320 (fp32 ones: 16-byte vectors). 20001, 20002 (fp32
// half vectors) and 16385: realigned and staged over a cluster of four blocks
// in fp32, two (16385: of 288 threads) or four in 16-bit. 40001: fp32 rows
// stream (dw / db partials in the workspace), 16-bit ones realigned over a
// cluster of four. 2562 and 3586: fp32 rows of half vectors in one block of
// 352 and 480 threads (LayerNorm without y at 3586: realigned, 256 threads,
// ChooseBackwardRowLayout; 16-bit ones, of no whole half vector, realigned).
INSTANTIATE_TEST_SUITE_P(
    Kernels, ManyRowsBackwardTest,
    ::testing::Combine(::testing::ValuesIn(BackendNames()), AllDTypes(),
                       ::testing::Values(int64_t{4095}, int64_t{4096}, int64_t{4097}, int64_t{4608},
                                         int64_t{5000}, int64_t{6001}, int64_t{8196},
                                         int64_t{10001}, int64_t{5120}, int64_t{6144},
                                         int64_t{6500}, int64_t{7500}, int64_t{8192},
                                         int64_t{10000}, int64_t{14336}, int64_t{14500},
                                         int64_t{14501}, int64_t{15000}, int64_t{16384},
                                         int64_t{16385}, int64_t{20000}, int64_t{20001},
                                         int64_t{20002}, int64_t{20004}, int64_t{40000},
                                         int64_t{40001}, int64_t{2562}, int64_t{3586})),
    SuiteParamName);

// The fused backward from x and y with the residual gradient in the batch
// dtype, over more rows than the CUDA launch has blocks, at the 16-bit widths
// whose three staged tensors leave no room for scale * w in shared memory:
// 14501 (realigned, one block of 480 threads), 15000 (aligned, one block),
// 32767 and 65535 (realigned over a cluster of two / four), 32768 (aligned, a
// cluster of two). Then LayerNorm with a bias of a saved p (no y): at the
// realigned widths the staged instances with db, which load the residual
// gradient where dx uses it. About 4.8 M elements a case. CUDA only: the CPU
// backend's rows at these widths are BackwardTest's.
class WideFusedBackwardTest : public BackendTest<DType, int64_t> {};

TEST_P(WideFusedBackwardTest, EveryRowAndTheReductionsMatchReference) {
  for (int variant = 0; variant < 3; ++variant) {
    const bool center = variant >= 1;
    NormCase c;
    c.dtype = std::get<1>(GetParam());
    c.hidden = std::get<2>(GetParam());
    c.segment_rows = {4'800'000 / c.hidden, 7};
    c.config.center = center;
    c.weight = true;
    c.saved_stats = !center;
    c.residual = variant != 2;  // variant 2: a saved p
    c.grad_residual_out = true;
    c.residual_dtype = c.dtype;
    c.grad_weight = true;
    c.grad_bias = center;
    ExpectBackwardMatchesReference(backend(), c, 20);
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, WideFusedBackwardTest,
                         ::testing::Combine(::testing::Values(std::string("cuda")),
                                            ::testing::Values(DType::kBF16, DType::kF16),
                                            ::testing::Values(int64_t{14501}, int64_t{15000},
                                                              int64_t{32767}, int64_t{32768},
                                                              int64_t{65535})),
                         SuiteParamName);

}  // namespace
}  // namespace normserve::kernels_test
