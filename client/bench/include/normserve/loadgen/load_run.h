// One load-generation run against a normserve target.
//
// Closed loop: `concurrency` requests in flight, spread over the given
// clients (channels); each completion immediately sends the next request.
// Open loop: requests are scheduled at a fixed rate (or with Poisson arrivals)
// regardless of completions; latency is measured from each request's
// *intended* send time, so a stalled server is charged for the requests it
// delayed (no coordinated omission).
//
// A request counts toward the result when its (intended) send time falls in
// the measurement window [warmup, warmup + duration); its completion may come
// later. Calls are unary (callback API) or pipelined over one Stream per
// client. With `progress`, a line per second goes to stderr.
#ifndef NORMSERVE_LOADGEN_LOAD_RUN_H_
#define NORMSERVE_LOADGEN_LOAD_RUN_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "normserve/client/client.h"
#include "normserve/loadgen/histogram.h"
#include "normserve/loadgen/workload.h"

namespace normserve::loadgen {

enum class Loop { kClosed, kOpen };

struct LoadOptions {
  Loop loop = Loop::kClosed;
  int concurrency = 8;               // closed loop: requests in flight (>= 1)
  double rate = 1000;                // open loop: requests per second (> 0)
  bool poisson = false;              // open loop: exponential inter-arrival times
  int64_t max_outstanding = 100000;  // open loop: beyond it the sender waits
  bool streaming = false;            // Stream RPC instead of unary calls (not echo)
  absl::Duration warmup = absl::Seconds(1);
  absl::Duration duration = absl::Seconds(10);
  absl::Duration call_timeout = absl::Seconds(10);  // deadline of each call
  std::vector<OpWeight> mix;                        // from ParseOpMix
  std::vector<int64_t> shape = {16, 4096};
  v1::DType dtype = v1::DTYPE_FP32;
  bool progress = true;
  uint64_t seed = 1;
};

struct RunResult {
  Loop loop = Loop::kClosed;
  int concurrency = 0;
  double target_rate = 0;
  bool streaming = false;
  int channels = 0;
  double duration_s = 0;  // the measurement window
  int64_t requests = 0;   // completed in the window: ok + errors
  int64_t ok = 0;
  int64_t errors = 0;
  std::map<std::string, int64_t> errors_by_code;  // "UNAVAILABLE" -> count
  int64_t rows = 0;                               // activation rows of the OK requests
  int64_t payload_bytes = 0;                      // tensor bytes sent + received by OK requests
  double throughput_rps = 0;
  double rows_per_s = 0;
  double gb_per_s = 0;          // payload, 1e9 bytes per second
  LatencyHistogram latency_ns;  // OK requests only
};

// Runs the load. `clients` (one per channel, at least one) must outlive the
// call. INVALID_ARGUMENT for bad options (empty mix, streaming echo, ...).
absl::StatusOr<RunResult> RunLoad(const LoadOptions& options,
                                  const std::vector<client::Client*>& clients);

}  // namespace normserve::loadgen

#endif  // NORMSERVE_LOADGEN_LOAD_RUN_H_
