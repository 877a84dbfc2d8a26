#include "normserve/client/target.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "gtest/gtest.h"
#include "normserve/client/channel.h"

namespace normserve::client {
namespace {

TEST(TargetTest, SingleAddressesAndUrisPassThrough) {
  EXPECT_EQ(*ResolveTarget("localhost:50051"), "localhost:50051");
  EXPECT_EQ(*ResolveTarget("dns:///normserve.svc:50051"), "dns:///normserve.svc:50051");
  EXPECT_EQ(*ResolveTarget("ipv4:127.0.0.1:1,127.0.0.1:2"), "ipv4:127.0.0.1:1,127.0.0.1:2");
  EXPECT_EQ(*ResolveTarget("unix:/tmp/normserve.sock"), "unix:/tmp/normserve.sock");
}

TEST(TargetTest, CommaListsBecomeStaticResolverUris) {
  EXPECT_EQ(*ResolveTarget("127.0.0.1:5001, 127.0.0.1:5002"), "ipv4:127.0.0.1:5001,127.0.0.1:5002");
  EXPECT_EQ(*ResolveTarget("localhost:1,10.0.0.2:2"), "ipv4:127.0.0.1:1,10.0.0.2:2");
  EXPECT_EQ(*ResolveTarget("[::1]:1,[::1]:2"), "ipv6:[::1]:1,[::1]:2");
}

TEST(TargetTest, BadListsAreRejectedNamingTheEntry) {
  EXPECT_EQ(ResolveTarget("").status().code(), absl::StatusCode::kInvalidArgument);
  absl::Status name = ResolveTarget("a.example:1,b.example:2").status();
  EXPECT_EQ(name.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(name.message().find("a.example:1"), absl::string_view::npos);
  EXPECT_FALSE(ResolveTarget("127.0.0.1:0,127.0.0.1:2").ok());
  EXPECT_FALSE(ResolveTarget("127.0.0.1:99999,127.0.0.1:2").ok());
  EXPECT_FALSE(ResolveTarget("127.0.0.1,127.0.0.1:2").ok());
  EXPECT_FALSE(ResolveTarget("127.0.0.1:1,[::1]:2").ok());
}

TEST(ServiceConfigTest, JsonEnablesRoundRobinAndRetriesOnUnavailable) {
  ClientOptions options;
  const std::string json = ServiceConfigJson(options);
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  const auto& lb = parsed.fields().at("loadBalancingConfig").list_value();
  ASSERT_EQ(lb.values_size(), 1);
  EXPECT_TRUE(lb.values(0).struct_value().fields().contains("round_robin"));
  const auto& method = parsed.fields().at("methodConfig").list_value().values(0).struct_value();
  const auto& retry = method.fields().at("retryPolicy").struct_value().fields();
  EXPECT_EQ(retry.at("maxAttempts").number_value(), 5);
  EXPECT_EQ(retry.at("retryableStatusCodes").list_value().values(0).string_value(), "UNAVAILABLE");
  EXPECT_EQ(method.fields()
                .at("name")
                .list_value()
                .values(0)
                .struct_value()
                .fields()
                .at("service")
                .string_value(),
            "normserve.v1.Normalizer");
}

TEST(ServiceConfigTest, DisabledFeaturesLeaveTheConfigEmpty) {
  ClientOptions options;
  options.round_robin = false;
  options.enable_retries = false;
  EXPECT_EQ(ServiceConfigJson(options), "{}");
}

TEST(ChannelTest, BadOptionsAreRejectedBeforeDialling) {
  ClientOptions options;
  options.target = "127.0.0.1:1";
  options.max_attempts = 1;
  EXPECT_EQ(MakeChannel(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.max_attempts = 3;
  options.tls = true;
  options.ca_cert_path = "/nonexistent/ca.pem";
  absl::Status missing = MakeChannel(options).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("/nonexistent/ca.pem"), absl::string_view::npos);
  options.ca_cert_path.clear();
  EXPECT_TRUE(MakeChannel(options).ok());  // TLS with default roots
}

}  // namespace
}  // namespace normserve::client
