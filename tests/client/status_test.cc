#include "normserve/client/status.h"

#include "gtest/gtest.h"

namespace normserve::client {
namespace {

TEST(StatusTest, GrpcStatusKeepsItsCodeAndMessage) {
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  for (int code = 1; code <= 16; ++code) {
    const grpc::Status in(static_cast<grpc::StatusCode>(code), "field x: bad");
    const absl::Status out = FromGrpcStatus(in);
    EXPECT_EQ(static_cast<int>(out.code()), code);
    EXPECT_EQ(out.message(), "field x: bad");
  }
}

TEST(StatusTest, StreamCodesOutsideTheCanonicalRangeBecomeUnknown) {
  EXPECT_TRUE(FromWireCode(0, "").ok());
  EXPECT_EQ(FromWireCode(5, "no such handle").code(), absl::StatusCode::kNotFound);
  const absl::Status odd = FromWireCode(99, "odd");
  EXPECT_EQ(odd.code(), absl::StatusCode::kUnknown);
  EXPECT_NE(odd.message().find("99"), absl::string_view::npos);
}

}  // namespace
}  // namespace normserve::client
