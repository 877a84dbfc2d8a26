#include "normserve/cli/commands.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "normserve/cli/tensor_npy.h"
#include "normserve/client/tensor.h"

namespace normserve::cli {
namespace {

// The request dtype: --dtype when given, else the x file's own.
absl::StatusOr<v1::DType> ResolveDType(const std::string& flag, const std::string& x_path) {
  if (!flag.empty()) return client::ParseDType(flag);
  if (x_path.empty()) return absl::InvalidArgumentError("--x is required");
  absl::StatusOr<npy::NpyArray> x = npy::ReadNpy(x_path);
  if (!x.ok()) return x.status();
  return DefaultDType(*x);
}

absl::Status Require(const std::string& value, absl::string_view flag) {
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat("--", flag, " is required"));
  return absl::OkStatus();
}

// Reads the optional file at `path` into *dst (left untouched when empty).
absl::Status ReadOptional(const std::string& path, v1::DType dtype, v1::Tensor* dst) {
  if (path.empty()) return absl::OkStatus();
  absl::StatusOr<v1::Tensor> tensor = ReadTensor(path, dtype);
  if (!tensor.ok()) return tensor.status();
  *dst = *std::move(tensor);
  return absl::OkStatus();
}

absl::Status FillParams(const NormInputs& in, v1::DType dtype, v1::Params* params) {
  if (!in.params.empty()) {
    if (!in.weight.empty() || !in.bias.empty()) {
      return absl::InvalidArgumentError("--params excludes --weight and --bias");
    }
    params->set_handle(in.params);
    return absl::OkStatus();
  }
  absl::Status s = ReadOptional(in.weight, dtype, params->mutable_weight());
  if (!s.ok()) return s;
  return ReadOptional(in.bias, dtype, params->mutable_bias());
}

absl::Status WriteOptional(const std::string& path, const v1::Tensor& tensor,
                           absl::string_view name, std::ostream& out) {
  if (path.empty()) return absl::OkStatus();
  if (tensor.shape_size() == 0) {
    return absl::InternalError(
        absl::StrCat("the server returned no ", name, " to write to ", path));
  }
  absl::Status s = WriteTensor(path, tensor);
  if (!s.ok()) return s;
  out << Summarize(name, tensor) << "  -> " << path << "\n";
  return absl::OkStatus();
}

std::string Millis(absl::Duration d) {
  return absl::StrFormat("%.3f ms", absl::ToDoubleMilliseconds(d));
}

}  // namespace

absl::StatusOr<v1::NormConfig> BuildConfig(const NormInputs& in) {
  v1::NormConfig config;
  if (in.norm == "layer" || in.norm == "ln" || in.norm == "layernorm") {
    config.set_kind(v1::LAYER_NORM);
  } else if (in.norm == "rms" || in.norm == "rmsnorm") {
    config.set_kind(v1::RMS_NORM);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--norm=", in.norm, " is not layer or rms"));
  }
  if (in.eps.has_value()) config.set_eps(static_cast<float>(*in.eps));
  if (in.c.has_value()) config.set_c(static_cast<float>(*in.c));
  if (in.partial.has_value()) config.set_partial(*in.partial);
  return config;
}

absl::StatusOr<v1::ForwardRequest> BuildForwardRequest(const ForwardCommand& cmd) {
  absl::Status s = Require(cmd.in.x, "x");
  if (!s.ok()) return s;
  if (!cmd.residual_out.empty() && cmd.in.residual.empty()) {
    return absl::InvalidArgumentError("--residual_out needs --residual");
  }
  absl::StatusOr<v1::DType> dtype = ResolveDType(cmd.in.dtype, cmd.in.x);
  if (!dtype.ok()) return dtype.status();
  v1::ForwardRequest request;
  absl::StatusOr<v1::NormConfig> config = BuildConfig(cmd.in);
  if (!config.ok()) return config.status();
  *request.mutable_config() = *config;
  if (!(s = ReadOptional(cmd.in.x, *dtype, request.mutable_x())).ok()) return s;
  if (!(s = ReadOptional(cmd.in.residual, *dtype, request.mutable_residual())).ok()) return s;
  if (!(s = FillParams(cmd.in, *dtype, request.mutable_params())).ok()) return s;
  if (cmd.residual_fp32) request.set_residual_out_dtype(v1::DTYPE_FP32);
  request.set_return_stats(cmd.stats || !cmd.mean_out.empty() || !cmd.rstd_out.empty());
  return request;
}

absl::StatusOr<v1::BackwardRequest> BuildBackwardRequest(const BackwardCommand& cmd) {
  absl::Status s = Require(cmd.in.x, "x");
  if (!s.ok()) return s;
  if (!(s = Require(cmd.grad_output, "grad_output")).ok()) return s;
  if (cmd.mean.empty() != cmd.rstd.empty()) {
    return absl::InvalidArgumentError("--mean and --rstd go together: give both or neither");
  }
  absl::StatusOr<v1::DType> dtype = ResolveDType(cmd.in.dtype, cmd.in.x);
  if (!dtype.ok()) return dtype.status();
  v1::BackwardRequest request;
  absl::StatusOr<v1::NormConfig> config = BuildConfig(cmd.in);
  if (!config.ok()) return config.status();
  *request.mutable_config() = *config;
  if (!(s = ReadOptional(cmd.in.x, *dtype, request.mutable_x())).ok()) return s;
  if (!(s = ReadOptional(cmd.in.residual, *dtype, request.mutable_residual())).ok()) return s;
  if (!(s = FillParams(cmd.in, *dtype, request.mutable_params())).ok()) return s;
  if (!(s = ReadOptional(cmd.grad_output, *dtype, request.mutable_grad_output())).ok()) return s;
  if (!cmd.grad_residual_out.empty()) {
    // grad_residual_out may be fp32 while x is half precision: keep the file's
    // float32 as fp32, convert anything else to x's dtype.
    absl::StatusOr<npy::NpyArray> file = npy::ReadNpy(cmd.grad_residual_out);
    if (!file.ok()) return file.status();
    const v1::DType grad_dtype =
        file->dtype == npy::NpyDType::kF4 && *dtype != v1::DTYPE_BF16 ? v1::DTYPE_FP32 : *dtype;
    absl::StatusOr<v1::Tensor> t = TensorFromNpy(*file, grad_dtype);
    if (!t.ok()) return t.status();
    *request.mutable_grad_residual_out() = *std::move(t);
  }
  if (!(s = ReadOptional(cmd.mean, v1::DTYPE_FP32, request.mutable_mean())).ok()) return s;
  if (!(s = ReadOptional(cmd.rstd, v1::DTYPE_FP32, request.mutable_rstd())).ok()) return s;
  request.set_want_grad_weight(!cmd.grad_weight_out.empty());
  request.set_want_grad_bias(!cmd.grad_bias_out.empty());
  return request;
}

absl::StatusOr<v1::RegisterParamsRequest> BuildRegisterRequest(const RegisterCommand& cmd) {
  if (cmd.weight.empty() && cmd.bias.empty()) {
    return absl::InvalidArgumentError("register needs --weight and/or --bias");
  }
  absl::StatusOr<v1::DType> dtype =
      ResolveDType(cmd.dtype, cmd.weight.empty() ? cmd.bias : cmd.weight);
  if (!dtype.ok()) return dtype.status();
  v1::RegisterParamsRequest request;
  absl::Status s = ReadOptional(cmd.weight, *dtype, request.mutable_weight());
  if (!s.ok()) return s;
  if (!(s = ReadOptional(cmd.bias, *dtype, request.mutable_bias())).ok()) return s;
  request.set_name(cmd.name);
  return request;
}

absl::Status RunHealth(client::Client& client, const client::CallOptions& call,
                       const std::string& service, std::ostream& out) {
  absl::StatusOr<client::ServingStatus> status = client.CheckHealth(service, call);
  if (!status.ok()) return status.status();
  out << client::ServingStatusName(*status) << "\n";
  if (*status != client::ServingStatus::kServing) {
    return absl::FailedPreconditionError(
        absl::StrCat("server is ", client::ServingStatusName(*status)));
  }
  return absl::OkStatus();
}

absl::Status RunForward(client::Client& client, const client::CallOptions& call,
                        const ForwardCommand& cmd, std::ostream& out) {
  absl::Status s = Require(cmd.out, "out");
  if (!s.ok()) return s;
  absl::StatusOr<v1::ForwardRequest> request = BuildForwardRequest(cmd);
  if (!request.ok()) return request.status();
  out << Summarize("x", request->x()) << "\n";
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::ForwardResponse> response = client.Forward(*request, call);
  const absl::Duration elapsed = absl::Now() - start;
  if (!response.ok()) return response.status();
  out << "forward " << v1::NormKind_Name(request->config().kind()) << ": " << Millis(elapsed)
      << " round trip\n";
  if (!(s = WriteOptional(cmd.out, response->output(), "output", out)).ok()) return s;
  if (!(s = WriteOptional(cmd.residual_out, response->residual_out(), "residual_out", out)).ok())
    return s;
  if (!(s = WriteOptional(cmd.mean_out, response->mean(), "mean", out)).ok()) return s;
  if (!(s = WriteOptional(cmd.rstd_out, response->rstd(), "rstd", out)).ok()) return s;
  if (cmd.stats && cmd.mean_out.empty() && response->has_mean()) {
    out << Summarize("mean", response->mean()) << "\n"
        << Summarize("rstd", response->rstd()) << "\n";
  }
  return absl::OkStatus();
}

absl::Status RunBackward(client::Client& client, const client::CallOptions& call,
                         const BackwardCommand& cmd, std::ostream& out) {
  absl::Status s = Require(cmd.grad_input_out, "grad_input_out");
  if (!s.ok()) return s;
  absl::StatusOr<v1::BackwardRequest> request = BuildBackwardRequest(cmd);
  if (!request.ok()) return request.status();
  out << Summarize("x", request->x()) << "\n";
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::BackwardResponse> response = client.Backward(*request, call);
  const absl::Duration elapsed = absl::Now() - start;
  if (!response.ok()) return response.status();
  out << "backward " << v1::NormKind_Name(request->config().kind()) << ": " << Millis(elapsed)
      << " round trip\n";
  if (!(s = WriteOptional(cmd.grad_input_out, response->grad_input(), "grad_input", out)).ok())
    return s;
  if (!(s = WriteOptional(cmd.grad_weight_out, response->grad_weight(), "grad_weight", out)).ok())
    return s;
  return WriteOptional(cmd.grad_bias_out, response->grad_bias(), "grad_bias", out);
}

absl::Status RunRegister(client::Client& client, const client::CallOptions& call,
                         const RegisterCommand& cmd, std::ostream& out) {
  absl::StatusOr<v1::RegisterParamsRequest> request = BuildRegisterRequest(cmd);
  if (!request.ok()) return request.status();
  absl::StatusOr<v1::ParamsInfo> info = client.RegisterParams(*request, call);
  if (!info.ok()) return info.status();
  out << info->handle() << "\n";
  return absl::OkStatus();
}

absl::Status RunList(client::Client& client, const client::CallOptions& call, std::ostream& out) {
  absl::StatusOr<std::vector<v1::ParamsInfo>> params = client.ListParams(call);
  if (!params.ok()) return params.status();
  out << absl::StrFormat("%-36s %-6s %8s %-6s %-6s %s\n", "HANDLE", "DTYPE", "HIDDEN", "WEIGHT",
                         "BIAS", "NAME");
  for (const v1::ParamsInfo& p : *params) {
    out << absl::StrFormat("%-36s %-6s %8d %-6s %-6s %s\n", p.handle(),
                           client::DTypeName(p.dtype()), p.hidden(), p.has_weight() ? "yes" : "no",
                           p.has_bias() ? "yes" : "no", p.name());
  }
  out << params->size() << " registered\n";
  return absl::OkStatus();
}

absl::Status RunDelete(client::Client& client, const client::CallOptions& call,
                       const std::string& handle, std::ostream& out) {
  if (handle.empty()) return absl::InvalidArgumentError("delete needs a handle: delete <handle>");
  absl::Status s = client.DeleteParams(handle, call);
  if (!s.ok()) return s;
  out << "deleted " << handle << "\n";
  return absl::OkStatus();
}

absl::Status RunEcho(client::Client& client, const client::CallOptions& call, int64_t bytes,
                     std::ostream& out) {
  if (bytes < 0 || bytes > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrCat("--bytes=", bytes, " is not in 0..2^30"));
  }
  std::string payload(static_cast<size_t>(bytes), '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 131 + 7);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> echoed = client.Echo(payload, call);
  const absl::Duration elapsed = absl::Now() - start;
  if (!echoed.ok()) return echoed.status();
  if (*echoed != payload) {
    return absl::DataLossError(absl::StrCat("echo returned ", echoed->size(),
                                            " bytes that differ from the ", bytes, " sent"));
  }
  const double seconds = absl::ToDoubleSeconds(elapsed);
  out << absl::StrFormat("echo %d bytes: %s round trip, %.1f MB/s both ways\n", bytes,
                         Millis(elapsed), seconds > 0 ? 2.0 * bytes / seconds / 1e6 : 0.0);
  return absl::OkStatus();
}

}  // namespace normserve::cli
