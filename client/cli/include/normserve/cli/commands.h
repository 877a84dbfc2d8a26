// The subcommands of normserve-cli, one function each. main.cc fills the
// option structs from flags; each command prints a short summary to `out` and
// returns the error that should end the program (its message names the file
// or flag at fault).
#ifndef NORMSERVE_CLI_COMMANDS_H_
#define NORMSERVE_CLI_COMMANDS_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "normserve/client/client.h"
#include "normserve/v1/normserve.pb.h"

namespace normserve::cli {

// What forward / backward / register share: the norm and the input files.
struct NormInputs {
  std::string norm = "rms";       // "layer" | "rms"
  std::optional<double> eps;      // unset: the server default (1e-5)
  std::optional<double> c;        // unset: sqrt(hidden)
  std::optional<double> partial;  // unset: 1
  std::string dtype;              // "", "fp32", "fp16", "bf16"; "": from x's file
  std::string x;                  // x.npy (required)
  std::string residual;           // y.npy (optional)
  std::string weight;             // w.npy (optional)
  std::string bias;               // b.npy (optional)
  std::string params;             // a RegisterParams handle instead of weight/bias
};

struct ForwardCommand {
  NormInputs in;
  bool residual_fp32 = false;  // residual_out in fp32
  bool stats = false;          // also return mean and rstd
  std::string out;             // o.npy (required)
  std::string residual_out;    // p.npy (needs --residual)
  std::string mean_out;        // mean.npy (implies stats)
  std::string rstd_out;        // rstd.npy (implies stats)
};

struct BackwardCommand {
  NormInputs in;
  std::string grad_output;        // do.npy (required)
  std::string grad_residual_out;  // dp.npy (optional)
  std::string mean;               // saved fp32 statistics: both or neither
  std::string rstd;
  std::string grad_input_out;   // dx.npy (required)
  std::string grad_weight_out;  // dw.npy: asks for grad_weight
  std::string grad_bias_out;    // db.npy: asks for grad_bias
};

struct RegisterCommand {
  std::string weight;  // w.npy
  std::string bias;    // b.npy
  std::string dtype;   // "": from the weight's (or bias's) file
  std::string name;
};

// Request building, separate from the RPC so it can be tested alone.
absl::StatusOr<v1::NormConfig> BuildConfig(const NormInputs& in);
absl::StatusOr<v1::ForwardRequest> BuildForwardRequest(const ForwardCommand& cmd);
absl::StatusOr<v1::BackwardRequest> BuildBackwardRequest(const BackwardCommand& cmd);
absl::StatusOr<v1::RegisterParamsRequest> BuildRegisterRequest(const RegisterCommand& cmd);

// The commands. `call` carries the deadline.
// Health: OK only when the server answers SERVING (FAILED_PRECONDITION with
// the reported status otherwise).
absl::Status RunHealth(client::Client& client, const client::CallOptions& call,
                       const std::string& service, std::ostream& out);
absl::Status RunForward(client::Client& client, const client::CallOptions& call,
                        const ForwardCommand& cmd, std::ostream& out);
absl::Status RunBackward(client::Client& client, const client::CallOptions& call,
                         const BackwardCommand& cmd, std::ostream& out);
absl::Status RunRegister(client::Client& client, const client::CallOptions& call,
                         const RegisterCommand& cmd, std::ostream& out);
absl::Status RunList(client::Client& client, const client::CallOptions& call, std::ostream& out);
absl::Status RunDelete(client::Client& client, const client::CallOptions& call,
                       const std::string& handle, std::ostream& out);
// Sends `bytes` bytes and checks they come back unchanged.
absl::Status RunEcho(client::Client& client, const client::CallOptions& call, int64_t bytes,
                     std::ostream& out);

}  // namespace normserve::cli

#endif  // NORMSERVE_CLI_COMMANDS_H_
