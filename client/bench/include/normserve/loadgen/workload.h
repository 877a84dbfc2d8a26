// What the load generator sends: the op mix, the tensor shape and dtype, and
// the prebuilt requests (built once, shared by every call that sends them).
//
// Ops: rms_fwd, ln_fwd (forward with a weight; ln also a bias),
//      rms_fwd_res, ln_fwd_res (fused residual-add + norm),
//      rms_bwd, ln_bwd (backward with grad_weight, and grad_bias for ln),
//      echo (the Echo RPC with a payload of rows x hidden x dtype bytes, the
//      size of a forward's x and o, to measure the transport floor).
#ifndef NORMSERVE_LOADGEN_WORKLOAD_H_
#define NORMSERVE_LOADGEN_WORKLOAD_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "normserve/v1/normserve.pb.h"

namespace normserve::loadgen {

enum class OpKind { kRmsFwd, kLnFwd, kRmsFwdRes, kLnFwdRes, kRmsBwd, kLnBwd, kEcho };

// "rms_fwd", ... as in the header comment.
absl::string_view OpName(OpKind op);
absl::StatusOr<OpKind> ParseOpName(absl::string_view name);

struct OpWeight {
  OpKind op;
  double weight;  // a probability: the weights of a mix sum to 1
};

// "rms_fwd:0.7,ln_bwd:0.3" or "echo" (weight 1). Weights must be > 0 and are
// normalized to sum to 1. INVALID_ARGUMENT names the bad entry.
absl::StatusOr<std::vector<OpWeight>> ParseOpMix(absl::string_view text);

// "16x4096" -> {16, 4096}; "2x8x1024" is rank 3. Every dim >= 1.
absl::StatusOr<std::vector<int64_t>> ParseShape(absl::string_view text);

// A sweep: run once per value, varying concurrency (closed loop) or rate
// (open loop). "concurrency:1,2,4,8" | "rate:100,200,400" | "" (no sweep).
struct Sweep {
  enum class Kind { kNone, kConcurrency, kRate };
  Kind kind = Kind::kNone;
  std::vector<double> values;
};
absl::StatusOr<Sweep> ParseSweep(absl::string_view text);

// One op's request, built once. Exactly one of the three pointers is set.
struct PreparedOp {
  OpKind op = OpKind::kEcho;
  std::shared_ptr<const v1::ForwardRequest> forward;
  std::shared_ptr<const v1::BackwardRequest> backward;
  std::shared_ptr<const v1::EchoRequest> echo;
  int64_t rows = 0;                   // rows of the activation
  int64_t request_payload_bytes = 0;  // tensor bytes the request carries
};

// Builds the request of `op` for activations of `shape` and `dtype`, filled
// with reproducible pseudo-random values from `seed`.
absl::StatusOr<PreparedOp> PrepareOp(OpKind op, const std::vector<int64_t>& shape, v1::DType dtype,
                                     uint32_t seed);

// Tensor payload bytes of a response (what GB/s counts on the way back).
int64_t ResponsePayloadBytes(const v1::ForwardResponse& response);
int64_t ResponsePayloadBytes(const v1::BackwardResponse& response);

// Picks ops with the mix's probabilities. Not thread-safe (one per thread).
class OpPicker {
 public:
  OpPicker(const std::vector<OpWeight>& mix, uint64_t seed);
  // Index into the mix.
  size_t Pick();

 private:
  std::vector<double> cumulative_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
};

}  // namespace normserve::loadgen

#endif  // NORMSERVE_LOADGEN_WORKLOAD_H_
