#include "normserve/loadgen/workload.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "normserve/client/tensor.h"

namespace normserve::loadgen {
namespace {

struct OpInfo {
  OpKind op;
  absl::string_view name;
};
constexpr OpInfo kOps[] = {
    {OpKind::kRmsFwd, "rms_fwd"},
    {OpKind::kLnFwd, "ln_fwd"},
    {OpKind::kRmsFwdRes, "rms_fwd_res"},
    {OpKind::kLnFwdRes, "ln_fwd_res"},
    {OpKind::kRmsBwd, "rms_bwd"},
    {OpKind::kLnBwd, "ln_bwd"},
    {OpKind::kEcho, "echo"},
};

bool IsLayer(OpKind op) {
  return op == OpKind::kLnFwd || op == OpKind::kLnFwdRes || op == OpKind::kLnBwd;
}

absl::StatusOr<v1::Tensor> RandomTensor(std::mt19937& rng, std::vector<int64_t> shape,
                                        v1::DType dtype, float center, float spread) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::normal_distribution<float> normal(center, spread);
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values) v = normal(rng);
  return client::MakeTensor(values, shape, dtype);
}

}  // namespace

absl::string_view OpName(OpKind op) {
  for (const OpInfo& info : kOps) {
    if (info.op == op) return info.name;
  }
  return "unknown";
}

absl::StatusOr<OpKind> ParseOpName(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(name));
  for (const OpInfo& info : kOps) {
    if (info.name == lower) return info.op;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("op '", name,
                   "' is not one of rms_fwd, ln_fwd, rms_fwd_res, ln_fwd_res, rms_bwd, "
                   "ln_bwd, echo"));
}

absl::StatusOr<std::vector<OpWeight>> ParseOpMix(absl::string_view text) {
  std::vector<OpWeight> mix;
  double total = 0;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::vector<absl::string_view> parts = absl::StrSplit(entry, ':');
    if (parts.size() > 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("op mix entry '", entry, "' is not op:weight"));
    }
    absl::StatusOr<OpKind> op = ParseOpName(parts[0]);
    if (!op.ok()) return op.status();
    double weight = 1.0;
    if (parts.size() == 2 &&
        (!absl::SimpleAtod(absl::StripAsciiWhitespace(parts[1]), &weight) || !(weight > 0))) {
      return absl::InvalidArgumentError(
          absl::StrCat("op mix entry '", entry, "' needs a weight > 0"));
    }
    for (const OpWeight& existing : mix) {
      if (existing.op == *op) {
        return absl::InvalidArgumentError(absl::StrCat("op '", parts[0], "' appears twice"));
      }
    }
    mix.push_back({*op, weight});
    total += weight;
  }
  if (mix.empty()) return absl::InvalidArgumentError("op mix is empty (e.g. --ops=rms_fwd)");
  for (OpWeight& w : mix) w.weight /= total;
  return mix;
}

absl::StatusOr<std::vector<int64_t>> ParseShape(absl::string_view text) {
  std::vector<int64_t> shape;
  for (absl::string_view part : absl::StrSplit(absl::AsciiStrToLower(text), 'x')) {
    int64_t dim;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &dim) || dim < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape '", text, "' is not dims >= 1 joined by 'x' (e.g. 16x4096)"));
    }
    shape.push_back(dim);
  }
  if (shape.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape '", text, "' needs rank >= 2 (rows x hidden)"));
  }
  return shape;
}

absl::StatusOr<Sweep> ParseSweep(absl::string_view text) {
  Sweep sweep;
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return sweep;
  const size_t colon = text.find(':');
  const absl::string_view kind = colon == absl::string_view::npos ? text : text.substr(0, colon);
  if (kind == "concurrency") {
    sweep.kind = Sweep::Kind::kConcurrency;
  } else if (kind == "rate") {
    sweep.kind = Sweep::Kind::kRate;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("sweep '", text, "' is not concurrency:v1,v2,... or rate:v1,v2,..."));
  }
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("sweep '", text, "' lists no values"));
  }
  for (absl::string_view part :
       absl::StrSplit(text.substr(colon + 1), ',', absl::SkipWhitespace())) {
    double value;
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(part), &value) || !(value > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("sweep value '", part, "' is not a number > 0"));
    }
    if (sweep.kind == Sweep::Kind::kConcurrency && value != static_cast<int>(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("sweep concurrency '", part, "' is not an integer"));
    }
    sweep.values.push_back(value);
  }
  if (sweep.values.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("sweep '", text, "' lists no values"));
  }
  return sweep;
}

absl::StatusOr<PreparedOp> PrepareOp(OpKind op, const std::vector<int64_t>& shape, v1::DType dtype,
                                     uint32_t seed) {
  absl::StatusOr<int64_t> elements = client::ShapeElements(shape);
  if (!elements.ok()) return elements.status();
  absl::StatusOr<size_t> element_size = client::DTypeSize(dtype);
  if (!element_size.ok()) return element_size.status();
  std::mt19937 rng(seed);
  const int64_t hidden = shape.back();
  PreparedOp prepared;
  prepared.op = op;
  prepared.rows = *elements / hidden;

  if (op == OpKind::kEcho) {
    auto echo = std::make_shared<v1::EchoRequest>();
    echo->mutable_payload()->resize(static_cast<size_t>(*elements) * *element_size);
    for (size_t i = 0; i < echo->payload().size(); ++i) {
      (*echo->mutable_payload())[i] = static_cast<char>(rng());
    }
    prepared.request_payload_bytes = static_cast<int64_t>(echo->payload().size());
    prepared.echo = std::move(echo);
    return prepared;
  }

  v1::NormConfig config;
  config.set_kind(IsLayer(op) ? v1::LAYER_NORM : v1::RMS_NORM);
  v1::Params params;
  absl::StatusOr<v1::Tensor> weight = RandomTensor(rng, {hidden}, dtype, 1.0f, 0.1f);
  if (!weight.ok()) return weight.status();
  *params.mutable_weight() = *std::move(weight);
  if (IsLayer(op)) {
    absl::StatusOr<v1::Tensor> bias = RandomTensor(rng, {hidden}, dtype, 0.0f, 0.1f);
    if (!bias.ok()) return bias.status();
    *params.mutable_bias() = *std::move(bias);
  }
  absl::StatusOr<v1::Tensor> x = RandomTensor(rng, shape, dtype, 0.0f, 1.0f);
  if (!x.ok()) return x.status();

  if (op == OpKind::kRmsBwd || op == OpKind::kLnBwd) {
    auto request = std::make_shared<v1::BackwardRequest>();
    *request->mutable_config() = config;
    *request->mutable_x() = *std::move(x);
    *request->mutable_params() = params;
    absl::StatusOr<v1::Tensor> grad = RandomTensor(rng, shape, dtype, 0.0f, 1.0f);
    if (!grad.ok()) return grad.status();
    *request->mutable_grad_output() = *std::move(grad);
    request->set_want_grad_weight(true);
    request->set_want_grad_bias(IsLayer(op));
    prepared.request_payload_bytes =
        static_cast<int64_t>(request->x().data().size() + request->grad_output().data().size() +
                             params.weight().data().size() + params.bias().data().size());
    prepared.backward = std::move(request);
    return prepared;
  }

  auto request = std::make_shared<v1::ForwardRequest>();
  *request->mutable_config() = config;
  *request->mutable_x() = *std::move(x);
  *request->mutable_params() = params;
  if (op == OpKind::kRmsFwdRes || op == OpKind::kLnFwdRes) {
    absl::StatusOr<v1::Tensor> residual = RandomTensor(rng, shape, dtype, 0.0f, 1.0f);
    if (!residual.ok()) return residual.status();
    *request->mutable_residual() = *std::move(residual);
  }
  prepared.request_payload_bytes =
      static_cast<int64_t>(request->x().data().size() + request->residual().data().size() +
                           params.weight().data().size() + params.bias().data().size());
  prepared.forward = std::move(request);
  return prepared;
}

int64_t ResponsePayloadBytes(const v1::ForwardResponse& r) {
  return static_cast<int64_t>(r.output().data().size() + r.residual_out().data().size() +
                              r.mean().data().size() + r.rstd().data().size());
}

int64_t ResponsePayloadBytes(const v1::BackwardResponse& r) {
  return static_cast<int64_t>(r.grad_input().data().size() + r.grad_weight().data().size() +
                              r.grad_bias().data().size());
}

OpPicker::OpPicker(const std::vector<OpWeight>& mix, uint64_t seed) : rng_(seed) {
  double sum = 0;
  for (const OpWeight& w : mix) {
    sum += w.weight;
    cumulative_.push_back(sum);
  }
}

size_t OpPicker::Pick() {
  if (cumulative_.size() <= 1) return 0;
  const double u = uniform_(rng_) * cumulative_.back();
  const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
  return std::min(static_cast<size_t>(it - cumulative_.begin()), cumulative_.size() - 1);
}

}  // namespace normserve::loadgen
