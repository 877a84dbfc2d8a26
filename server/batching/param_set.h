// Weight and bias shared by the rows of a batch.
//
// A ParamSet is immutable once built and shared by pointer: the registry hands
// the same object to every request naming its handle, and an inline request
// gets its own. Requests batch together only when their ParamSets hold equal
// bytes (see BatchKey).
#ifndef NORMSERVE_SERVER_BATCHING_PARAM_SET_H_
#define NORMSERVE_SERVER_BATCHING_PARAM_SET_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "normserve/kernels/dtype.h"

namespace normserve::server {

struct ParamSet {
  kernels::DType dtype = kernels::DType::kF32;
  int64_t hidden = 0;
  // Raw little-endian elements of dtype, hidden of them, or empty when absent.
  std::string weight;
  std::string bias;
  // Hash of (dtype, hidden, weight, bias); set by MakeParamSet.
  size_t fingerprint = 0;

  const void* weight_data() const { return weight.empty() ? nullptr : weight.data(); }
  const void* bias_data() const { return bias.empty() ? nullptr : bias.data(); }
};

// Builds a ParamSet and its fingerprint. weight / bias may be empty.
std::shared_ptr<const ParamSet> MakeParamSet(kernels::DType dtype, int64_t hidden,
                                             std::string weight, std::string bias);

// True when both hold the same dtype, hidden and bytes (or are both null).
bool SameParams(const ParamSet* a, const ParamSet* b);

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_BATCHING_PARAM_SET_H_
