#include "request_builder.h"

#include "absl/strings/str_cat.h"
#include "tensor_codec.h"

namespace normserve::server {

absl::StatusOr<kernels::NormConfig> ConfigFromProto(const v1::NormConfig& proto) {
  kernels::NormConfig config;
  switch (proto.kind()) {
    case v1::LAYER_NORM:
      config.center = true;
      break;
    case v1::RMS_NORM:
      config.center = false;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "config.kind must be LAYER_NORM or RMS_NORM, got ", static_cast<int>(proto.kind())));
  }
  if (proto.has_eps()) config.eps = proto.eps();
  if (proto.has_c()) config.c = proto.c();
  if (proto.has_partial()) config.partial = proto.partial();
  if (auto status = kernels::ValidateNormConfig(config); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("config.", status.message()));
  }
  return config;
}

namespace {

// The weight / bias for a request: a registered set by handle, or the inline
// tensors (checked against x's dtype and hidden size). Null when neither.
absl::StatusOr<std::shared_ptr<const ParamSet>> ResolveParams(const v1::Params& params,
                                                              const MatrixView& x,
                                                              const ParamRegistry& registry) {
  const bool has_weight = !IsAbsent(params.weight());
  const bool has_bias = !IsAbsent(params.bias());
  if (!params.handle().empty()) {
    if (has_weight || has_bias) {
      return absl::InvalidArgumentError(
          "params: give either handle or inline weight/bias, not both");
    }
    auto found = registry.Find(params.handle());
    if (!found.ok()) return found.status();
    const ParamSet& set = **found;
    if (set.hidden != x.hidden || set.dtype != x.dtype) {
      return absl::InvalidArgumentError(
          absl::StrCat("params.handle \"", params.handle(), "\" holds [", set.hidden, "] ",
                       kernels::DTypeName(set.dtype), " but x has hidden ", x.hidden, " and dtype ",
                       kernels::DTypeName(x.dtype)));
    }
    return found;
  }
  if (!has_weight && !has_bias) return std::shared_ptr<const ParamSet>();
  if (has_weight) {
    if (auto status = CheckVector(params.weight(), "params.weight", x.hidden, x.dtype);
        !status.ok()) {
      return status;
    }
  }
  if (has_bias) {
    if (auto status = CheckVector(params.bias(), "params.bias", x.hidden, x.dtype); !status.ok()) {
      return status;
    }
  }
  // Copied (O(hidden) bytes, small next to the rows) so that inline and
  // registered params share one type, and equal inline params batch together.
  return MakeParamSet(x.dtype, x.hidden, params.weight().data(), params.bias().data());
}

// Checks a saved-statistics pair: both or neither, fp32 [rows].
absl::Status CheckStats(const v1::Tensor& mean, const v1::Tensor& rstd, int64_t rows) {
  const bool has_mean = !IsAbsent(mean);
  const bool has_rstd = !IsAbsent(rstd);
  if (has_mean != has_rstd) {
    return absl::InvalidArgumentError("mean and rstd must be given together or not at all");
  }
  if (!has_mean) return absl::OkStatus();
  if (auto status = CheckVector(mean, "mean", rows, kernels::DType::kF32); !status.ok()) {
    return status;
  }
  return CheckVector(rstd, "rstd", rows, kernels::DType::kF32);
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkItem>> BuildForwardItem(const v1::ForwardRequest& request,
                                                           v1::ForwardResponse* response,
                                                           const ParamRegistry& registry) {
  auto config = ConfigFromProto(request.config());
  if (!config.ok()) return config.status();
  auto x = ViewMatrix(request.x(), "x");
  if (!x.ok()) return x.status();
  auto residual = OptionalDataLike(request.residual(), "residual", request.x(), x->dtype);
  if (!residual.ok()) return residual.status();
  const bool has_residual = *residual != nullptr;
  kernels::DType residual_dtype = x->dtype;
  if (request.residual_out_dtype() != v1::DTYPE_UNSPECIFIED) {
    auto parsed = FromProtoDType(request.residual_out_dtype(), "residual_out_dtype");
    if (!parsed.ok()) return parsed.status();
    if (*parsed != x->dtype && *parsed != kernels::DType::kF32) {
      return absl::InvalidArgumentError(
          absl::StrCat("residual_out_dtype must be x's dtype (", kernels::DTypeName(x->dtype),
                       ") or fp32, got ", kernels::DTypeName(*parsed)));
    }
    // Without a residual there is no residual_out: keep the key independent
    // of this field so such requests batch with the rest.
    if (has_residual) residual_dtype = *parsed;
  }
  auto params = ResolveParams(request.params(), *x, registry);
  if (!params.ok()) return params.status();

  auto item = std::make_unique<WorkItem>();
  item->key = BatchKey{Op::kForward, x->dtype, residual_dtype, x->hidden, *config, *params};
  kernels::ForwardSegment& segment = item->forward;
  segment.rows = x->rows;
  segment.x = x->data;
  segment.y = *residual;
  segment.out = AllocateTensor(response->mutable_output(), x->dtype, request.x().shape());
  if (has_residual) {
    segment.residual_out =
        AllocateTensor(response->mutable_residual_out(), residual_dtype, request.x().shape());
  }
  if (request.return_stats()) {
    segment.mean = static_cast<float*>(
        AllocateVector(response->mutable_mean(), kernels::DType::kF32, x->rows));
    segment.rstd = static_cast<float*>(
        AllocateVector(response->mutable_rstd(), kernels::DType::kF32, x->rows));
  }
  return item;
}

absl::StatusOr<std::unique_ptr<WorkItem>> BuildBackwardItem(const v1::BackwardRequest& request,
                                                            v1::BackwardResponse* response,
                                                            const ParamRegistry& registry) {
  auto config = ConfigFromProto(request.config());
  if (!config.ok()) return config.status();
  auto x = ViewMatrix(request.x(), "x");
  if (!x.ok()) return x.status();
  auto grad_output = ViewMatrixLike(request.grad_output(), "grad_output", request.x(), x->dtype);
  if (!grad_output.ok()) return grad_output.status();
  auto residual = OptionalDataLike(request.residual(), "residual", request.x(), x->dtype);
  if (!residual.ok()) return residual.status();
  const bool has_grad_residual = !IsAbsent(request.grad_residual_out());
  kernels::DType residual_dtype = x->dtype;
  MatrixView grad_residual;
  if (has_grad_residual) {
    auto dtype = FromProtoDType(request.grad_residual_out().dtype(), "grad_residual_out");
    if (!dtype.ok()) return dtype.status();
    if (*dtype != x->dtype && *dtype != kernels::DType::kF32) {
      return absl::InvalidArgumentError(
          absl::StrCat("grad_residual_out must have x's dtype (", kernels::DTypeName(x->dtype),
                       ") or fp32, got ", DescribeTensor(request.grad_residual_out())));
    }
    auto view =
        ViewMatrixLike(request.grad_residual_out(), "grad_residual_out", request.x(), *dtype);
    if (!view.ok()) return view.status();
    grad_residual = *view;
    residual_dtype = *dtype;
  }
  if (auto status = CheckStats(request.mean(), request.rstd(), x->rows); !status.ok()) {
    return status;
  }
  auto params = ResolveParams(request.params(), *x, registry);
  if (!params.ok()) return params.status();

  auto item = std::make_unique<WorkItem>();
  item->key = BatchKey{Op::kBackward, x->dtype, residual_dtype, x->hidden, *config, *params};
  kernels::BackwardSegment& segment = item->backward;
  segment.rows = x->rows;
  segment.x = x->data;
  segment.y = *residual;
  segment.grad_out = grad_output->data;
  segment.grad_residual_out = has_grad_residual ? grad_residual.data : nullptr;
  if (!IsAbsent(request.mean())) {
    segment.mean = reinterpret_cast<const float*>(request.mean().data().data());
    segment.rstd = reinterpret_cast<const float*>(request.rstd().data().data());
  }
  segment.grad_in = AllocateTensor(response->mutable_grad_input(), x->dtype, request.x().shape());
  if (request.want_grad_weight()) {
    segment.grad_weight = static_cast<float*>(
        AllocateVector(response->mutable_grad_weight(), kernels::DType::kF32, x->hidden));
  }
  if (request.want_grad_bias()) {
    segment.grad_bias = static_cast<float*>(
        AllocateVector(response->mutable_grad_bias(), kernels::DType::kF32, x->hidden));
  }
  return item;
}

}  // namespace normserve::server
