#include "param_set.h"

#include "absl/hash/hash.h"

namespace normserve::server {

std::shared_ptr<const ParamSet> MakeParamSet(kernels::DType dtype, int64_t hidden,
                                             std::string weight, std::string bias) {
  auto params = std::make_shared<ParamSet>();
  params->dtype = dtype;
  params->hidden = hidden;
  params->weight = std::move(weight);
  params->bias = std::move(bias);
  params->fingerprint = absl::HashOf(static_cast<int>(dtype), hidden, params->weight, params->bias);
  return params;
}

bool SameParams(const ParamSet* a, const ParamSet* b) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr) return false;
  return a->fingerprint == b->fingerprint && a->dtype == b->dtype && a->hidden == b->hidden &&
         a->weight == b->weight && a->bias == b->bias;
}

}  // namespace normserve::server
