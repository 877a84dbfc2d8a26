// normserve-cli: a command-line client of the normserve service.
//
// Exit status: 0 on success, 1 when the call or a file operation fails (the
// error is printed to stderr), 2 for a usage error.
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "normserve/cli/commands.h"
#include "normserve/client/client.h"

// Connection.
ABSL_FLAG(std::string, target, "localhost:50051",
          "Server address: host:port, a comma-separated list of ip:port (round-robin), or a "
          "gRPC URI such as dns:///name:port");
ABSL_FLAG(int, timeout_ms, 30000, "Deadline of the call in milliseconds (0 = none)");
ABSL_FLAG(bool, tls, false, "Use TLS");
ABSL_FLAG(std::string, ca_cert, "", "PEM file of root certificates for --tls (default: system)");
ABSL_FLAG(std::string, tls_server_name, "", "Name to check in the server certificate");
ABSL_FLAG(bool, wait_for_ready, false, "Wait for the server instead of failing fast");
// health
ABSL_FLAG(std::string, service, "", "health: service to check (\"\" = the whole server)");
// forward / backward / register
ABSL_FLAG(std::string, norm, "rms", "Normalization: layer | rms");
ABSL_FLAG(std::string, x, "", "Input activations x, .npy of shape [..., hidden]");
ABSL_FLAG(std::string, residual, "", "Residual y, .npy (fused residual-add + norm)");
ABSL_FLAG(std::string, weight, "", "Weight, .npy of shape [hidden]");
ABSL_FLAG(std::string, bias, "", "Bias, .npy of shape [hidden]");
ABSL_FLAG(std::string, params, "", "Handle from `register`, instead of --weight/--bias");
ABSL_FLAG(std::optional<double>, eps, std::nullopt, "Epsilon under the root (default 1e-5)");
ABSL_FLAG(std::optional<double>, c, std::nullopt,
          "Output scale constant c; o is scaled by c/sqrt(hidden) (default sqrt(hidden))");
ABSL_FLAG(std::optional<double>, partial, std::nullopt,
          "Partial RMSNorm fraction in (0, 1] (default 1)");
ABSL_FLAG(std::string, dtype, "",
          "Wire dtype fp32 | fp16 | bf16 (default: the x file's: <f4 -> fp32, <f2 -> fp16). "
          "bf16 inputs are read from <f4 files and bf16 results are written as <f4");
ABSL_FLAG(bool, residual_fp32, false, "forward: return residual_out in fp32");
ABSL_FLAG(bool, stats, false, "forward: also return mean and rstd per row");
ABSL_FLAG(std::string, out, "", "forward: output o, .npy");
ABSL_FLAG(std::string, residual_out, "", "forward: residual stream p = x + y, .npy");
ABSL_FLAG(std::string, mean_out, "", "forward: per-row mean, .npy (implies --stats)");
ABSL_FLAG(std::string, rstd_out, "", "forward: per-row 1/sigma, .npy (implies --stats)");
ABSL_FLAG(std::string, grad_output, "", "backward: gradient at the output, .npy");
ABSL_FLAG(std::string, grad_residual_out, "", "backward: gradient at residual_out, .npy");
ABSL_FLAG(std::string, mean, "", "backward: saved mean from forward --mean_out, .npy");
ABSL_FLAG(std::string, rstd, "", "backward: saved rstd from forward --rstd_out, .npy");
ABSL_FLAG(std::string, grad_input_out, "", "backward: dx, .npy");
ABSL_FLAG(std::string, grad_weight_out, "", "backward: d weight, .npy (asks for it)");
ABSL_FLAG(std::string, grad_bias_out, "", "backward: d bias, .npy (asks for it)");
ABSL_FLAG(std::string, name, "", "register: free-text name shown by `list`");
// echo
ABSL_FLAG(int64_t, bytes, 1 << 20, "echo: payload size in bytes");

namespace {

constexpr char kUsage[] = R"(normserve-cli <command> [flags]

Commands:
  health                      grpc.health.v1 Check; prints the status, exit 0 only when SERVING
  forward                     --norm=layer|rms --x=x.npy [--residual=y.npy] [--weight=w.npy]
                              [--bias=b.npy | --params=<handle>] [--eps= --c= --partial=]
                              [--dtype=fp32|fp16|bf16] [--residual_fp32] [--stats]
                              --out=o.npy [--residual_out=p.npy] [--mean_out= --rstd_out=]
  backward                    --norm=... --x=x.npy --grad_output=do.npy [--residual=y.npy]
                              [--weight=w.npy] [--grad_residual_out=dp.npy] [--mean= --rstd=]
                              --grad_input_out=dx.npy [--grad_weight_out=dw.npy]
                              [--grad_bias_out=db.npy]
  register                    --weight=w.npy [--bias=b.npy] [--name=...]; prints the handle
  list                        lists registered parameters
  delete <handle>             deletes registered parameters
  echo                        --bytes=N; round trip of N bytes (transport check)

Global: --target=host:port (default localhost:50051) --timeout_ms=30000 --tls --ca_cert=ca.pem
Files are NumPy .npy, C order, '<f4' or '<f2'.)";

normserve::cli::NormInputs NormInputsFromFlags() {
  normserve::cli::NormInputs in;
  in.norm = absl::GetFlag(FLAGS_norm);
  in.eps = absl::GetFlag(FLAGS_eps);
  in.c = absl::GetFlag(FLAGS_c);
  in.partial = absl::GetFlag(FLAGS_partial);
  in.dtype = absl::GetFlag(FLAGS_dtype);
  in.x = absl::GetFlag(FLAGS_x);
  in.residual = absl::GetFlag(FLAGS_residual);
  in.weight = absl::GetFlag(FLAGS_weight);
  in.bias = absl::GetFlag(FLAGS_bias);
  in.params = absl::GetFlag(FLAGS_params);
  return in;
}

int Fail(const absl::Status& status, int code) {
  std::cerr << "normserve-cli: " << status << "\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // --help lists this program's own flags (absl's default looks for a file
  // named after the program).
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "client/cli/");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() < 2) {
    std::cerr << kUsage << "\n\nRun with --help for every flag.\n";
    return 2;
  }
  const std::string command = args[1];

  normserve::client::ClientOptions options;
  options.target = absl::GetFlag(FLAGS_target);
  options.tls = absl::GetFlag(FLAGS_tls) || !absl::GetFlag(FLAGS_ca_cert).empty();
  options.ca_cert_path = absl::GetFlag(FLAGS_ca_cert);
  options.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  const int timeout_ms = absl::GetFlag(FLAGS_timeout_ms);
  options.default_timeout =
      timeout_ms > 0 ? absl::Milliseconds(timeout_ms) : absl::InfiniteDuration();
  normserve::client::CallOptions call;
  call.wait_for_ready = absl::GetFlag(FLAGS_wait_for_ready);

  absl::StatusOr<std::unique_ptr<normserve::client::Client>> client =
      normserve::client::Client::Connect(options);
  if (!client.ok()) return Fail(client.status(), 2);

  absl::Status status;
  if (command == "health") {
    status = normserve::cli::RunHealth(**client, call, absl::GetFlag(FLAGS_service), std::cout);
  } else if (command == "forward") {
    normserve::cli::ForwardCommand cmd;
    cmd.in = NormInputsFromFlags();
    cmd.residual_fp32 = absl::GetFlag(FLAGS_residual_fp32);
    cmd.stats = absl::GetFlag(FLAGS_stats);
    cmd.out = absl::GetFlag(FLAGS_out);
    cmd.residual_out = absl::GetFlag(FLAGS_residual_out);
    cmd.mean_out = absl::GetFlag(FLAGS_mean_out);
    cmd.rstd_out = absl::GetFlag(FLAGS_rstd_out);
    status = normserve::cli::RunForward(**client, call, cmd, std::cout);
  } else if (command == "backward") {
    normserve::cli::BackwardCommand cmd;
    cmd.in = NormInputsFromFlags();
    cmd.grad_output = absl::GetFlag(FLAGS_grad_output);
    cmd.grad_residual_out = absl::GetFlag(FLAGS_grad_residual_out);
    cmd.mean = absl::GetFlag(FLAGS_mean);
    cmd.rstd = absl::GetFlag(FLAGS_rstd);
    cmd.grad_input_out = absl::GetFlag(FLAGS_grad_input_out);
    cmd.grad_weight_out = absl::GetFlag(FLAGS_grad_weight_out);
    cmd.grad_bias_out = absl::GetFlag(FLAGS_grad_bias_out);
    status = normserve::cli::RunBackward(**client, call, cmd, std::cout);
  } else if (command == "register") {
    normserve::cli::RegisterCommand cmd;
    cmd.weight = absl::GetFlag(FLAGS_weight);
    cmd.bias = absl::GetFlag(FLAGS_bias);
    cmd.dtype = absl::GetFlag(FLAGS_dtype);
    cmd.name = absl::GetFlag(FLAGS_name);
    status = normserve::cli::RunRegister(**client, call, cmd, std::cout);
  } else if (command == "list") {
    status = normserve::cli::RunList(**client, call, std::cout);
  } else if (command == "delete") {
    status = normserve::cli::RunDelete(**client, call, args.size() > 2 ? args[2] : "", std::cout);
  } else if (command == "echo") {
    status = normserve::cli::RunEcho(**client, call, absl::GetFlag(FLAGS_bytes), std::cout);
  } else {
    std::cerr << "normserve-cli: unknown command '" << command << "'\n\n" << kUsage << "\n";
    return 2;
  }
  if (!status.ok()) {
    return Fail(status, status.code() == absl::StatusCode::kInvalidArgument &&
                                absl::StrContains(status.message(), "--")
                            ? 2
                            : 1);
  }
  return 0;
}
