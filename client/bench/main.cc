// normserve-bench: load generator for a normserve target.
//
//   normserve-bench --target=127.0.0.1:50051 --ops=rms_fwd:0.7,ln_bwd:0.3
//       --shape=16x4096 --dtype=bf16 --concurrency=32 --channels=4 --duration=30s
//   normserve-bench --rate=5000 --arrival=poisson ...            (open loop)
//   normserve-bench --sweep=concurrency:1,2,4,8,16,32 --csv_out=sweep.csv
//   normserve-bench --ops=echo ...                               (transport floor)
//
// Exit status: 0 when every run completed (errors are counted, not fatal),
// 1 when a run could not start, 2 for bad flags.
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "normserve/client/client.h"
#include "normserve/client/tensor.h"
#include "normserve/loadgen/load_run.h"
#include "normserve/loadgen/report.h"
#include "normserve/loadgen/workload.h"

ABSL_FLAG(std::string, target, "localhost:50051",
          "Server: host:port, comma-separated ip:port list (round-robin), or a gRPC URI");
ABSL_FLAG(bool, tls, false, "Use TLS");
ABSL_FLAG(std::string, ca_cert, "", "PEM root certificates for --tls (default: system)");
ABSL_FLAG(std::string, tls_server_name, "", "Name to check in the server certificate");
ABSL_FLAG(std::string, ops, "rms_fwd",
          "Op mix op:weight,...; ops: rms_fwd ln_fwd rms_fwd_res ln_fwd_res rms_bwd ln_bwd "
          "echo (echo sends rows*hidden*dtype bytes each way, the size of a forward)");
ABSL_FLAG(std::string, shape, "16x4096", "Activation shape, rows x hidden (e.g. 16x4096)");
ABSL_FLAG(std::string, dtype, "fp32", "fp32 | fp16 | bf16");
ABSL_FLAG(int, concurrency, 8, "Closed loop: requests in flight");
ABSL_FLAG(int, channels, 1, "gRPC channels (each its own TCP connection); requests alternate");
ABSL_FLAG(double, rate, 0,
          "Open loop when > 0: requests per second, latency measured from the intended send "
          "time");
ABSL_FLAG(std::string, arrival, "fixed", "Open loop arrivals: fixed | poisson");
ABSL_FLAG(int64_t, max_outstanding, 100000, "Open loop: most requests in flight");
ABSL_FLAG(bool, streaming, false, "Pipeline requests over the Stream RPC (one per channel)");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(10), "Measurement window per run");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(1), "Warm-up before each window (not counted)");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(10), "Deadline of each call");
ABSL_FLAG(std::string, sweep, "",
          "Run once per value: concurrency:1,2,4,... (closed loop) or rate:100,200,... (open)");
ABSL_FLAG(std::string, json_out, "", "Write results as JSON to this file ('-' = stdout)");
ABSL_FLAG(std::string, csv_out, "", "Write results as CSV to this file ('-' = stdout)");
ABSL_FLAG(bool, progress, true, "Print a progress line to stderr each second");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the op picker, arrivals and tensor data");

namespace {

int Fail(const absl::Status& status, int code) {
  std::cerr << "normserve-bench: " << status << "\n";
  return code;
}

absl::Status WriteOut(const std::string& path, const std::string& text) {
  if (path.empty()) return absl::OkStatus();
  if (path == "-") {
    std::cout << text;
    return absl::OkStatus();
  }
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write '", path, "'"));
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  // --help lists this program's own flags (absl's default looks for a file
  // named after the program).
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "client/bench/");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);
  absl::SetProgramUsageMessage(
      "normserve-bench [flags]: closed- or open-loop load on a normserve target; reports "
      "throughput and latency percentiles (table on stdout, --json_out, --csv_out).");
  absl::ParseCommandLine(argc, argv);

  namespace lg = normserve::loadgen;
  lg::LoadOptions options;
  absl::StatusOr<std::vector<lg::OpWeight>> mix = lg::ParseOpMix(absl::GetFlag(FLAGS_ops));
  if (!mix.ok()) return Fail(mix.status(), 2);
  options.mix = *mix;
  absl::StatusOr<std::vector<int64_t>> shape = lg::ParseShape(absl::GetFlag(FLAGS_shape));
  if (!shape.ok()) return Fail(shape.status(), 2);
  options.shape = *shape;
  absl::StatusOr<normserve::v1::DType> dtype =
      normserve::client::ParseDType(absl::GetFlag(FLAGS_dtype));
  if (!dtype.ok()) return Fail(dtype.status(), 2);
  options.dtype = *dtype;
  absl::StatusOr<lg::Sweep> sweep = lg::ParseSweep(absl::GetFlag(FLAGS_sweep));
  if (!sweep.ok()) return Fail(sweep.status(), 2);
  const std::string arrival = absl::GetFlag(FLAGS_arrival);
  if (arrival != "fixed" && arrival != "poisson") {
    return Fail(
        absl::InvalidArgumentError(absl::StrCat("--arrival=", arrival, " is not fixed or poisson")),
        2);
  }
  options.concurrency = absl::GetFlag(FLAGS_concurrency);
  options.rate = absl::GetFlag(FLAGS_rate);
  options.loop = options.rate > 0 ? lg::Loop::kOpen : lg::Loop::kClosed;
  options.poisson = arrival == "poisson";
  options.max_outstanding = absl::GetFlag(FLAGS_max_outstanding);
  options.streaming = absl::GetFlag(FLAGS_streaming);
  options.duration = absl::GetFlag(FLAGS_duration);
  options.warmup = absl::GetFlag(FLAGS_warmup);
  options.call_timeout = absl::GetFlag(FLAGS_timeout);
  options.progress = absl::GetFlag(FLAGS_progress);
  options.seed = absl::GetFlag(FLAGS_seed);

  const int channels = absl::GetFlag(FLAGS_channels);
  if (channels < 1) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--channels=", channels, " is not >= 1")),
                2);
  }
  normserve::client::ClientOptions client_options;
  client_options.target = absl::GetFlag(FLAGS_target);
  client_options.tls = absl::GetFlag(FLAGS_tls) || !absl::GetFlag(FLAGS_ca_cert).empty();
  client_options.ca_cert_path = absl::GetFlag(FLAGS_ca_cert);
  client_options.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  client_options.default_timeout = options.call_timeout;
  std::vector<std::unique_ptr<normserve::client::Client>> clients;
  std::vector<normserve::client::Client*> client_ptrs;
  for (int i = 0; i < channels; ++i) {
    absl::StatusOr<std::unique_ptr<normserve::client::Client>> client =
        normserve::client::Client::Connect(client_options);
    if (!client.ok()) return Fail(client.status(), 2);
    client_ptrs.push_back(client->get());
    clients.push_back(*std::move(client));
  }

  std::vector<lg::LoadOptions> runs;
  if (sweep->kind == lg::Sweep::Kind::kNone) {
    runs.push_back(options);
  } else {
    for (double value : sweep->values) {
      lg::LoadOptions run = options;
      if (sweep->kind == lg::Sweep::Kind::kConcurrency) {
        run.loop = lg::Loop::kClosed;
        run.concurrency = static_cast<int>(value);
      } else {
        run.loop = lg::Loop::kOpen;
        run.rate = value;
      }
      runs.push_back(run);
    }
  }

  std::vector<lg::RunResult> results;
  for (const lg::LoadOptions& run : runs) {
    if (runs.size() > 1) {
      std::cerr << "--- "
                << (run.loop == lg::Loop::kClosed ? absl::StrCat("concurrency ", run.concurrency)
                                                  : absl::StrCat("rate ", run.rate, "/s"))
                << " ---\n";
    }
    absl::StatusOr<lg::RunResult> result = lg::RunLoad(run, client_ptrs);
    if (!result.ok()) return Fail(result.status(), 1);
    results.push_back(*std::move(result));
  }

  const std::string json_out = absl::GetFlag(FLAGS_json_out);
  const std::string csv_out = absl::GetFlag(FLAGS_csv_out);
  // The table goes to stdout unless stdout carries JSON or CSV.
  (json_out == "-" || csv_out == "-" ? std::cerr : std::cout) << lg::Table(results);
  lg::RunDescription description{
      client_options.target, absl::GetFlag(FLAGS_ops), absl::GetFlag(FLAGS_shape),
      std::string(normserve::client::DTypeName(options.dtype)), absl::GetFlag(FLAGS_sweep)};
  absl::Status s = WriteOut(json_out, lg::ToJson(description, results));
  if (!s.ok()) return Fail(s, 1);
  std::string csv = lg::CsvHeader();
  for (const lg::RunResult& r : results) csv += lg::CsvRow(r);
  s = WriteOut(csv_out, csv);
  if (!s.ok()) return Fail(s, 1);
  return 0;
}
