// A latency histogram in the style of HdrHistogram: log-linear buckets, each
// power of two split into 128 equal sub-buckets, so any recorded value is
// reported within 1/128 (< 0.8 %) of itself, from 1 ns to 2^63 ns, in a few
// KiB. Values below 128 are kept exactly.
//
//   LatencyHistogram h;
//   h.Record(1500);             // nanoseconds (any unit; the histogram is unitless)
//   h.Percentile(99.0);         // the 99th percentile, <= h.max()
//
// Percentile(p) returns the highest value equivalent to the bucket holding
// the rank ceil(p/100 * count), clamped into [min, max]: percentiles are
// monotone in p and Percentile(100) == max(). Not thread-safe; merge
// per-thread histograms with Merge.
#ifndef NORMSERVE_LOADGEN_HISTOGRAM_H_
#define NORMSERVE_LOADGEN_HISTOGRAM_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace normserve::loadgen {

class LatencyHistogram {
 public:
  // Records one value; negative values count as 0.
  void Record(int64_t value);
  // Adds every value recorded in `other`.
  void Merge(const LatencyHistogram& other);
  void Reset();

  int64_t count() const { return count_; }
  // 0 when empty.
  int64_t min() const { return count_ == 0 ? 0 : min_; }
  int64_t max() const { return max_; }
  double mean() const { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }
  // p in [0, 100]; 0 when empty.
  int64_t Percentile(double p) const;

  // The bucket layout, exposed for tests.
  static size_t BucketIndex(uint64_t value);
  static uint64_t BucketLowest(size_t index);
  static uint64_t BucketHighest(size_t index);

 private:
  std::vector<uint64_t> counts_;  // grows to the highest bucket used
  int64_t count_ = 0;
  int64_t min_ = 0;
  int64_t max_ = 0;
  double sum_ = 0;
};

}  // namespace normserve::loadgen

#endif  // NORMSERVE_LOADGEN_HISTOGRAM_H_
