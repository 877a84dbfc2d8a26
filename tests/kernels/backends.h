// The backends the kernel suite runs against. Every test is instantiated for
// every name in BackendNames(), on every machine, so the test list is the same
// on a CPU-only machine and on a GPU machine; a backend that cannot be made
// here (CUDA without a GPU) makes its tests GTEST_SKIP.
//
//   class ForwardTest : public BackendTest<ForwardParam> {};
//   TEST_P(ForwardTest, ...) { backend().Forward(batch); }
#ifndef NORMSERVE_TESTS_KERNELS_BACKENDS_H_
#define NORMSERVE_TESTS_KERNELS_BACKENDS_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "normserve/kernels/backend.h"

namespace normserve::kernels_test {

using kernels::Backend;

// "cpu" and "cuda".
std::vector<std::string> BackendNames();

// The named backend, or UNAVAILABLE (with the reason) when it cannot run here.
// The CPU backend uses 2 threads, so the multi-threaded paths are exercised.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackendByName(const std::string& name);

// Base fixture for tests whose parameter is a tuple starting with the backend
// name: makes the backend in SetUp, or skips the test.
template <typename... Rest>
class BackendTest : public ::testing::TestWithParam<std::tuple<std::string, Rest...>> {
 protected:
  void SetUp() override {
    const std::string& name = std::get<0>(this->GetParam());
    absl::StatusOr<std::unique_ptr<Backend>> backend = MakeBackendByName(name);
    if (!backend.ok()) GTEST_SKIP() << name << " backend: " << backend.status().message();
    backend_ = *std::move(backend);
  }

  Backend& backend() { return *backend_; }

 private:
  std::unique_ptr<Backend> backend_;
};

}  // namespace normserve::kernels_test

#endif  // NORMSERVE_TESTS_KERNELS_BACKENDS_H_
