// Which requests may share one kernel launch.
//
// Two requests batch together only when everything a kernel launch fixes for
// all its rows is equal: the op, storage dtypes, hidden size, the norm config
// and the parameter bytes. Anything that may differ per row (residual present
// or not, statistics wanted or not) lives in the segment instead.
#ifndef NORMSERVE_SERVER_BATCHING_BATCH_KEY_H_
#define NORMSERVE_SERVER_BATCHING_BATCH_KEY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "normserve/kernels/dtype.h"
#include "normserve/kernels/norm_config.h"
#include "param_set.h"

namespace normserve::server {

enum class Op : uint8_t { kForward, kBackward };

absl::string_view OpName(Op op);  // "forward" or "backward"

struct BatchKey {
  Op op = Op::kForward;
  kernels::DType dtype = kernels::DType::kF32;
  // residual_out dtype (forward) or grad_residual_out dtype (backward).
  kernels::DType residual_dtype = kernels::DType::kF32;
  int64_t hidden = 0;
  kernels::NormConfig config;
  // Null when the request has neither weight nor bias.
  std::shared_ptr<const ParamSet> params;

  friend bool operator==(const BatchKey& a, const BatchKey& b);

  template <typename H>
  friend H AbslHashValue(H state, const BatchKey& key) {
    return H::combine(std::move(state), key.op, key.dtype, key.residual_dtype, key.hidden,
                      key.config.center, key.config.eps, key.config.c, key.config.partial,
                      key.params ? key.params->fingerprint : size_t{0});
  }
};

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_BATCHING_BATCH_KEY_H_
