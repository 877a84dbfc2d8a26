#include "normserve/loadgen/histogram.h"

#include <random>

#include "gtest/gtest.h"

namespace normserve::loadgen {
namespace {

TEST(HistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (int v = 0; v < 128; ++v) h.Record(v);
  EXPECT_EQ(h.count(), 128);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 127);
  EXPECT_EQ(h.Percentile(50), 63);
  EXPECT_EQ(h.Percentile(100), 127);
}

TEST(HistogramTest, EveryValueLandsInABucketWithinOnePart128) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = rng() >> (rng() % 63);
    const size_t index = LatencyHistogram::BucketIndex(v);
    ASSERT_LE(LatencyHistogram::BucketLowest(index), v);
    ASSERT_GE(LatencyHistogram::BucketHighest(index), v);
    const uint64_t width =
        LatencyHistogram::BucketHighest(index) - LatencyHistogram::BucketLowest(index);
    ASSERT_LE(width, LatencyHistogram::BucketLowest(index) / 128) << v;
  }
  // Buckets tile the line: each ends right before the next begins.
  for (size_t i = 0; i < 2000; ++i) {
    ASSERT_EQ(LatencyHistogram::BucketHighest(i) + 1, LatencyHistogram::BucketLowest(i + 1));
  }
}

TEST(HistogramTest, PercentilesAreMonotoneAndWithinResolution) {
  LatencyHistogram h;
  for (int v = 1; v <= 100000; ++v) h.Record(v * 1000);  // 1 us .. 100 ms in ns
  const double ps[] = {0, 10, 50, 90, 99, 99.9, 100};
  int64_t last = 0;
  for (double p : ps) {
    const int64_t value = h.Percentile(p);
    EXPECT_GE(value, last) << p;
    last = value;
    const double exact = std::max(1.0, p / 100 * 100000) * 1000;
    EXPECT_NEAR(static_cast<double>(value), exact, exact / 100) << p;
  }
  EXPECT_EQ(h.Percentile(100), h.max());
  EXPECT_EQ(h.max(), 100000 * 1000);
  EXPECT_NEAR(h.mean(), 50000.5 * 1000, 1);
}

TEST(HistogramTest, MergingEqualsRecordingEverythingInOne) {
  LatencyHistogram a, b, all;
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> dist(10, 2);
  for (int i = 0; i < 20000; ++i) {
    const auto v = static_cast<int64_t>(dist(rng));
    (i % 3 ? a : b).Record(v);
    all.Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  for (double p : {50.0, 90.0, 99.0, 99.9}) EXPECT_EQ(a.Percentile(p), all.Percentile(p));
}

TEST(HistogramTest, EmptyAndNegativeInputsAreHarmless) {
  LatencyHistogram h;
  EXPECT_EQ(h.Percentile(99), 0);
  EXPECT_EQ(h.max(), 0);
  h.Record(-5);
  EXPECT_EQ(h.count(), 1);
  EXPECT_EQ(h.max(), 0);
  h.Reset();
  EXPECT_EQ(h.count(), 0);
}

}  // namespace
}  // namespace normserve::loadgen
