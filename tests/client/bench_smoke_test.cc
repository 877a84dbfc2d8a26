// Short, bounded load-generator runs against a real server on 127.0.0.1:
// the counts and percentiles they report must be consistent.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "normserve/client/client.h"
#include "normserve/loadgen/load_run.h"
#include "normserve/loadgen/report.h"
#include "process_runner.h"
#include "tests/support/server_process.h"

namespace normserve::loadgen {
namespace {

using testing::ServerProcess;

void ExpectConsistent(const RunResult& r) {
  EXPECT_EQ(r.requests, r.ok + r.errors);
  int64_t by_code = 0;
  for (const auto& [code, count] : r.errors_by_code) by_code += count;
  EXPECT_EQ(by_code, r.errors);
  EXPECT_EQ(r.latency_ns.count(), r.ok);
  const LatencyHistogram& h = r.latency_ns;
  EXPECT_LE(h.min(), h.Percentile(50));
  EXPECT_LE(h.Percentile(50), h.Percentile(90));
  EXPECT_LE(h.Percentile(90), h.Percentile(99));
  EXPECT_LE(h.Percentile(99), h.Percentile(99.9));
  EXPECT_LE(h.Percentile(99.9), h.max());
  EXPECT_NEAR(r.throughput_rps, static_cast<double>(r.requests) / r.duration_s, 1e-6);
}

class BenchSmokeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    for (int i = 0; i < 2; ++i) {
      client::ClientOptions options;
      options.target = server_->target();
      absl::StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(options);
      ASSERT_TRUE(c.ok());
      clients_.push_back(*std::move(c));
      raw_.push_back(clients_.back().get());
    }
  }

  LoadOptions Short(const std::string& ops) {
    LoadOptions options;
    options.mix = *ParseOpMix(ops);
    options.shape = {8, 256};
    options.warmup = absl::Milliseconds(200);
    options.duration = absl::Seconds(1);
    options.call_timeout = absl::Seconds(5);
    options.progress = false;
    return options;
  }

  std::unique_ptr<ServerProcess> server_;
  std::vector<std::unique_ptr<client::Client>> clients_;
  std::vector<client::Client*> raw_;
};

TEST_F(BenchSmokeTest, ClosedLoopCountsAndPercentilesAreConsistent) {
  LoadOptions options = Short("rms_fwd:0.5,ln_bwd:0.5");
  options.concurrency = 4;
  options.dtype = v1::DTYPE_BF16;
  absl::StatusOr<RunResult> r = RunLoad(options, raw_);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectConsistent(*r);
  EXPECT_GT(r->ok, 10);
  EXPECT_EQ(r->errors, 0) << Table({*r});
  EXPECT_EQ(r->rows, r->ok * 8);
  EXPECT_GT(r->gb_per_s, 0);
  EXPECT_EQ(r->channels, 2);
}

TEST_F(BenchSmokeTest, OpenLoopSendsAtTheScheduledRate) {
  LoadOptions options = Short("rms_fwd");
  options.loop = Loop::kOpen;
  options.rate = 200;
  options.poisson = true;
  absl::StatusOr<RunResult> r = RunLoad(options, raw_);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectConsistent(*r);
  // 200/s for 1 s: Poisson count, sd ~14.
  EXPECT_GT(r->requests, 120);
  EXPECT_LT(r->requests, 280);
  EXPECT_EQ(r->errors, 0);

  options.poisson = false;
  r = RunLoad(options, raw_);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectConsistent(*r);
  EXPECT_NEAR(r->requests, 200, 2);
}

TEST_F(BenchSmokeTest, StreamingAndEchoModesAreConsistent) {
  LoadOptions stream = Short("rms_fwd_res:1,ln_fwd:1");
  stream.streaming = true;
  stream.concurrency = 6;
  absl::StatusOr<RunResult> r = RunLoad(stream, raw_);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectConsistent(*r);
  EXPECT_GT(r->ok, 10);
  EXPECT_EQ(r->errors, 0) << Table({*r});

  LoadOptions echo = Short("echo");
  echo.concurrency = 2;
  r = RunLoad(echo, raw_);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectConsistent(*r);
  EXPECT_GT(r->ok, 10);
  // Echo moves 8 x 256 x 4 bytes each way per request.
  EXPECT_EQ(r->payload_bytes, r->ok * 2 * 8 * 256 * 4);

  stream.mix = *ParseOpMix("echo");
  EXPECT_EQ(RunLoad(stream, raw_).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BenchErrorsTest, ErrorsAreCountedByStatusCode) {
  client::ClientOptions options;
  options.target = absl::StrCat("127.0.0.1:", testing::PickFreePort());  // nobody listens
  options.max_attempts = 2;
  options.initial_backoff = absl::Milliseconds(10);
  options.max_backoff = absl::Milliseconds(10);
  absl::StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(options);
  ASSERT_TRUE(c.ok());
  LoadOptions load;
  load.mix = *ParseOpMix("rms_fwd");
  load.shape = {2, 32};
  load.concurrency = 2;
  load.warmup = absl::ZeroDuration();
  load.duration = absl::Milliseconds(500);
  load.call_timeout = absl::Seconds(2);
  load.progress = false;
  absl::StatusOr<RunResult> r = RunLoad(load, {c->get()});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectConsistent(*r);
  EXPECT_EQ(r->ok, 0);
  EXPECT_GT(r->errors, 0);
  EXPECT_EQ(r->errors_by_code["UNAVAILABLE"], r->errors);
}

TEST_F(BenchSmokeTest, BinarySweepWritesParsableJsonAndCsv) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("bench_smoke_", getpid());
  std::filesystem::create_directories(dir);
  const std::string json_path = (dir / "out.json").string();
  const std::string csv_path = (dir / "out.csv").string();
  client_test::ProcessResult run = client_test::RunProgram(
      NORMSERVE_BENCH_BINARY,
      {absl::StrCat("--target=", server_->target()), "--ops=rms_fwd:0.7,ln_bwd:0.3",
       "--shape=4x128", "--dtype=fp16", "--sweep=concurrency:1,3", "--channels=2", "--warmup=100ms",
       "--duration=600ms", "--json_out=" + json_path, "--csv_out=" + csv_path});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("req/s"), std::string::npos) << run.output;  // progress + table

  std::ifstream json_in(json_path);
  std::stringstream json;
  json << json_in.rdbuf();
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.str(), &parsed).ok()) << json.str();
  const auto& results = parsed.fields().at("results").list_value();
  ASSERT_EQ(results.values_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const auto& f = results.values(i).struct_value().fields();
    EXPECT_EQ(f.at("concurrency").number_value(), i == 0 ? 1 : 3);
    EXPECT_EQ(f.at("requests").number_value(),
              f.at("ok").number_value() + f.at("errors").number_value());
    EXPECT_GT(f.at("ok").number_value(), 0);
    const auto& lat = f.at("latency_us").struct_value().fields();
    EXPECT_LE(lat.at("p50").number_value(), lat.at("p90").number_value());
    EXPECT_LE(lat.at("p90").number_value(), lat.at("p99").number_value());
    EXPECT_LE(lat.at("p99").number_value(), lat.at("p999").number_value());
    EXPECT_LE(lat.at("p999").number_value(), lat.at("max").number_value());
  }

  std::ifstream csv_in(csv_path);
  std::stringstream csv;
  csv << csv_in.rdbuf();
  const std::vector<std::string> lines = absl::StrSplit(csv.str(), '\n', absl::SkipEmpty());
  EXPECT_EQ(lines.size(), 3u) << csv.str();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace normserve::loadgen
