#include "normserve/loadgen/report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace normserve::loadgen {
namespace {

double Us(int64_t ns) { return static_cast<double>(ns) / 1e3; }

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

const char* LoopName(Loop loop) { return loop == Loop::kClosed ? "closed" : "open"; }

std::string ResultJson(const RunResult& r) {
  const LatencyHistogram& h = r.latency_ns;
  std::string errors = "{";
  bool first = true;
  for (const auto& [code, count] : r.errors_by_code) {
    absl::StrAppend(&errors, first ? "" : ",", JsonString(code), ":", count);
    first = false;
  }
  errors += "}";
  return absl::StrFormat(
      R"({"loop":"%s","streaming":%s,"channels":%d,"concurrency":%d,"target_rate":%.6g,)"
      R"("duration_s":%.6g,"requests":%d,"ok":%d,"errors":%d,"errors_by_code":%s,)"
      R"("rows":%d,"payload_bytes":%d,"throughput_rps":%.6g,"rows_per_s":%.6g,"gb_per_s":%.6g,)"
      R"("latency_us":{"p50":%.6g,"p90":%.6g,"p99":%.6g,"p999":%.6g,"max":%.6g,"mean":%.6g,)"
      R"("min":%.6g,"count":%d}})",
      LoopName(r.loop), r.streaming ? "true" : "false", r.channels, r.concurrency, r.target_rate,
      r.duration_s, r.requests, r.ok, r.errors, errors, r.rows, r.payload_bytes, r.throughput_rps,
      r.rows_per_s, r.gb_per_s, Us(h.Percentile(50)), Us(h.Percentile(90)), Us(h.Percentile(99)),
      Us(h.Percentile(99.9)), Us(h.max()), h.mean() / 1e3, Us(h.min()), h.count());
}

}  // namespace

std::string ToJson(const RunDescription& d, const std::vector<RunResult>& results) {
  std::string out =
      absl::StrCat(R"({"config":{"target":)", JsonString(d.target), R"(,"ops":)", JsonString(d.ops),
                   R"(,"shape":)", JsonString(d.shape), R"(,"dtype":)", JsonString(d.dtype),
                   R"(,"sweep":)", JsonString(d.sweep), R"(},"results":[)");
  for (size_t i = 0; i < results.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", ResultJson(results[i]));
  }
  out += "]}\n";
  return out;
}

std::string CsvHeader() {
  return "loop,streaming,channels,concurrency,target_rate,duration_s,requests,ok,errors,"
         "throughput_rps,rows_per_s,gb_per_s,p50_us,p90_us,p99_us,p999_us,max_us,mean_us\n";
}

std::string CsvRow(const RunResult& r) {
  const LatencyHistogram& h = r.latency_ns;
  return absl::StrFormat(
      "%s,%d,%d,%d,%.6g,%.6g,%d,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n",
      LoopName(r.loop), r.streaming ? 1 : 0, r.channels, r.concurrency, r.target_rate, r.duration_s,
      r.requests, r.ok, r.errors, r.throughput_rps, r.rows_per_s, r.gb_per_s, Us(h.Percentile(50)),
      Us(h.Percentile(90)), Us(h.Percentile(99)), Us(h.Percentile(99.9)), Us(h.max()),
      h.mean() / 1e3);
}

std::string Table(const std::vector<RunResult>& results) {
  std::string out = absl::StrFormat("%-6s %5s %9s %10s %10s %8s %9s %9s %9s %9s %9s %7s\n", "loop",
                                    "conc", "rate", "req/s", "rows/s", "GB/s", "p50 us", "p90 us",
                                    "p99 us", "p99.9 us", "max us", "errors");
  for (const RunResult& r : results) {
    const LatencyHistogram& h = r.latency_ns;
    absl::StrAppendFormat(&out,
                          "%-6s %5d %9.0f %10.1f %10.0f %8.3f %9.1f %9.1f %9.1f %9.1f %9.1f %7d\n",
                          LoopName(r.loop), r.concurrency, r.target_rate, r.throughput_rps,
                          r.rows_per_s, r.gb_per_s, Us(h.Percentile(50)), Us(h.Percentile(90)),
                          Us(h.Percentile(99)), Us(h.Percentile(99.9)), Us(h.max()), r.errors);
    for (const auto& [code, count] : r.errors_by_code) {
      absl::StrAppendFormat(&out, "         %s: %d\n", code, count);
    }
  }
  return out;
}

}  // namespace normserve::loadgen
