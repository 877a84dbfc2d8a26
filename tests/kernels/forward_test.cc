// Forward of every backend against the float64 reference: every dtype x
// hidden size, LayerNorm and RMSNorm, with and without weight, bias and
// residual, residual_out in the batch dtype and in fp32, partial statistics,
// custom c and eps, returned statistics.
#include <gtest/gtest.h>

#include <vector>

#include "norm_case.h"
#include "suite_params.h"

namespace normserve::kernels_test {
namespace {

using kernels::DType;

class ForwardTest : public BackendTest<DType, int64_t> {
 protected:
  NormCase Base() const {
    NormCase c;
    c.dtype = std::get<1>(GetParam());
    c.hidden = std::get<2>(GetParam());
    c.segment_rows = SegmentRowsFor(c.hidden);
    return c;
  }
};

TEST_P(ForwardTest, RmsNormMatchesReference) {
  NormCase c = Base();
  c.weight = true;
  c.stats_out = true;
  ExpectForwardMatchesReference(backend(), c, 1);
}

TEST_P(ForwardTest, LayerNormMatchesReference) {
  NormCase c = Base();
  c.config.center = true;
  c.weight = true;
  c.bias = true;
  c.stats_out = true;
  ExpectForwardMatchesReference(backend(), c, 2);
}

// Rows whose mean is 32 times their spread: statistics that square values
// before removing the mean (sum of squares minus n mean^2) lose about 32^2
// times the fp32 rounding, 4-10 times the fp32 tolerance (a float32 model of
// that reduction, hidden 7-65536), where removing the mean first stays 3-7
// times under it.
TEST_P(ForwardTest, LayerNormOfRowsFarFromZeroMatchesReference) {
  NormCase c = Base();
  c.config.center = true;
  c.weight = true;
  c.stats_out = true;
  c.x_mean = 16.0;
  c.x_stddev = 0.5;
  ExpectForwardMatchesReference(backend(), c, 12);
}

TEST_P(ForwardTest, UnweightedNormsMatchReference) {
  for (bool center : {false, true}) {
    NormCase c = Base();
    c.config.center = center;
    ExpectForwardMatchesReference(backend(), c, 3);
  }
}

TEST_P(ForwardTest, FusedResidualWithResidualOutInBatchDtypeMatchesReference) {
  for (bool center : {false, true}) {
    NormCase c = Base();
    c.config.center = center;
    c.weight = true;
    c.bias = center;
    c.residual = true;
    c.residual_out = true;
    c.residual_dtype = c.dtype;
    c.stats_out = true;
    ExpectForwardMatchesReference(backend(), c, 4);
  }
}

TEST_P(ForwardTest, FusedResidualWithResidualOutInFp32MatchesReference) {
  for (bool center : {false, true}) {
    NormCase c = Base();
    c.config.center = center;
    c.weight = true;
    c.residual = true;
    c.residual_out = true;
    c.residual_dtype = DType::kF32;
    ExpectForwardMatchesReference(backend(), c, 5);
  }
}

TEST_P(ForwardTest, ResidualOutWithoutResidualIsTheInput) {
  NormCase c = Base();
  c.residual_out = true;
  c.residual_dtype = c.dtype;
  c.weight = true;
  ExpectForwardMatchesReference(backend(), c, 6);
}

TEST_P(ForwardTest, PartialStatisticWithCustomCAndEpsMatchesReference) {
  for (double partial : {0.25, 0.0625}) {
    for (bool center : {false, true}) {
      NormCase c = Base();
      c.config.center = center;
      c.config.partial = partial;
      c.config.c = 2.5f;
      c.config.eps = 1e-3f;
      c.weight = true;
      c.bias = true;
      c.stats_out = true;
      ExpectForwardMatchesReference(backend(), c, 7);
    }
  }
}

TEST_P(ForwardTest, ZeroEpsMatchesReference) {
  NormCase c = Base();
  if (c.hidden == 1) GTEST_SKIP() << "LayerNorm of one element with eps 0 is 0 / 0";
  c.config.eps = 0.0f;
  c.config.center = true;
  c.stats_out = true;
  ExpectForwardMatchesReference(backend(), c, 8);
}

INSTANTIATE_TEST_SUITE_P(Kernels, ForwardTest,
                         ::testing::Combine(::testing::ValuesIn(BackendNames()), AllDTypes(),
                                            ::testing::ValuesIn(kHiddenSizes)),
                         SuiteParamName);

// Forward over segments of `segment_rows` rows: LayerNorm with weight and
// bias, then add + RMSNorm with weight, residual_out in `residual_dtype` and
// statistics.
class ManyRowsTest : public BackendTest<DType, int64_t> {
 protected:
  void ExpectPlainAndFusedMatch(std::vector<int64_t> segment_rows, DType residual_dtype,
                                uint64_t seed) {
    for (bool residual : {false, true}) {
      NormCase c;
      c.dtype = std::get<1>(GetParam());
      c.hidden = std::get<2>(GetParam());
      c.segment_rows = segment_rows;
      c.config.center = !residual;
      c.weight = true;
      c.bias = !residual;
      c.residual = residual;
      c.residual_out = residual;
      c.residual_dtype = residual_dtype;
      c.stats_out = true;
      ExpectForwardMatchesReference(backend(), c, seed);
    }
  }
};

// More rows than the GPU has SMs, so the CUDA forward's launches are not
// latency-bound; with and without the residual branch (16-bit rows of 20000:
// 8 vectors per thread, p held as fp32 registers). A short second segment
// follows. 16-bit rows of 3072, 5120, 6144, 7168, 12288 and 14336 (3, 5, 6,
// 7, 12 and 14 warps) and fp32 rows of 6144 and 7168 (12 and 14 warps) take
// LeanRowKernel instances of their own width (LeanUnspreadInstance). 512 and 6144: full LayerNorm
// rows whose statistics come from one reduction (CanonicalGroupMoments), at 512 over rows spread
// from 16 threads to 64 (SpreadLayout: DeterminismTest compares them with the unspread groups of
// 16), at 6144 over 6 warps (not a power of two). fp32 rows of 12000 and 16384: 8 vectors per
// thread over 384 and 512 threads, the plain ones staged through shared memory
// (RowStorage::kStaged), partial and full, the fused ones too on a GPU of high bandwidth per SM
// (RowStorage::kStagedSum: y added into the copy). 16-bit LayerNorm rows of 12000
// (384 threads, bounds-tested) and 15000 (480 threads) take LeanRowKernel's
// kFull = false instance, 16-bit rows of 15360 its full one over 480 threads.
// Rows of half vectors (8 bytes): 16-bit rows of 2052 and 4100, 4 per thread
// over 160 and 288 threads, of 12004 and 14500, 8 per thread over 384 and
// 480; fp32 rows of 4098 and 8190, 8 per thread over 288 and 512, of 10002,
// 12002 and 16382, 16 per thread over 320, 384 and 512 (plain ones, but fp32
// RMSNorm ones of 320 threads, through LeanRowKernel's bounds-tested instances
// of 8-byte vectors, LeanHalfInstance); 16-bit rows of 16388, 20004, 22524,
// 24572, 26620, 28668, 30716 and 32764, 16 per thread over 288-512 threads
// (plain ones through LongHalfRowInstance at 288 and RMSNorm ones at 320,
// the others through StagedLongRowKernel, bounds-tested, the row copied in
// 16-byte pieces; fused ones stream). 16-bit
// rows of 16392, 18432, 20000, 22000, 24576, 30000 and 32768: 8 vectors of 8
// per thread over 288, 288, 320, 352, 384, 480 and 512 threads (plain ones
// through LongFullRowInstance, bounds-tested, bounded to two blocks per SM, at
// 288 and 320; over 352 and more through StagedLongRowKernel, staged through
// shared memory, bounds-tested at 22000 and 30000). Rows of 14501 (no whole
// vector: vec 1) are held 32 values per thread over 512 threads.
class ManyRowsForwardTest : public ManyRowsTest {};

TEST_P(ManyRowsForwardTest, EveryRowMatchesReference) {
  ExpectPlainAndFusedMatch({300, 7}, DType::kF32, 9);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, ManyRowsForwardTest,
    ::testing::Combine(
        ::testing::ValuesIn(BackendNames()), AllDTypes(),
        ::testing::Values(int64_t{512}, int64_t{2052}, int64_t{3072}, int64_t{4098}, int64_t{4100},
                          int64_t{5120}, int64_t{6144}, int64_t{7168}, int64_t{8190},
                          int64_t{10000}, int64_t{10002}, int64_t{12000}, int64_t{12004},
                          int64_t{12002}, int64_t{12288}, int64_t{14336}, int64_t{14500},
                          int64_t{14501}, int64_t{15000}, int64_t{15360}, int64_t{16382},
                          int64_t{16384}, int64_t{16388}, int64_t{16392}, int64_t{18432},
                          int64_t{20000}, int64_t{20004}, int64_t{22000}, int64_t{22524},
                          int64_t{24572}, int64_t{24576}, int64_t{26620}, int64_t{28668},
                          int64_t{30000}, int64_t{30716}, int64_t{32764}, int64_t{32768})),
    SuiteParamName);

// Short rows in launches of so many rows that the CUDA forward is not
// latency-bound (about 293 blocks of the layout's 256 threads, more than one
// per SM): there its blocks hold kForwardBlockThreads / tpr rows each
// (forward_launch.cuh), and the first segment's last block is partly filled
// (an odd number of rows). Fused 16-bit rows there keep p in registers and
// store residual_out (here in the batch dtype) as loaded.
class ManyShortRowsForwardTest : public ManyRowsTest {};

TEST_P(ManyShortRowsForwardTest, EveryRowMatchesReference) {
  const int64_t hidden = std::get<2>(GetParam());
  ExpectPlainAndFusedMatch({(2400000 / hidden) | 1, 5}, std::get<1>(GetParam()), 11);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, ManyShortRowsForwardTest,
    ::testing::Combine(::testing::ValuesIn(BackendNames()), AllDTypes(),
                       ::testing::Values(int64_t{64}, int64_t{506}, int64_t{514}, int64_t{770},
                                         int64_t{1000}, int64_t{1002}, int64_t{1004}, int64_t{1024},
                                         int64_t{1530}, int64_t{2042}, int64_t{2048})),
    SuiteParamName);

}  // namespace
}  // namespace normserve::kernels_test
