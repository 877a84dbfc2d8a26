#include "normserve/loadgen/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace normserve::loadgen {
namespace {

constexpr int kSubBits = 7;
constexpr uint64_t kSub = uint64_t{1} << kSubBits;  // sub-buckets per power of two

}  // namespace

// Values < kSub map to themselves. Above, with msb the top set bit and
// shift = msb - kSubBits, the kept top bits (value >> shift) lie in
// [kSub, 2 kSub) and select one of kSub sub-buckets of the range of `shift`.
size_t LatencyHistogram::BucketIndex(uint64_t value) {
  if (value < kSub) return static_cast<size_t>(value);
  const int msb = 63 - std::countl_zero(value);
  const int shift = msb - kSubBits;
  const uint64_t top = value >> shift;  // in [kSub, 2 kSub)
  return static_cast<size_t>(kSub + static_cast<uint64_t>(shift) * kSub + (top - kSub));
}

uint64_t LatencyHistogram::BucketLowest(size_t index) {
  if (index < kSub) return index;
  const uint64_t shift = (index - kSub) / kSub;
  const uint64_t top = kSub + (index - kSub) % kSub;
  return top << shift;
}

uint64_t LatencyHistogram::BucketHighest(size_t index) {
  if (index < kSub) return index;
  const uint64_t shift = (index - kSub) / kSub;
  const uint64_t top = kSub + (index - kSub) % kSub;
  return ((top + 1) << shift) - 1;
}

void LatencyHistogram::Record(int64_t value) {
  if (value < 0) value = 0;
  const size_t index = BucketIndex(static_cast<uint64_t>(value));
  if (index >= counts_.size()) counts_.resize(index + 1, 0);
  ++counts_[index];
  if (count_ == 0 || value < min_) min_ = value;
  max_ = std::max(max_, value);
  ++count_;
  sum_ += static_cast<double>(value);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  if (other.count_ == 0) return;
  if (other.counts_.size() > counts_.size()) counts_.resize(other.counts_.size(), 0);
  for (size_t i = 0; i < other.counts_.size(); ++i) counts_[i] += other.counts_[i];
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
}

void LatencyHistogram::Reset() { *this = LatencyHistogram(); }

int64_t LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  const auto rank = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(p / 100.0 * static_cast<double>(count_))));
  int64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += static_cast<int64_t>(counts_[i]);
    if (seen >= rank) {
      const auto highest = static_cast<int64_t>(
          std::min<uint64_t>(BucketHighest(i), static_cast<uint64_t>(INT64_MAX)));
      return std::clamp(highest, min_, max_);
    }
  }
  return max_;
}

}  // namespace normserve::loadgen
