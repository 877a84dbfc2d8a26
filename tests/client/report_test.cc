#include "normserve/loadgen/report.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace normserve::loadgen {
namespace {

RunResult SampleResult() {
  RunResult r;
  r.loop = Loop::kOpen;
  r.target_rate = 500;
  r.channels = 2;
  r.duration_s = 2;
  r.ok = 990;
  r.errors = 10;
  r.requests = 1000;
  r.errors_by_code["UNAVAILABLE"] = 7;
  r.errors_by_code["DEADLINE_EXCEEDED"] = 3;
  for (int i = 1; i <= 990; ++i) r.latency_ns.Record(i * 1000);
  r.throughput_rps = 500;
  return r;
}

TEST(ReportTest, JsonParsesAndCarriesPercentilesAndErrorCodes) {
  const std::string json =
      ToJson({"127.0.0.1:1", "rms_fwd", "16x4096", "bf16", "rate:500"}, {SampleResult()});
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  EXPECT_EQ(parsed.fields().at("config").struct_value().fields().at("dtype").string_value(),
            "bf16");
  const auto& result = parsed.fields().at("results").list_value().values(0).struct_value();
  EXPECT_EQ(result.fields().at("loop").string_value(), "open");
  EXPECT_EQ(result.fields().at("requests").number_value(), 1000);
  const auto& errors = result.fields().at("errors_by_code").struct_value().fields();
  EXPECT_EQ(errors.at("UNAVAILABLE").number_value(), 7);
  const auto& latency = result.fields().at("latency_us").struct_value().fields();
  EXPECT_NEAR(latency.at("p50").number_value(), 495, 5);
  EXPECT_EQ(latency.at("max").number_value(), 990);
  EXPECT_LE(latency.at("p99").number_value(), latency.at("p999").number_value());
}

TEST(ReportTest, CsvRowsHaveTheHeaderColumns) {
  const std::vector<std::string> header = absl::StrSplit(CsvHeader(), ',');
  const std::vector<std::string> row = absl::StrSplit(CsvRow(SampleResult()), ',');
  EXPECT_EQ(header.size(), row.size());
  EXPECT_EQ(row[0], "open");
  EXPECT_NE(Table({SampleResult()}).find("UNAVAILABLE: 7"), std::string::npos);
}

}  // namespace
}  // namespace normserve::loadgen
