// Writing load-generator results: a human table, JSON and CSV.
//
// Latencies are reported in microseconds: p50, p90, p99, p99.9, max and mean
// of the OK requests (from the histogram, within 0.8 %; max is exact).
#ifndef NORMSERVE_LOADGEN_REPORT_H_
#define NORMSERVE_LOADGEN_REPORT_H_

#include <string>
#include <vector>

#include "normserve/loadgen/load_run.h"

namespace normserve::loadgen {

// What was run, echoed into the JSON next to the results.
struct RunDescription {
  std::string target;
  std::string ops;    // the --ops text
  std::string shape;  // "16x4096"
  std::string dtype;  // "bf16"
  std::string sweep;  // "" or the --sweep text
};

// {"config": {...}, "results": [{..., "latency_us": {...}, "errors_by_code": {...}}]}
std::string ToJson(const RunDescription& description, const std::vector<RunResult>& results);

// A header line and one line per result, comma-separated, no quoting needed.
std::string CsvHeader();
std::string CsvRow(const RunResult& result);

// An aligned table (one row per result): the latency-throughput table of a
// sweep.
std::string Table(const std::vector<RunResult>& results);

}  // namespace normserve::loadgen

#endif  // NORMSERVE_LOADGEN_REPORT_H_
