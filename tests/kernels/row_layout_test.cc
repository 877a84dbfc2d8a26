// ChooseRowLayout (kernels/cuda/row_layout.h) is host code: these checks run
// without a GPU. Every layout it returns must be one the CUDA launchers have a
// kernel for (they answer cudaErrorInvalidConfiguration otherwise) and must
// cover the row, for every hidden size the service accepts.
#include "cuda/row_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace normserve::kernels_test {
namespace {

using kernels::DType;
using kernels::cuda::BackwardChunkRows;
using kernels::cuda::BackwardChunks;
using kernels::cuda::ChooseRowLayout;
using kernels::cuda::ChunkOfSegment;
using kernels::cuda::ChunkRows;
using kernels::cuda::FullRow;
using kernels::cuda::HeldIters;
using kernels::cuda::HeldScalarForwardRow;
using kernels::cuda::InterleavedChunks;
using kernels::cuda::kClusterCtas;
using kernels::cuda::kHeldClusterVectors;
using kernels::cuda::kHeldRowThreads;
using kernels::cuda::kMaxThreads;
using kernels::cuda::kTargetThreads;
using kernels::cuda::kTwoVectorF32Threads;
using kernels::cuda::kWideClusterCtas;
using kernels::cuda::kWidestClusterCtas;
using kernels::cuda::MaxElemsPerThread;
using kernels::cuda::Pass;
using kernels::cuda::RowLayout;
using kernels::cuda::SparseRow;
using kernels::cuda::SpreadLayout;
using kernels::cuda::TwoVectorBackwardRow;

// The backward layout of `hidden`-wide rows of dtype (aligned buffers) has
// these vectors, vectors per thread and blocks per row.
void ExpectBackwardLayout(DType dtype, int64_t hidden, int vec, int iters, int ctas_per_row) {
  const RowLayout l = ChooseRowLayout(Pass::kBackward, dtype, hidden, true);
  EXPECT_EQ(l.vec, vec) << hidden;
  EXPECT_EQ(l.iters, iters) << hidden;
  EXPECT_EQ(l.ctas_per_row, ctas_per_row) << hidden;
}

TEST(RowLayoutTest, EveryLayoutCoversTheRowWithAnInstantiatedKernel) {
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      const int elem = static_cast<int>(kernels::DTypeSize(dtype));
      for (bool aligned : {false, true}) {
        for (int64_t hidden = 1; hidden <= 65536; ++hidden) {
          const RowLayout l = ChooseRowLayout(pass, dtype, hidden, aligned);
          SCOPED_TRACE(testing::Message() << "pass " << static_cast<int>(pass) << " elem " << elem
                                          << " aligned " << aligned << " hidden " << hidden);
          ASSERT_TRUE(l.vec == 1 || l.vec == 16 / elem || l.vec == 8 / elem);
          if (l.realigned) {
            // Backward rows of no whole 16-byte vector: one block, or a
            // cluster of 4 vectors per thread (BackwardKernel's only
            // realigned cluster instances).
            ASSERT_EQ(pass, Pass::kBackward);
            ASSERT_EQ(l.vec, 16 / elem);
            ASSERT_TRUE(!aligned || hidden % (16 / elem) != 0);
            ASSERT_GT(l.iters, 0);
            if (l.ctas_per_row > 1) {
              ASSERT_EQ(l.iters, 4);
              ASSERT_LE(l.ctas_per_row, kWideClusterCtas);
            }
          } else if (l.vec > 1) {
            ASSERT_TRUE(aligned);
            ASSERT_EQ(hidden % l.vec, 0);
          }
          // A half vector only where a whole one does not divide the row.
          if (l.vec == 8 / elem) {
            ASSERT_NE(hidden % (16 / elem), 0);
          }
          if (pass == Pass::kBackward && elem == 2) {
            // No 16-bit backward instance streams or takes single elements
            // (LaunchInstance).
            ASSERT_FALSE(l.streaming());
            ASSERT_GT(l.vec, 1);
          }
          if (pass == Pass::kBackward && elem == 4 && l.vec == 1) {
            ASSERT_TRUE(l.streaming());  // the only fp32 backward instances of vec 1
          }
          if (l.streaming()) {
            ASSERT_EQ(l.tpr, kMaxThreads);
            ASSERT_EQ(l.rows_per_cta, 1);
            ASSERT_EQ(l.ctas_per_row, 1);
            continue;
          }
          const bool held = HeldIters(pass, elem, l.vec, l.iters);
          if (held) {
            // The held kernel's layout: one block per row (rows of more than
            // kHeldClusterVectors: a cluster of two), the fewest vectors per
            // thread, so only the last ones may lie past the row's end.
            ASSERT_EQ(l.tpr, kHeldRowThreads * l.ctas_per_row);
            ASSERT_EQ(l.ctas_per_row, hidden > kHeldClusterVectors * l.vec ? kClusterCtas : 1);
            ASSERT_EQ(l.rows_per_cta, 1);
            ASSERT_LT(int64_t{l.tpr} * (l.iters - 1) * l.vec, hidden);
          } else {
            const bool scalar_held = HeldScalarForwardRow(pass, dtype, l.vec, hidden, l.iters);
            const bool half_f32_forward = pass == Pass::kForward && elem == 4 && l.vec == 2;
            ASSERT_TRUE(l.iters == 1 || l.iters == 2 || l.iters == 4 || l.iters == 8 ||
                        (scalar_held && (l.iters == 16 || l.iters == 32)) ||
                        (half_f32_forward && l.iters == 16));
            ASSERT_LE(l.vec * l.iters, MaxElemsPerThread(pass, elem));
            if (pass == Pass::kBackward && elem == 4 && l.vec == 4 && l.ctas_per_row == 1) {
              // fp32 rows of one block that are not held take 2 vectors per
              // thread up to kTwoVectorF32Threads threads, 4 beyond: the
              // backward launcher stages every such plain row
              // (ChooseGeneralStageOne).
              const bool two = TwoVectorBackwardRow(l.vec, elem, (hidden + l.vec - 1) / l.vec);
              ASSERT_EQ(two, hidden <= 2 * 4 * kTwoVectorF32Threads);
              if (two) {
                ASSERT_LE(l.iters, 2);
              } else {
                ASSERT_EQ(l.iters, 4);
              }
            }
          }
          ASSERT_GE(int64_t{l.tpr} * l.iters * l.vec, hidden);
          ASSERT_LE(l.threads(), kMaxThreads);
          if (l.ctas_per_row > 1) {
            // The cluster launchers' instances: backward, full vectors, four
            // per thread (held: five to eight), one row per cluster of whole
            // warps per block, the wide cluster only for rows the narrow one
            // cannot hold, the widest only for fp32.
            ASSERT_EQ(pass, Pass::kBackward);
            ASSERT_TRUE(l.ctas_per_row == kClusterCtas || l.ctas_per_row == kWideClusterCtas ||
                        (l.ctas_per_row == kWidestClusterCtas && elem == 4));
            ASSERT_EQ(l.vec, 16 / elem);
            if (!held) {
              ASSERT_EQ(l.iters, 4);
            }
            ASSERT_EQ(l.rows_per_cta, 1);
            ASSERT_EQ(l.tpr % (32 * l.ctas_per_row), 0);
            if (l.ctas_per_row > kClusterCtas) {
              ASSERT_GT(hidden, int64_t{l.ctas_per_row / 2} * kMaxThreads * l.iters * l.vec);
            }
          } else if (l.tpr < 32) {
            ASSERT_EQ(l.tpr & (l.tpr - 1), 0);
            ASSERT_EQ(l.threads(), kTargetThreads);
          } else {
            ASSERT_EQ(l.tpr % 32, 0);
          }
        }
      }
    }
  }
}

struct Expected {
  Pass pass;
  DType dtype;
  int64_t hidden;
  int tpr, iters, ctas_per_row;
};

// The measured choices (bench/results/gpu-*.md) named in row_layout.h.
TEST(RowLayoutTest, MeasuredChoices) {
  const Expected cases[] = {
      {Pass::kBackward, DType::kBF16, 1024, 64, 2, 1},     // 2 vectors, 4 rows per block
      {Pass::kBackward, DType::kBF16, 4096, 256, 2, 1},    // 2 vectors, one block
      {Pass::kBackward, DType::kBF16, 5000, 320, 2, 1},    // 2 vectors, one block
      {Pass::kForward, DType::kBF16, 4096, 128, 4, 1},     // 4 vectors of 8
      {Pass::kForward, DType::kF32, 512, 16, 8, 1},        // 8 vectors of 4
      {Pass::kForward, DType::kF32, 1024, 128, 2, 1},      // fewer: 2 vectors fill it
      {Pass::kForward, DType::kF32, 1536, 192, 2, 1},      // fewer: 2 vectors
      {Pass::kForward, DType::kF32, 2048, 256, 2, 1},      // fewer: 2 vectors
      {Pass::kForward, DType::kF32, 3072, 192, 4, 1},      // fewer: 4 vectors
      {Pass::kForward, DType::kF32, 4096, 256, 4, 1},      // fewer: 4 vectors
      {Pass::kForward, DType::kF32, 5000, 160, 8, 1},      // 4 would not fill it: 8
      {Pass::kForward, DType::kF32, 5120, 320, 4, 1},      // fewer: 4 vectors
      {Pass::kForward, DType::kF32, 8192, 512, 4, 1},      // fewer: 4 vectors
      {Pass::kForward, DType::kBF16, 12288, 384, 4, 1},    // 4 vectors, one block
      {Pass::kForward, DType::kBF16, 15360, 480, 4, 1},    // 4 vectors, one block
      {Pass::kForward, DType::kBF16, 16384, 512, 4, 1},    // 4 vectors, one block
      {Pass::kForward, DType::kBF16, 20000, 320, 8, 1},    // 8 vectors
      {Pass::kForward, DType::kF32, 16384, 512, 8, 1},     // fp32: one block
      {Pass::kBackward, DType::kF32, 256, 32, 2, 1},       // two vectors per thread
      {Pass::kBackward, DType::kF32, 1024, 128, 2, 1},     // two vectors per thread
      {Pass::kBackward, DType::kF32, 2048, 256, 2, 1},     // two vectors per thread
      {Pass::kBackward, DType::kF32, 3000, 384, 2, 1},     // two vectors per thread
      {Pass::kBackward, DType::kF32, 3072, 384, 2, 1},     // two vectors per thread
      {Pass::kBackward, DType::kF32, 3076, 224, 4, 1},     // four beyond 384 threads
      {Pass::kBackward, DType::kF32, 4000, 256, 4, 1},     // four beyond 384 threads
      {Pass::kBackward, DType::kF32, 4096, 256, 4, 1},     // four beyond 384 threads
      {Pass::kBackward, DType::kF32, 4100, 256, 5, 1},     // held: 5 vectors
      {Pass::kBackward, DType::kF32, 5120, 256, 5, 1},     // held: 5 vectors
      {Pass::kBackward, DType::kF32, 5124, 256, 6, 1},     // held: 6 vectors
      {Pass::kBackward, DType::kF32, 6144, 256, 6, 1},     // held: 6 vectors
      {Pass::kBackward, DType::kF32, 6148, 256, 7, 1},     // held: 7 vectors
      {Pass::kBackward, DType::kF32, 7168, 256, 7, 1},     // held: 7 vectors
      {Pass::kBackward, DType::kF32, 7172, 256, 8, 1},     // held: 8 vectors
      {Pass::kBackward, DType::kF32, 8192, 256, 8, 1},     // held: 8 vectors
      {Pass::kBackward, DType::kF32, 8196, 512, 5, 2},     // held: 5 vectors, a cluster
      {Pass::kBackward, DType::kF32, 10000, 512, 5, 2},    // held: 5 vectors, a cluster
      {Pass::kBackward, DType::kF32, 12288, 512, 6, 2},    // held: 6 vectors, a cluster
      {Pass::kBackward, DType::kF32, 14336, 512, 7, 2},    // held: 7 vectors, a cluster
      {Pass::kBackward, DType::kF32, 14340, 512, 8, 2},    // held: 8 vectors, a cluster
      {Pass::kBackward, DType::kF32, 16384, 512, 8, 2},    // held: 8 vectors, a cluster
      {Pass::kBackward, DType::kBF16, 8192, 512, 2, 1},    // 2 vectors, one block
      {Pass::kBackward, DType::kBF16, 16384, 512, 4, 1},   // fits one block
      {Pass::kBackward, DType::kBF16, 32768, 1024, 4, 2},  // cluster
      {Pass::kBackward, DType::kF32, 20000, 1280, 4, 4},   // wide cluster
      {Pass::kBackward, DType::kF32, 32768, 2048, 4, 4},   // wide cluster
      {Pass::kBackward, DType::kBF16, 65536, 2048, 4, 4},  // wide cluster
      {Pass::kBackward, DType::kF32, 40000, 2560, 4, 8},   // widest cluster
      {Pass::kBackward, DType::kF32, 65536, 4096, 4, 8},   // widest cluster
  };
  for (const Expected& e : cases) {
    const RowLayout l = ChooseRowLayout(e.pass, e.dtype, e.hidden, /*aligned=*/true);
    SCOPED_TRACE(testing::Message()
                 << "pass " << static_cast<int>(e.pass) << " hidden " << e.hidden);
    EXPECT_EQ(l.tpr, e.tpr);
    EXPECT_EQ(l.iters, e.iters);
    EXPECT_EQ(l.ctas_per_row, e.ctas_per_row);
  }
  // Aligned backward rows up to 65536 all fit a cluster; fp32 rows of no
  // 16-byte vectors past a cluster of four take the streaming kernels, 16-bit
  // ones the cluster of the row rounded up to whole vectors, realigned.
  EXPECT_TRUE(ChooseRowLayout(Pass::kBackward, DType::kF32, 65535, true).streaming());
  const RowLayout bf16_65535 = ChooseRowLayout(Pass::kBackward, DType::kBF16, 65535, true);
  EXPECT_TRUE(bf16_65535.realigned);
  EXPECT_EQ(bf16_65535.ctas_per_row, kWideClusterCtas);
  EXPECT_TRUE(ChooseRowLayout(Pass::kForward, DType::kBF16, 65536, true).streaming());
}

// 16-bit backward rows of no whole vector take the layout of the row rounded
// up to whole vectors, realigned: one block up to 16384 elements, a cluster
// beyond.
TEST(RowLayoutTest, SixteenBitBackwardRowsOfNoVectorAreRealigned) {
  using kernels::cuda::RealignedRow;
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (bool aligned : {false, true}) {
      for (int64_t hidden = 1; hidden <= 65536; ++hidden) {
        if (aligned && hidden % 4 == 0) continue;  // whole or half vectors
        const RowLayout l = ChooseRowLayout(Pass::kBackward, dtype, hidden, aligned);
        const RowLayout rounded =
            ChooseRowLayout(Pass::kBackward, dtype, (hidden + 7) / 8 * 8, /*aligned=*/true);
        SCOPED_TRACE(testing::Message() << "aligned " << aligned << " hidden " << hidden);
        ASSERT_EQ(rounded.ctas_per_row == 1, hidden <= 16384);
        ASSERT_TRUE(l.realigned);
        ASSERT_EQ(l.vec, rounded.vec);
        ASSERT_EQ(l.iters, rounded.iters);
        ASSERT_EQ(l.tpr, rounded.tpr);
        ASSERT_EQ(l.ctas_per_row, rounded.ctas_per_row);
        ASSERT_EQ(l.rows_per_cta, rounded.rows_per_cta);
        ASSERT_FALSE(rounded.realigned);
        ASSERT_TRUE(RealignedRow(dtype, hidden).realigned);
      }
    }
  }
  // Forward rows keep their layouts.
  EXPECT_FALSE(ChooseRowLayout(Pass::kForward, DType::kBF16, 4097, true).realigned);
  // The measured shapes (bench/results/gpu-2026-11-28-round46.md).
  for (int64_t hidden :
       {255, 1001, 2047, 4095, 4097, 5001, 6001, 7001, 8191, 10001, 12001, 14501, 16383}) {
    EXPECT_TRUE(ChooseRowLayout(Pass::kBackward, DType::kBF16, hidden, true).realigned) << hidden;
  }
  for (int64_t hidden : {16385, 20001, 24575, 32767, 40001, 65535}) {
    const RowLayout l = ChooseRowLayout(Pass::kBackward, DType::kBF16, hidden, true);
    EXPECT_TRUE(l.realigned) << hidden;
    EXPECT_EQ(l.ctas_per_row, hidden <= 32768 ? kClusterCtas : kWideClusterCtas) << hidden;
  }
}

// fp32 backward rows of no whole vector (odd widths, unaligned buffers) and
// of half vectors past one block (2 mod 4 past 4096) take the general layout
// of the row rounded up to whole vectors (never a held one), realigned, up to
// a cluster of four (rounded widths up to 32768); wider ones stream, half
// vectors in one block stay.
TEST(RowLayoutTest, Fp32BackwardRowsOfNoWholeVectorAreRealigned) {
  using kernels::cuda::GeneralRowLayout;
  for (bool aligned : {false, true}) {
    for (int64_t hidden = 1; hidden <= 65536; ++hidden) {
      if (aligned && hidden % 4 == 0) continue;  // whole vectors
      const RowLayout l = ChooseRowLayout(Pass::kBackward, DType::kF32, hidden, aligned);
      const RowLayout rounded =
          GeneralRowLayout(Pass::kBackward, DType::kF32, (hidden + 3) / 4 * 4, /*aligned=*/true);
      SCOPED_TRACE(testing::Message() << "aligned " << aligned << " hidden " << hidden);
      const int vec = aligned && hidden % 2 == 0 ? 2 : 1;
      ASSERT_EQ(l.realigned, hidden <= 32768 && (vec == 1 || hidden > 4096));
      if (!l.realigned) {
        ASSERT_EQ(l.vec, vec);
        if (hidden > 32768) {
          ASSERT_TRUE(l.streaming());
        } else {  // half vectors in one block
          ASSERT_EQ(l.ctas_per_row, 1);
          ASSERT_LE(l.iters, 4);
        }
        continue;
      }
      ASSERT_EQ(l.vec, 4);
      ASSERT_EQ(l.iters, rounded.iters);
      ASSERT_EQ(l.tpr, rounded.tpr);
      ASSERT_EQ(l.ctas_per_row, rounded.ctas_per_row);
      ASSERT_EQ(l.rows_per_cta, rounded.rows_per_cta);
      ASSERT_FALSE(HeldIters(Pass::kBackward, 4, l.vec, l.iters));
      ASSERT_LE(l.iters, 4);
    }
  }
  // Rows the held layout takes when aligned: one block of 512 threads of 4
  // vectors up to 8192, a cluster of two beyond.
  EXPECT_EQ(ChooseRowLayout(Pass::kBackward, DType::kF32, 8190, true).tpr, 512);
  ExpectBackwardLayout(DType::kF32, 8190, 4, 4, 1);
  ExpectBackwardLayout(DType::kF32, 8194, 4, 4, kClusterCtas);
  EXPECT_EQ(ChooseRowLayout(Pass::kBackward, DType::kF32, 20001, true).ctas_per_row,
            kWideClusterCtas);
}

// A backward launch's layout is ChooseRowLayout's but for fp32 LayerNorm rows
// of half vectors over more than kTwoVectorF32Threads at 4 each (3074-4094 of
// 2 mod 4) in launches without y, which take the rounded row realigned.
TEST(RowLayoutTest, Fp32LayerNormBackwardHalfRowsPast384ThreadsWithoutYAreRealigned) {
  using kernels::cuda::ChooseBackwardRowLayout;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (bool aligned : {false, true}) {
      for (int64_t hidden = 1; hidden <= 65536; hidden += hidden < 8192 ? 1 : 97) {
        const RowLayout rms = ChooseRowLayout(Pass::kBackward, dtype, hidden, aligned);
        for (bool center : {false, true}) {
          for (bool y : {false, true}) {
            SCOPED_TRACE(testing::Message()
                         << kernels::DTypeName(dtype) << " aligned " << aligned << " hidden "
                         << hidden << " center " << center << " y " << y);
            const RowLayout l = ChooseBackwardRowLayout(dtype, hidden, aligned, center, y);
            const bool moved = center && !y && dtype == DType::kF32 && aligned && hidden % 4 == 2 &&
                               hidden >= 3074 && hidden <= 4094;
            ASSERT_EQ(l.realigned, rms.realigned || moved);
            if (moved) {
              ASSERT_EQ(rms.vec, 2);
              ASSERT_GT(rms.threads(), kTwoVectorF32Threads);
              ASSERT_EQ(l.vec, 4);
              ASSERT_EQ(l.ctas_per_row, 1);
              ASSERT_LE(l.threads(), kTwoVectorF32Threads);
            } else {
              ASSERT_EQ(l.vec, rms.vec);
              ASSERT_EQ(l.iters, rms.iters);
              ASSERT_EQ(l.tpr, rms.tpr);
              ASSERT_EQ(l.rows_per_cta, rms.rows_per_cta);
              ASSERT_EQ(l.ctas_per_row, rms.ctas_per_row);
            }
          }
        }
      }
    }
  }
}

// ForwardKernel's 16-bit instances of 8 vectors per thread assume one row
// group per block (kOneGroup).
TEST(RowLayoutTest, SixteenBitForwardRowsOfEightVectorsFillABlock) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (int64_t hidden = 8; hidden <= 65536; hidden += 8) {
      const RowLayout l = ChooseRowLayout(Pass::kForward, dtype, hidden, true);
      if (l.vec == 8 && l.iters == 8) {
        ASSERT_EQ(l.rows_per_cta, 1) << "hidden " << hidden;
        ASSERT_GT(hidden, 16384);
      }
    }
  }
}

// FullRow picks the instances compiled without bounds tests: only where
// every thread's vectors lie inside the row and the statistic.
TEST(RowLayoutTest, FullRowsHaveNoVectorPastTheRowOrTheStatistic) {
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      for (bool aligned : {false, true}) {
        for (int64_t hidden = 1; hidden <= 65536; ++hidden) {
          const RowLayout l = ChooseRowLayout(pass, dtype, hidden, aligned);
          SCOPED_TRACE(testing::Message() << "pass " << static_cast<int>(pass) << " dtype "
                                          << kernels::DTypeName(dtype) << " aligned " << aligned
                                          << " hidden " << hidden);
          const bool full = !l.streaming() && int64_t{l.tpr} * l.iters * l.vec == hidden;
          ASSERT_EQ(FullRow(l, hidden, hidden), full);
          if (hidden > 1) {
            ASSERT_FALSE(FullRow(l, hidden, hidden - 1));  // a partial statistic
          }
        }
      }
    }
  }
  // The measured shapes of bench/results: full rows, and one that is not.
  EXPECT_TRUE(FullRow(ChooseRowLayout(Pass::kForward, DType::kBF16, 4096, true), 4096, 4096));
  EXPECT_TRUE(FullRow(ChooseRowLayout(Pass::kBackward, DType::kBF16, 16384, true), 16384, 16384));
  EXPECT_TRUE(FullRow(ChooseRowLayout(Pass::kForward, DType::kF32, 16384, true), 16384, 16384));
  EXPECT_FALSE(FullRow(ChooseRowLayout(Pass::kForward, DType::kBF16, 5000, true), 5000, 5000));
  EXPECT_FALSE(FullRow(ChooseRowLayout(Pass::kBackward, DType::kBF16, 5000, true), 5000, 5000));
}

// SparseRow: the 16-bit forward rows whose RMSNorm runs lean with bounds tests
// were measured at these widths (bench/results/gpu-2026-11-27-round40.md);
// a row that fills its layout is never sparse.
TEST(RowLayoutTest, SparseRowsLeaveAnEighthOfTheirVectorsPastTheEnd) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    auto sparse = [&](int64_t hidden) {
      return SparseRow(ChooseRowLayout(Pass::kForward, dtype, hidden, true), hidden);
    };
    for (int64_t hidden : {768, 1536, 2560, 3584}) EXPECT_TRUE(sparse(hidden)) << hidden;
    for (int64_t hidden : {1000, 2000, 3000, 4000, 5000, 6000, 12000, 15000}) {
      EXPECT_FALSE(sparse(hidden)) << hidden;
    }
    for (int64_t hidden = 1; hidden <= 16384; ++hidden) {
      const RowLayout l = ChooseRowLayout(Pass::kForward, dtype, hidden, true);
      if (FullRow(l, hidden, hidden)) {
        ASSERT_FALSE(SparseRow(l, hidden)) << hidden;
      }
    }
  }
}

// Rows of no whole vector (vec 1), as measured (HeldScalarForwardRow):
// 16-bit forward rows that fill more than three quarters of 16 or 32 values
// per thread are held, others and fp32 rows past 8 values per thread stream;
// backward rows are realigned (the tests above), but fp32 ones past 32768,
// which stream.
TEST(RowLayoutTest, ScalarRowsHeldWhereMeasuredFaster) {
  auto layout = [](Pass pass, DType dtype, int64_t hidden) {
    const RowLayout l = ChooseRowLayout(pass, dtype, hidden, /*aligned=*/false);
    EXPECT_EQ(l.vec, 1);
    return l;
  };
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (int64_t hidden : {6145, 8191, 8192}) {
      EXPECT_EQ(layout(Pass::kForward, dtype, hidden).iters, 16) << hidden;
    }
    for (int64_t hidden : {12289, 14500, 16383, 16384}) {
      EXPECT_EQ(layout(Pass::kForward, dtype, hidden).iters, 32) << hidden;
    }
    for (int64_t hidden : {6144, 10001, 12288, 16385}) {
      EXPECT_TRUE(layout(Pass::kForward, dtype, hidden).streaming()) << hidden;
    }
  }
  for (int64_t hidden : {8191, 14500}) {
    EXPECT_TRUE(layout(Pass::kForward, DType::kF32, hidden).streaming()) << hidden;
  }
  for (int64_t hidden : {32769, 40001, 65535}) {
    EXPECT_TRUE(layout(Pass::kBackward, DType::kF32, hidden).streaming()) << hidden;
  }
}

// Rows in aligned buffers whose width a 16-byte vector does not divide but an
// 8-byte one does (16-bit widths of 4 mod 8, fp32 of 2 mod 4) take half
// vectors; others of no whole 16-byte vector, and unaligned buffers, vec 1
// (but realigned backward rows: 16-byte vectors).
TEST(RowLayoutTest, HalfVectorsWhereOnlyAnEightByteVectorDividesTheRow) {
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    for (DType dtype : {DType::kF16, DType::kBF16}) {
      EXPECT_EQ(ChooseRowLayout(pass, dtype, 8188, true).vec, 4);
      EXPECT_EQ(ChooseRowLayout(pass, dtype, 4100, true).vec, 4);
      EXPECT_EQ(ChooseRowLayout(pass, dtype, 14500, true).vec, pass == Pass::kForward ? 4 : 8);
      EXPECT_EQ(ChooseRowLayout(pass, dtype, 4096, true).vec, 8);
      // Backward rows realigned (RealignedRow) take vectors of 8 all the same.
      EXPECT_EQ(ChooseRowLayout(pass, dtype, 4098, true).vec, pass == Pass::kForward ? 1 : 8);
      EXPECT_EQ(ChooseRowLayout(pass, dtype, 4094, true).vec, pass == Pass::kForward ? 1 : 8);
      EXPECT_EQ(ChooseRowLayout(pass, dtype, 14500, false).vec, pass == Pass::kForward ? 1 : 8);
    }
    const bool forward = pass == Pass::kForward;
    EXPECT_EQ(ChooseRowLayout(pass, DType::kF32, 8190, true).vec, forward ? 2 : 4);
    EXPECT_EQ(ChooseRowLayout(pass, DType::kF32, 1002, true).vec, 2);
    EXPECT_EQ(ChooseRowLayout(pass, DType::kF32, 8192, true).vec, 4);
    EXPECT_EQ(ChooseRowLayout(pass, DType::kF32, 8191, true).vec, forward ? 1 : 4);
    EXPECT_EQ(ChooseRowLayout(pass, DType::kF32, 8190, false).vec, forward ? 1 : 4);
    EXPECT_EQ(ChooseRowLayout(pass, DType::kF32, 40002, true).vec, 2);
  }
  EXPECT_TRUE(ChooseRowLayout(Pass::kBackward, DType::kBF16, 4094, true).realigned);
  EXPECT_TRUE(ChooseRowLayout(Pass::kBackward, DType::kF32, 8190, true).realigned);
  // None of the 16-byte rules for half vectors: no two-vector backward.
  EXPECT_FALSE(TwoVectorBackwardRow(4, 2, 1000));
  EXPECT_TRUE(TwoVectorBackwardRow(8, 2, 1000));
}

TEST(RowLayoutTest, BackwardHalfVectorsHoldAtMostFourPerThread) {
  // Rows of half vectors past one block at 4 per thread are realigned: 16-bit
  // ones (past 8192) all the way, fp32 ones (past 4096) up to 32768 and
  // streamed past it.
  ExpectBackwardLayout(DType::kBF16, 8188, 4, 4, 1);
  ExpectBackwardLayout(DType::kF32, 4090, 2, 4, 1);
  EXPECT_TRUE(ChooseRowLayout(Pass::kBackward, DType::kF32, 4098, true).realigned);
  EXPECT_TRUE(ChooseRowLayout(Pass::kBackward, DType::kF32, 40002, true).streaming());
  for (int64_t hidden = 4; hidden <= 65536; hidden += 8) {
    const RowLayout row = ChooseRowLayout(Pass::kBackward, DType::kF16, hidden, true);
    if (hidden <= 8192) {
      ASSERT_EQ(row.vec, 4) << hidden;
      EXPECT_LE(row.iters, 4) << hidden;
      EXPECT_EQ(row.ctas_per_row, 1) << hidden;
    } else {
      ASSERT_TRUE(row.realigned) << hidden;
      EXPECT_EQ(row.vec, 8) << hidden;
    }
  }
  // Forward rows of half vectors keep up to 8, fp32 ones up to 16; 16-bit ones
  // take 4 where 4 fit a block, as rows of 16-byte vectors do.
  EXPECT_EQ(ChooseRowLayout(Pass::kForward, DType::kBF16, 14500, true).iters, 8);
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    const RowLayout l = ChooseRowLayout(Pass::kForward, dtype, 4100, true);
    EXPECT_EQ(l.vec, 4);
    EXPECT_EQ(l.iters, 4);
    EXPECT_EQ(l.tpr, 288);
  }
  EXPECT_TRUE(ChooseRowLayout(Pass::kForward, DType::kBF16, 20004, true).streaming());
  EXPECT_EQ(ChooseRowLayout(Pass::kForward, DType::kF32, 8190, true).iters, 8);
  const RowLayout f32_long = ChooseRowLayout(Pass::kForward, DType::kF32, 12002, true);
  EXPECT_EQ(f32_long.vec, 2);
  EXPECT_EQ(f32_long.iters, 16);
  EXPECT_EQ(f32_long.tpr, 384);
  EXPECT_EQ(ChooseRowLayout(Pass::kForward, DType::kF32, 16382, true).iters, 16);
  EXPECT_TRUE(ChooseRowLayout(Pass::kForward, DType::kF32, 16386, true).streaming());
}

// SpreadLayout changes only forward layouts that the kernels reduce
// canonically, and keeps what their bits depend on: the row's vectors, the
// full-row test, and the order of the canonical tree (iters and tpr powers of
// two, iters * tpr unchanged); a warp's accesses cover runs of >= 8 vectors.
TEST(RowLayoutTest, SpreadLayoutsKeepTheRowAndItsReductionOrder) {
  int spread_layouts = 0;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (bool aligned : {false, true}) {
      for (int64_t hidden = 1; hidden <= 65536; ++hidden) {
        const RowLayout l = ChooseRowLayout(Pass::kForward, dtype, hidden, aligned);
        SCOPED_TRACE(testing::Message() << "dtype " << kernels::DTypeName(dtype) << " aligned "
                                        << aligned << " hidden " << hidden);
        if (hidden > 1) {  // a partial statistic: never spread
          const RowLayout partial = SpreadLayout(l, hidden, hidden - 1);
          ASSERT_EQ(partial.spread, 0);
          ASSERT_EQ(partial.tpr, l.tpr);
        }
        const RowLayout s = SpreadLayout(l, hidden, hidden);
        ASSERT_EQ(l.spread, 0);
        if (s.spread == 0) {
          ASSERT_EQ(s.tpr, l.tpr);
          ASSERT_EQ(s.iters, l.iters);
          continue;
        }
        ++spread_layouts;
        ASSERT_TRUE(FullRow(l, hidden, hidden));
        ASSERT_TRUE(FullRow(s, hidden, hidden));
        ASSERT_LE(l.vec * l.iters, kernels::cuda::kMaxCanonicalElemsPerThread);
        ASSERT_EQ(s.vec, l.vec);
        ASSERT_EQ(s.ctas_per_row, 1);
        ASSERT_LE(s.spread, 2);
        ASSERT_EQ(s.tpr, l.tpr << s.spread);
        ASSERT_EQ(s.iters << s.spread, l.iters);
        ASSERT_EQ(s.tpr & (s.tpr - 1), 0);
        ASSERT_LE(s.threads(), kMaxThreads);
        ASSERT_GE(s.iters, 1);
        ASSERT_GE(std::min(s.tpr, 32) >> s.spread, std::min(l.tpr, 8));
      }
    }
  }
  ASSERT_GT(spread_layouts, 0);
  // The latency-bound shapes of bench/results: one thread per 16-byte vector
  // of a bf16 row of 4096, two per fp32 one.
  const RowLayout bf16 =
      SpreadLayout(ChooseRowLayout(Pass::kForward, DType::kBF16, 4096, true), 4096, 4096);
  EXPECT_EQ(bf16.tpr, 512);
  EXPECT_EQ(bf16.iters, 1);
  const RowLayout fp32 =
      SpreadLayout(ChooseRowLayout(Pass::kForward, DType::kF32, 4096, true), 4096, 4096);
  EXPECT_EQ(fp32.tpr, 512);
  EXPECT_EQ(fp32.iters, 2);
  // Capped (launches of more rows): part of the way, or not at all.
  const RowLayout bf16_layout = ChooseRowLayout(Pass::kForward, DType::kBF16, 4096, true);
  const RowLayout half = SpreadLayout(bf16_layout, 4096, 4096, /*max_tpr=*/337);
  EXPECT_EQ(half.spread, 1);
  EXPECT_EQ(half.tpr, 256);
  EXPECT_EQ(half.iters, 2);
  EXPECT_EQ(SpreadLayout(bf16_layout, 4096, 4096, /*max_tpr=*/255).spread, 0);
}

// The backward kernels' walk over a segment (every row group takes its row of
// each of its chunk's tiles): every row of the segment belongs to exactly one
// chunk, each row once, none outside it; interleaved chunks differ by at most
// one tile.
TEST(RowLayoutTest, ChunksTakeEveryRowOfTheirSegmentOnce) {
  const int64_t begin = 37;
  for (const int rows_per_cta : {1, 2, 8}) {
    RowLayout layout;
    layout.rows_per_cta = rows_per_cta;
    for (const int64_t rows : {1, 2, 7, 70, 263, 1000, 4097}) {
      for (const int max_chunks : {1, 3, 132, 264}) {
        const int chunks = BackwardChunks(rows, layout, max_chunks);
        const int64_t chunk_rows = BackwardChunkRows(rows, chunks);
        for (const bool interleaved : {false, true}) {
          SCOPED_TRACE(testing::Message()
                       << "rows " << rows << " rows_per_cta " << rows_per_cta << " chunks "
                       << chunks << " interleaved " << interleaved);
          std::vector<int> owners(rows, 0);
          int64_t fewest = rows, most = 0;
          for (int index = 0; index < chunks; ++index) {
            const ChunkRows c =
                ChunkOfSegment(begin, rows, chunk_rows, chunks, index, rows_per_cta, interleaved);
            ASSERT_LE(c.end, begin + rows);
            int64_t tiles = 0;
            for (int64_t tile = c.first; tile < c.end; tile += c.stride, ++tiles) {
              for (int group = 0; group < rows_per_cta; ++group) {
                const int64_t row = tile + group;
                if (row >= c.end) continue;  // a dead row group
                ASSERT_GE(row, begin);
                ++owners[row - begin];
              }
            }
            fewest = std::min(fewest, tiles);
            most = std::max(most, tiles);
          }
          for (int64_t row = 0; row < rows; ++row) ASSERT_EQ(owners[row], 1) << "row " << row;
          // Braces: EXPECT_LE expands to an if / else of its own.
          if (interleaved) {
            EXPECT_LE(most - fewest, 1);
          }
        }
      }
    }
  }
}

// Interleaved chunks for rows of up to 8192 and rows that fill their layout
// (the measured shapes of bench/results/gpu-2026-11-25-round14.md), adjacent
// runs elsewhere.
TEST(RowLayoutTest, InterleavedChunksForShortRowsAndRowsThatFillTheirLayout) {
  auto interleaved = [](DType dtype, int64_t hidden) {
    return InterleavedChunks(ChooseRowLayout(Pass::kBackward, dtype, hidden, true), hidden);
  };
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    for (const int64_t hidden : {1024, 4096, 4200, 5000, 7000, 8192, 12288, 16384}) {
      EXPECT_TRUE(interleaved(dtype, hidden)) << hidden;
    }
    for (const int64_t hidden : {9000, 10000, 20000, 24000}) {
      EXPECT_FALSE(interleaved(dtype, hidden)) << hidden;
    }
  }
  EXPECT_FALSE(interleaved(DType::kF32, 65535));  // the streaming kernel
}

}  // namespace
}  // namespace normserve::kernels_test
