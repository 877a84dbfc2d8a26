// Bitwise guarantees of backend.h, on every backend:
//  - a row's forward outputs and backward dx are the same bits whether the row
//    is computed alone or inside batches of several segments, also next to
//    segments with the residual branch when it has none;
//  - a segment's grad_weight / grad_bias are the same bits alone or batched,
//    and run to run;
//  - misaligned buffers (offset by one element) give correct results, bitwise
//    those of aligned buffers;
//  - concurrent Forward calls on one backend give the sequential results.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "norm_case.h"
#include "relative_error.h"
#include "suite_params.h"

namespace normserve::kernels_test {
namespace {

using kernels::BackwardBatch;
using kernels::BackwardSegment;
using kernels::DType;
using kernels::ForwardBatch;
using kernels::ForwardSegment;

bool SameBytes(const void* a, const void* b, size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

const uint8_t* Bytes(const void* p) { return static_cast<const uint8_t*>(p); }

// Element i of t becomes -0: the sign bit alone, in any of the dtypes.
void SetNegativeZero(HostTensor& t, int64_t i) {
  const size_t e = t.bytes() / t.size();
  uint8_t* element = static_cast<uint8_t*>(t.data()) + i * e;
  std::memset(element, 0, e);
  element[e - 1] = 0x80;  // little-endian: the sign is the top bit of the last byte
}

class DeterminismTest : public BackendTest<DType, int64_t> {
 protected:
  DType dtype() const { return std::get<1>(GetParam()); }
  int64_t hidden() const { return std::get<2>(GetParam()); }

  // A forward case: LayerNorm with weight, bias, residual, fp32 residual_out
  // and statistics; segment 1 is the one under test.
  NormCase ForwardCase(std::vector<int64_t> segment_rows) const {
    NormCase c;
    c.dtype = dtype();
    c.hidden = hidden();
    c.segment_rows = std::move(segment_rows);
    c.config.center = true;
    c.config.partial = 0.25;
    c.weight = c.bias = c.residual = c.residual_out = c.stats_out = true;
    c.residual_dtype = DType::kF32;
    return c;
  }

  NormCase BackwardCase(std::vector<int64_t> segment_rows) const {
    NormCase c;
    c.dtype = dtype();
    c.hidden = hidden();
    c.segment_rows = std::move(segment_rows);
    c.weight = c.residual = c.grad_residual_out = c.grad_weight = c.grad_bias = true;
    c.residual_dtype = dtype();
    return c;
  }

  // Rows of the big neighbour segment: enough for the multi-threaded path.
  int64_t BigRows() const { return std::max<int64_t>(3, 300000 / hidden()); }
  // Whether the CUDA backend spreads this case's full rows in fused launches of
  // many rows (SpreadsOnce, forward_launch.cuh): 16-bit rows of a power-of-two
  // length up to 16384.
  bool FusedLaunchesSpread() const {
    const int64_t d = hidden();
    return dtype() != DType::kF32 && d <= 16384 && (d & (d - 1)) == 0;
  }
  bool OnCuda() const { return std::get<0>(GetParam()) == "cuda"; }
  // Rows of a plain launch that the CUDA backend runs through LeanRowKernel
  // (forward_lean.cuh), or 0: 16-bit rows of a power-of-two length spread once
  // in launches of 2^25 elements (SpreadsOnce: bf16 rows up to 8192 on GPUs
  // such as the H100, 16-bit rows of 1024-4096 on the H200), fp32 rows of
  // 4096 and 8192 in launches of 2^23 (LeanUnspreadInstance), and fp32 rows
  // of 1024 and 2048 in launches of 2^21, a wave fewer than ForwardKernel's
  // (LeanPairInstance). (The launches of 600 rows are lean too, unspread, at
  // hidden 1024-16384, but fp32 rows of 1024 and 2048.) 0 on the CPU backend,
  // which has no such launches: the case would only cost CI time (about 14 s
  // per hidden size).
  int64_t LeanLaunchRows() const {
    const int64_t d = hidden();
    if (!OnCuda() || d > 8192 || (d & (d - 1)) != 0) return 0;
    if (dtype() != DType::kF32) return (int64_t{1} << 25) / d;
    if (d == 1024 || d == 2048) return (int64_t{1} << 21) / d;
    return d >= 4096 ? (int64_t{1} << 23) / d : 0;
  }
  // Rows of a plain fp32 launch that ForwardKernel runs on a GPU of 132 SMs:
  // of rows of 4096 or 8192 where LeanRowKernel would take as many waves
  // (FewerWaves, forward_instances.cuh), 2 each; of rows of 2048 past
  // kLeanFp32PairElements elements (LeanPairInstance). 0 elsewhere. (On a
  // GPU of high bandwidth per SM such as the H200, RMSNorm rows of 4096 and
  // LayerNorm rows of 2048 there run through LeanRowKernel.)
  int64_t GenericLaunchRows() const {
    const int64_t d = hidden();
    if (!OnCuda() || dtype() != DType::kF32) return 0;
    if (d == 2048) return (int64_t{1} << 25) / d + 1;
    if (d != 4096 && d != 8192) return 0;
    return (int64_t{1} << 22) / d;
  }
  // Rows of a plain fp32 launch that a GPU of high bandwidth per SM (the H200)
  // runs through LeanRowKernel's instances of 2 vectors per thread that the
  // launches above do not take (forward_launch.cuh): rows of 1024 and 2048 in
  // launches of 2^22 elements, two waves of the lean instance, which load
  // weight / bias with x (LeanPairInstance); LayerNorm rows of 4096 past
  // kLeanFp32WideElements, spread once (SpreadFp32Instance). 0 elsewhere.
  int64_t HighBandwidthLaunchRows() const {
    const int64_t d = hidden();
    if (!OnCuda() || dtype() != DType::kF32) return 0;
    if (d == 1024 || d == 2048) return (int64_t{1} << 22) / d;
    return d == 4096 ? (int64_t{1} << 25) / d + 1 : 0;
  }

  // Runs row `row` of segment `index` of `batch` (whose data is `s`) alone, as
  // a one-row segment pointing into the same inputs, and expects the bits the
  // batch gave it: out, residual_out (when the segment has one), mean, rstd.
  void ExpectRowAloneMatches(const ForwardBatch& batch, size_t index, const ForwardSegmentData& s,
                             int64_t row) {
    SCOPED_TRACE(::testing::Message() << "row " << row);
    const int64_t d = hidden();
    const size_t e = kernels::DTypeSize(dtype());
    HostTensor out = HostTensor::Poisoned(dtype(), d);
    HostTensor residual_out = HostTensor::Poisoned(DType::kF32, d);
    float mean = NAN;
    float rstd = NAN;
    ForwardBatch alone = batch;
    ForwardSegment segment = batch.segments[index];
    const bool has_residual_out = segment.residual_out != nullptr;
    segment.rows = 1;
    segment.x = Bytes(s.x.data()) + row * d * e;
    if (segment.y != nullptr) segment.y = Bytes(s.y.data()) + row * d * e;
    segment.out = out.data();
    if (has_residual_out) segment.residual_out = residual_out.data();
    segment.mean = &mean;
    segment.rstd = &rstd;
    alone.segments = {segment};
    ASSERT_TRUE(backend().Forward(alone).ok());
    EXPECT_TRUE(SameBytes(out.data(), Bytes(s.out.data()) + row * d * e, d * e)) << "out";
    if (has_residual_out) {
      EXPECT_TRUE(SameBytes(residual_out.data(), Bytes(s.residual_out.data()) + row * d * 4, d * 4))
          << "residual_out";
    }
    EXPECT_TRUE(SameBytes(&mean, static_cast<const float*>(s.mean.data()) + row, 4)) << "mean";
    EXPECT_TRUE(SameBytes(&rstd, static_cast<const float*>(s.rstd.data()) + row, 4)) << "rstd";
  }

  // Runs case c's batch on fresh data, then each of `rows` of segment `index`
  // alone (ExpectRowAloneMatches).
  void ExpectRowsAloneMatch(const NormCase& c, size_t index, std::vector<int64_t> rows,
                            uint64_t seed) {
    std::mt19937_64 rng(seed);
    ForwardData data = MakeForwardData(c, rng);
    const ForwardBatch batch = data.Batch(c);
    ASSERT_TRUE(backend().Forward(batch).ok());
    for (int64_t row : rows) ExpectRowAloneMatches(batch, index, data.segments[index], row);
  }
};

TEST_P(DeterminismTest, RowsAreBitwiseIdenticalAloneOrBatched) {
  const int64_t rows = 40;
  // Batched: [big neighbour, segment under test, small neighbour].
  ExpectRowsAloneMatch(ForwardCase({BigRows(), rows, 3}), 1, {0, 17, rows - 1}, 31);
}

// Full rows (the statistic over the whole row) of launches too small to fill
// the GPU are spread over more threads on the CUDA backend (SpreadLayout);
// their bits must be those of the same rows in a launch of many rows.
// LayerNorm and RMSNorm, packed (plain) and fp32 (residual) rows. Rows alone
// are spread all the way; launches of 600 rows not at all (forward_launch.cuh),
// even at hidden 512; of 200 rows, on a GPU of 132 SMs, part of the way (a
// bf16 row of 4096 over 256 threads rather than 128 or 512). 16-bit rows with
// a residual in launches of 1200 rows are spread once (on a GPU of 132 SMs
// through LeanRowKernel's fused instance at hidden 2048-8192, a wave fewer:
// LeanFusedInstance); the lean launch's rows (LeanLaunchRows) run through
// LeanRowKernel, the generic launch's (GenericLaunchRows) through
// ForwardKernel, and on the H200 those of HighBandwidthLaunchRows through
// LeanRowKernel's instances of 2 vectors per thread. Fused 16-bit rows of
// 6144, 12288 and 16384 in launches of 600 rows run through LeanRowKernel's
// unspread fused instances (LeanFusedUnspreadInstance).
TEST_P(DeterminismTest, FullRowsAreBitwiseIdenticalInSmallAndLargeLaunches) {
  const int64_t d = hidden();
  if (d > 16384) GTEST_SKIP() << "rows this long fill a block unspread";
  const int64_t lean_rows = LeanLaunchRows();
  const int64_t generic_rows = GenericLaunchRows();
  const int64_t high_bandwidth_rows = HighBandwidthLaunchRows();
  for (bool center : {true, false}) {
    for (const int64_t rows : {int64_t{600}, int64_t{200}, int64_t{1200}, lean_rows, generic_rows,
                               high_bandwidth_rows}) {
      for (bool residual : {false, true}) {
        // Launches of 1200 rows: fused 16-bit rows spread once, and on the
        // CUDA backend plain 16-bit rows unspread through LeanRowKernel
        // (LeanUnspreadInstance), also at hidden 1024, where 600 rows are
        // latency-bound.
        if (rows == 1200 && !(FusedLaunchesSpread() && (residual || OnCuda()))) continue;
        const bool plain_only =
            rows == lean_rows || rows == generic_rows || rows == high_bandwidth_rows;
        if (plain_only && (residual || rows == 0)) continue;
        // On the CUDA backend, launches of 600 rows and the lean and generic
        // launches also with the other parameters: LayerNorm with neither weight nor
        // bias, RMSNorm with a bias and no weight. Latency-bound and lean
        // instances branch at compile time on which there are, the generic
        // ones read w = 1 and b = 0 at run time: a row without weight once
        // got other bits alone than in a larger launch
        // (gpu-2026-11-26-round29.md, call 25).
        for (bool other_params : {false, true}) {
          if (other_params && !(rows == 600 && OnCuda()) && !plain_only) continue;
          SCOPED_TRACE(::testing::Message()
                       << "rows " << rows << " center " << center << " residual " << residual
                       << " other parameters " << other_params);
          NormCase c;
          c.dtype = dtype();
          c.hidden = d;
          c.segment_rows = {rows};
          c.config.center = center;
          c.weight = !other_params;
          c.bias = center != other_params;
          c.residual = c.residual_out = residual;
          c.residual_dtype = DType::kF32;
          c.stats_out = true;
          ExpectRowsAloneMatch(c, 0, {0, rows / 2, rows - 1}, 37);
        }
      }
    }
  }
}

// Rows with bounds tests (vectors past the row's end, or a partial statistic)
// in launches of 1200 and 2100 rows, which the CUDA backend runs through
// LeanRowKernel's bounds-tested instances where they are 16-bit LayerNorm rows
// (here 768, 1000, 1536, 3000, 5000, 6000, 12000 and 15000, over 32, 32, 64,
// 96, 160, 192, 384 and 480 threads), sparse RMSNorm rows (SparseRow: 768,
// 1536) or rows of half vectors (LeanHalfInstance: fp32 514, 1002, 2042,
// 3002, 4098, 10002, 12002 and 16382, their weight and bias loaded each way of
// ParamLoads, LayerNorm rows of 3002 read-only from 2048 rows and of 10002
// from 1024; 16-bit 4100, 12004 and, 16 per thread, 16388 and 20004 over
// 288 and 320 threads, LongHalfRowInstance's (but StagedLongRowKernel's
// LayerNorm rows over 320), 22524, 24572, 28668 and 32764 over 352, 384, 448
// and 512, StagedLongRowKernel's, copied in 16-byte pieces in these launches
// and vector by vector alone) or 16-bit rows of 8 vectors of 8 per thread
// (LongFullRowInstance: 16392 and 20480, over 288 and 320 threads, full rows
// too; StagedLongRowKernel, rows staged through shared memory: 22000, 22536,
// 24576, 30000 and 32768, over 352, 384, 384, 480 and 512, bounds-tested and
// full), must give the bits of the same rows alone (ForwardKernel's
// latency-bound instances; at 16388-32764 StagedLongRowKernel copying vector
// by vector, one block per SM).
// LayerNorm and RMSNorm, whole and partial statistics, with and without weight
// and bias; in launches of 1200 rows also fused (a residual and fp32
// residual_out), which 16-bit rows of 4 vectors per thread over 1-4, 7 and
// 11-16 warps (LayerNorm also 8 and 9) take through LeanRowKernel's fused
// bounds-tested instances (LeanFusedUnspreadInstance; RMSNorm rows of 768,
// 1536 and 2304 at 3 vectors per thread: FusedThreeVectorInstance). Plain rows
// of 768, 1536 and 2304 at 3 vectors per thread (ThreeVectorInstance) with the
// weight beside x; bf16 LayerNorm rows of 768 with weight and bias beside x in
// a launch of 8192 rows (several waves). Not on the CPU backend, whose
// rows take one path at any launch size: the case would only cost CI time
// (about 5 s per hidden size and dtype).
class BoundsTestedRowsTest : public DeterminismTest {};

TEST_P(BoundsTestedRowsTest, RowsAreBitwiseIdenticalInSmallAndLargeLaunches) {
  if (!OnCuda()) GTEST_SKIP() << "one path per row on this backend";
  std::vector<int64_t> launches = {1200, 2100};
  if (hidden() == 768) launches.push_back(8192);
  for (const int64_t rows : launches) {
    for (bool center : {true, false}) {
      for (double partial : {1.0, 0.7}) {
        for (bool params : {true, false}) {
          // Fused rows (a residual, p stored as fp32) in the launches of 1200
          // rows, with weight and bias.
          for (bool residual : {false, true}) {
            if (residual && (rows != 1200 || !params)) continue;
            SCOPED_TRACE(::testing::Message()
                         << "rows " << rows << " center " << center << " partial " << partial
                         << " weight and bias " << params << " residual " << residual);
            NormCase c;
            c.dtype = dtype();
            c.hidden = hidden();
            c.segment_rows = {rows};
            c.config.center = center;
            c.config.partial = partial;
            c.weight = c.bias = params;
            c.residual = c.residual_out = residual;
            c.residual_dtype = DType::kF32;
            c.stats_out = true;
            ExpectRowsAloneMatch(c, 0, {0, rows / 2, rows - 1}, 41);
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, BoundsTestedRowsTest,
    ::testing::Combine(::testing::ValuesIn(BackendNames()), AllDTypes(),
                       ::testing::Values(514, 768, 1000, 1002, 1536, 2042, 2304, 2560, 3000, 3002,
                                         3584, 4098, 4100, 5000, 6000, 7000, 8000, 9000, 10002,
                                         11000, 12000, 12002, 12004, 13000, 14000, 15000, 16000,
                                         16382, 16388, 16392, 20004, 20480, 22000, 22524, 22536,
                                         24572, 24576, 28668, 30000, 32764, 32768)),
    SuiteParamName);

TEST_P(DeterminismTest, BackwardRowsAndGradWeightAreBitwiseIdenticalAloneOrBatched) {
  const int64_t d = hidden();
  const int64_t rows = 70;  // three gradient chunks, the last one partial
  std::mt19937_64 rng(32);
  NormCase batched = BackwardCase({BigRows(), rows, 5});
  BackwardData data = MakeBackwardData(batched, rng);
  ASSERT_TRUE(backend().Backward(data.Batch(batched)).ok());
  const BackwardSegmentData& s = data.segments[1];
  const size_t e = kernels::DTypeSize(dtype());

  // The segment alone: same inputs, fresh outputs.
  HostTensor grad_in = HostTensor::Poisoned(dtype(), rows * d);
  HostTensor grad_weight = HostTensor::Poisoned(DType::kF32, d);
  HostTensor grad_bias = HostTensor::Poisoned(DType::kF32, d);
  BackwardBatch alone = data.Batch(batched);
  BackwardSegment segment = alone.segments[1];
  segment.grad_in = grad_in.data();
  segment.grad_weight = static_cast<float*>(grad_weight.data());
  segment.grad_bias = static_cast<float*>(grad_bias.data());
  alone.segments = {segment};
  ASSERT_TRUE(backend().Backward(alone).ok());
  EXPECT_TRUE(SameBytes(grad_in.data(), s.grad_in.data(), grad_in.bytes())) << "grad_in";
  EXPECT_TRUE(SameBytes(grad_weight.data(), s.grad_weight.data(), d * 4)) << "grad_weight";
  EXPECT_TRUE(SameBytes(grad_bias.data(), s.grad_bias.data(), d * 4)) << "grad_bias";

  // One row alone (no weight gradients): dx is the batched row's.
  for (int64_t row : {int64_t{0}, int64_t{33}, rows - 1}) {
    SCOPED_TRACE(::testing::Message() << "row " << row);
    HostTensor row_grad_in = HostTensor::Poisoned(dtype(), d);
    BackwardSegment one = segment;
    one.rows = 1;
    one.x = Bytes(s.x.data()) + row * d * e;
    one.y = Bytes(s.y.data()) + row * d * e;
    one.grad_out = Bytes(s.grad_out.data()) + row * d * e;
    one.grad_residual_out = Bytes(s.grad_residual_out.data()) + row * d * e;
    one.grad_in = row_grad_in.data();
    one.grad_weight = nullptr;
    one.grad_bias = nullptr;
    BackwardBatch batch = alone;
    batch.segments = {one};
    ASSERT_TRUE(backend().Backward(batch).ok());
    EXPECT_TRUE(SameBytes(row_grad_in.data(), Bytes(s.grad_in.data()) + row * d * e, d * e));
  }
}

// A batch may mix segments with and without the residual branch (the server
// batches them together); the kernels a launch picks then differ from those of
// a plain launch, and a plain segment's bits must not.
TEST_P(DeterminismTest, PlainSegmentsAreBitwiseIdenticalNextToResidualOnes) {
  const int64_t d = hidden();
  const size_t e = kernels::DTypeSize(dtype());
  std::mt19937_64 rng(33);
  // Next to 5 residual rows, a latency-bound launch; next to 1200, one where
  // fused launches spread their rows (FusedLaunchesSpread).
  for (const int64_t neighbours : {int64_t{5}, int64_t{1200}}) {
    if (neighbours > 5 && !FusedLaunchesSpread()) continue;
    SCOPED_TRACE(::testing::Message() << "next to " << neighbours << " residual rows");
    NormCase c = ForwardCase({neighbours, 40});
    ForwardData data = MakeForwardData(c, rng);
    ForwardBatch mixed = data.Batch(c);
    mixed.segments[1].y = nullptr;
    mixed.segments[1].residual_out = nullptr;
    ASSERT_TRUE(backend().Forward(mixed).ok());
    const ForwardSegmentData& s = data.segments[1];
    HostTensor out = HostTensor::Poisoned(dtype(), 40 * d);
    HostTensor mean = HostTensor::Poisoned(DType::kF32, 40);
    HostTensor rstd = HostTensor::Poisoned(DType::kF32, 40);
    ForwardBatch alone = mixed;
    alone.segments = {mixed.segments[1]};
    alone.segments[0].out = out.data();
    alone.segments[0].mean = static_cast<float*>(mean.data());
    alone.segments[0].rstd = static_cast<float*>(rstd.data());
    ASSERT_TRUE(backend().Forward(alone).ok());
    EXPECT_TRUE(SameBytes(out.data(), s.out.data(), 40 * d * e)) << "forward out";
    EXPECT_TRUE(SameBytes(mean.data(), s.mean.data(), 40 * 4)) << "forward mean";
    EXPECT_TRUE(SameBytes(rstd.data(), s.rstd.data(), 40 * 4)) << "forward rstd";
  }
  // RMSNorm and LayerNorm, with and without saved statistics; some of the
  // plain segment's x are -0 (the residual launch forms x + 0 = +0 there).
  for (const auto& [center, saved_stats] : {std::pair{false, false}, {true, true}, {true, false}}) {
    SCOPED_TRACE(::testing::Message() << (center ? "LN" : "RMS") << " saved_stats=" << saved_stats);
    NormCase c = BackwardCase({5, 70});
    c.config.center = center;
    c.saved_stats = saved_stats;
    BackwardData data = MakeBackwardData(c, rng);
    for (int64_t i = 0; i < 70 * d; i += 97) SetNegativeZero(data.segments[1].x, i);
    BackwardBatch mixed = data.Batch(c);
    mixed.segments[1].y = nullptr;
    mixed.segments[1].grad_residual_out = nullptr;
    ASSERT_TRUE(backend().Backward(mixed).ok());
    const BackwardSegmentData& s = data.segments[1];
    HostTensor grad_in = HostTensor::Poisoned(dtype(), 70 * d);
    HostTensor grad_weight = HostTensor::Poisoned(DType::kF32, d);
    HostTensor grad_bias = HostTensor::Poisoned(DType::kF32, d);
    BackwardBatch alone = mixed;
    alone.segments = {mixed.segments[1]};
    alone.segments[0].grad_in = grad_in.data();
    alone.segments[0].grad_weight = static_cast<float*>(grad_weight.data());
    alone.segments[0].grad_bias = static_cast<float*>(grad_bias.data());
    ASSERT_TRUE(backend().Backward(alone).ok());
    EXPECT_TRUE(SameBytes(grad_in.data(), s.grad_in.data(), grad_in.bytes())) << "grad_in";
    EXPECT_TRUE(SameBytes(grad_weight.data(), s.grad_weight.data(), d * 4)) << "grad_weight";
    EXPECT_TRUE(SameBytes(grad_bias.data(), s.grad_bias.data(), d * 4)) << "grad_bias";
  }
}

TEST_P(DeterminismTest, GradWeightIsDeterministic) {
  std::mt19937_64 rng(33);
  NormCase c = BackwardCase({BigRows(), 37});
  c.config.center = true;
  BackwardData data = MakeBackwardData(c, rng);
  ASSERT_TRUE(backend().Backward(data.Batch(c)).ok());
  std::vector<HostTensor> first;
  for (const BackwardSegmentData& s : data.segments) {
    first.push_back(s.grad_weight);
    first.push_back(s.grad_bias);
  }
  for (int run = 0; run < 3; ++run) {
    for (BackwardSegmentData& s : data.segments) {
      s.grad_weight = HostTensor::Poisoned(DType::kF32, hidden());
      s.grad_bias = HostTensor::Poisoned(DType::kF32, hidden());
    }
    ASSERT_TRUE(backend().Backward(data.Batch(c)).ok());
    for (size_t i = 0; i < data.segments.size(); ++i) {
      EXPECT_TRUE(SameBytes(first[2 * i].data(), data.segments[i].grad_weight.data(),
                            first[2 * i].bytes()));
      EXPECT_TRUE(SameBytes(first[2 * i + 1].data(), data.segments[i].grad_bias.data(),
                            first[2 * i + 1].bytes()));
    }
  }
}

TEST_P(DeterminismTest, UnalignedPointers) {
  std::mt19937_64 rng(34);
  {
    NormCase c = ForwardCase({5, 3});
    c.residual_dtype = dtype();
    ForwardData aligned = MakeForwardData(c, rng);
    ForwardData unaligned = aligned;
    unaligned.weight = aligned.weight.Offset(1);
    unaligned.bias = aligned.bias.Offset(1);
    for (ForwardSegmentData& s : unaligned.segments) {
      for (HostTensor* t : {&s.x, &s.y, &s.out, &s.residual_out, &s.mean, &s.rstd}) {
        *t = t->Offset(1);
      }
    }
    ASSERT_TRUE(backend().Forward(aligned.Batch(c)).ok());
    ASSERT_TRUE(backend().Forward(unaligned.Batch(c)).ok());
    for (size_t i = 0; i < c.segment_rows.size(); ++i) {
      const ForwardSegmentData& a = aligned.segments[i];
      const ForwardSegmentData& u = unaligned.segments[i];
      const reference::ForwardOutputs ref = ReferenceForward(c, unaligned, i);
      EXPECT_LE(reference::RelativeError(u.out.Values(), ref.out), Tolerance(dtype()));
      EXPECT_TRUE(SameBytes(a.out.data(), u.out.data(), a.out.bytes()));
      EXPECT_TRUE(SameBytes(a.residual_out.data(), u.residual_out.data(), a.residual_out.bytes()));
      EXPECT_TRUE(SameBytes(a.rstd.data(), u.rstd.data(), a.rstd.bytes()));
    }
  }
  {
    NormCase c = BackwardCase({5, 40});
    c.config.center = true;
    BackwardData aligned = MakeBackwardData(c, rng);
    BackwardData unaligned = aligned;
    unaligned.weight = aligned.weight.Offset(1);
    for (BackwardSegmentData& s : unaligned.segments) {
      for (HostTensor* t : {&s.x, &s.y, &s.grad_out, &s.grad_residual_out, &s.grad_in,
                            &s.grad_weight, &s.grad_bias}) {
        *t = t->Offset(1);
      }
    }
    ASSERT_TRUE(backend().Backward(aligned.Batch(c)).ok());
    ASSERT_TRUE(backend().Backward(unaligned.Batch(c)).ok());
    for (size_t i = 0; i < c.segment_rows.size(); ++i) {
      const BackwardSegmentData& a = aligned.segments[i];
      const BackwardSegmentData& u = unaligned.segments[i];
      const reference::BackwardOutputs ref = ReferenceBackward(c, unaligned, i);
      EXPECT_LE(reference::RelativeError(u.grad_in.Values(), ref.grad_in), Tolerance(dtype()));
      EXPECT_TRUE(SameBytes(a.grad_in.data(), u.grad_in.data(), a.grad_in.bytes()));
      EXPECT_TRUE(SameBytes(a.grad_weight.data(), u.grad_weight.data(), a.grad_weight.bytes()));
      EXPECT_TRUE(SameBytes(a.grad_bias.data(), u.grad_bias.data(), a.grad_bias.bytes()));
    }
  }
}

TEST_P(DeterminismTest, ConcurrentForwardCallsMatchSequentialOnes) {
  std::mt19937_64 rng(35);
  NormCase c = ForwardCase({BigRows() / 2, 9});
  ForwardData sequential[2] = {MakeForwardData(c, rng), MakeForwardData(c, rng)};
  ForwardData concurrent[2] = {sequential[0], sequential[1]};
  for (ForwardData& data : sequential) ASSERT_TRUE(backend().Forward(data.Batch(c)).ok());
  std::thread threads[2];
  bool ok[2] = {false, false};
  for (int t = 0; t < 2; ++t) {
    threads[t] = std::thread([&, t] { ok[t] = backend().Forward(concurrent[t].Batch(c)).ok(); });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 2; ++t) {
    ASSERT_TRUE(ok[t]);
    for (size_t i = 0; i < c.segment_rows.size(); ++i) {
      EXPECT_TRUE(SameBytes(sequential[t].segments[i].out.data(),
                            concurrent[t].segments[i].out.data(),
                            sequential[t].segments[i].out.bytes()));
    }
  }
}

// The CPU backend's chunked reduction makes grad_weight / grad_bias (and
// every row) independent of how many threads share the work.
TEST(CpuDeterminismTest, ResultsDoNotDependOnThreadCount) {
  NormCase c;
  c.dtype = DType::kBF16;
  c.hidden = 1000;
  c.segment_rows = {301, 45};
  c.config.center = true;
  c.weight = c.residual = c.grad_residual_out = c.grad_weight = c.grad_bias = true;
  c.residual_dtype = DType::kF32;
  std::mt19937_64 rng(36);
  const BackwardData inputs = MakeBackwardData(c, rng);
  std::vector<BackwardData> runs;
  for (int threads : {1, 2, 3, 7}) {
    std::unique_ptr<Backend> backend = kernels::MakeCpuBackend({.threads = threads});
    BackwardData data = inputs;
    ASSERT_TRUE(backend->Backward(data.Batch(c)).ok());
    runs.push_back(std::move(data));
  }
  for (size_t r = 1; r < runs.size(); ++r) {
    for (size_t s = 0; s < c.segment_rows.size(); ++s) {
      const BackwardSegmentData& a = runs[0].segments[s];
      const BackwardSegmentData& b = runs[r].segments[s];
      EXPECT_TRUE(SameBytes(a.grad_in.data(), b.grad_in.data(), a.grad_in.bytes()));
      EXPECT_TRUE(SameBytes(a.grad_weight.data(), b.grad_weight.data(), a.grad_weight.bytes()));
      EXPECT_TRUE(SameBytes(a.grad_bias.data(), b.grad_bias.data(), a.grad_bias.bytes()));
    }
  }
}

// 14500 (bf16 / fp16) and 8190 (fp32): rows of half vectors that start on 8
// bytes take the realigned kernel's half-shift instance, the same rows offset
// by one element its shifting one (UnalignedPointers: the same bits). 2562
// and 3586: fp32 rows of half vectors in one block of 352 threads (fused
// LayerNorm: the instance bounded to two blocks per SM) and of 480 (LayerNorm
// without y: realigned, so next to segments with y the CUDA backend launches
// them apart: PlainSegmentsAreBitwiseIdenticalNextToResidualOnes).
INSTANTIATE_TEST_SUITE_P(Kernels, DeterminismTest,
                         ::testing::Combine(::testing::ValuesIn(BackendNames()), AllDTypes(),
                                            ::testing::Values(7, 512, 1000, 1004, 1024, 2048, 2562,
                                                              3586, 4096, 5000, 6144, 8190, 8191,
                                                              8192, 10000, 12288, 14500, 16384,
                                                              20000, 20001, 32768, 40000)),
                         SuiteParamName);

}  // namespace
}  // namespace normserve::kernels_test
