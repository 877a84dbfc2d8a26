// TLS end to end: the server with a self-signed certificate (made here with
// openssl), the client trusting it; a client that does not speak TLS, or
// does not trust the certificate, gets no answer.
#include <cstdlib>
#include <filesystem>

#include "gtest/gtest.h"
#include "normserve/client/client.h"
#include "normserve/client/tensor.h"
#include "reference_compare.h"
#include "tests/support/server_process.h"

namespace normserve::client {
namespace {

using client_test::AllClose;
using client_test::RandomValues;
using client_test::ReferenceForward;
using testing::ServerProcess;

class ClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("normserve-tls-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    cert_ = (dir_ / "cert.pem").string();
    const std::string key = (dir_ / "key.pem").string();
    const std::string command =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
        "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
        key + " -out " + cert_ + " 2>/dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0) << "openssl could not make a certificate";
    auto server = ServerProcess::Start({"--tls_cert_file=" + cert_, "--tls_key_file=" + key});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  absl::StatusOr<v1::ForwardResponse> CallWith(ClientOptions options) {
    options.target = server_->target();
    options.default_timeout = absl::Seconds(5);
    options.enable_retries = false;
    auto client = Client::Connect(options);
    if (!client.ok()) return client.status();
    request_.mutable_config()->set_kind(v1::RMS_NORM);
    *request_.mutable_x() = *MakeTensor(RandomValues(4 * 32, 9), {4, 32}, v1::DTYPE_FP32);
    return (*client)->Forward(request_);
  }

  std::filesystem::path dir_;
  std::string cert_;
  std::unique_ptr<ServerProcess> server_;
  v1::ForwardRequest request_;
};

TEST_F(ClientTlsTest, TrustedCertificateGivesCorrectResults) {
  auto out = CallWith({.tls = true, .ca_cert_path = cert_});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(AllClose(out->output(), ReferenceForward(request_).out, 1e-5, 1e-4));
}

TEST_F(ClientTlsTest, PlaintextOrUntrustingClientsGetNoAnswer) {
  auto plaintext = CallWith({.tls = false});
  EXPECT_EQ(plaintext.status().code(), absl::StatusCode::kUnavailable) << plaintext.status();
  auto untrusting = CallWith({.tls = true});  // gRPC's default roots: not our certificate
  EXPECT_EQ(untrusting.status().code(), absl::StatusCode::kUnavailable) << untrusting.status();
}

}  // namespace
}  // namespace normserve::client
