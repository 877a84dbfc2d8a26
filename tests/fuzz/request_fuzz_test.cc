// Randomised requests against validation and compute: whatever the bytes say,
// building a work item either fails with INVALID_ARGUMENT / NOT_FOUND, or
// yields an item whose every pointer covers exactly the bytes the kernels will
// touch, and running it on the CPU backend succeeds. Also feeds raw random
// bytes to the message parser. Deterministic (fixed seeds), so a failure
// reproduces; runs in a few seconds.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "normserve/kernels/backend.h"
#include "server/batching/kernel_batch.h"
#include "server/service/param_registry.h"
#include "server/service/request_builder.h"

namespace normserve::server {
namespace {

constexpr int kIterations = 4000;

v1::DType RandomDType(std::mt19937_64& rng) {
  // Mostly valid dtypes, sometimes unspecified or out of range.
  static constexpr int kChoices[] = {1, 2, 3, 1, 2, 3, 0, 7};
  return static_cast<v1::DType>(kChoices[rng() % 8]);
}

size_t ElementSize(v1::DType dtype) { return dtype == v1::DTYPE_FP32 ? 4 : 2; }

// A tensor that is usually well formed, sometimes subtly not: wrong byte
// count, zero or negative dims, other ranks, other dtypes.
v1::Tensor RandomTensor(std::mt19937_64& rng, int64_t rows, int64_t hidden, v1::DType dtype,
                        bool vector) {
  v1::Tensor tensor;
  const int mutation = static_cast<int>(rng() % 30);  // 0..5 mutate: one in five
  tensor.set_dtype(mutation == 0 ? RandomDType(rng) : dtype);
  if (!vector) tensor.add_shape(mutation == 1 ? -static_cast<int64_t>(rng() % 3) : rows);
  tensor.add_shape(mutation == 2 ? static_cast<int64_t>(rng() % 70000) : hidden);
  if (mutation == 3) tensor.add_shape(1 + rng() % 3);
  int64_t elements = 1;
  for (int64_t dim : tensor.shape()) elements *= std::max<int64_t>(dim, 0);
  size_t bytes = static_cast<size_t>(std::min<int64_t>(elements, 1 << 20)) *
                 ElementSize(tensor.dtype());
  if (mutation == 4) bytes += 1 + rng() % 7;
  if (mutation == 5 && bytes > 0) bytes -= 1 + rng() % bytes;
  std::string data(bytes, '\0');
  // Finite values: fp32 bytes 0x3f.. and half bytes 0x3c.. decode to small numbers.
  for (size_t i = 0; i < bytes; ++i) data[i] = (i % 2 == 1) ? 0x3c : static_cast<char>(rng());
  tensor.set_data(std::move(data));
  return tensor;
}

v1::NormConfig RandomConfig(std::mt19937_64& rng) {
  v1::NormConfig config;
  static constexpr int kKinds[] = {1, 2, 1, 2, 1, 2, 0, 3};  // mostly valid
  config.set_kind(static_cast<v1::NormKind>(kKinds[rng() % 8]));
  if (rng() % 2) config.set_eps(std::uniform_real_distribution<float>(-0.01f, 0.1f)(rng));
  if (rng() % 3 == 0) config.set_c(std::uniform_real_distribution<float>(-5, 5)(rng));
  if (rng() % 3 == 0) config.set_partial(std::uniform_real_distribution<double>(-0.05, 1.05)(rng));
  return config;
}

bool IsRejection(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ||
         status.code() == absl::StatusCode::kNotFound;
}

TEST(RequestFuzzTest, RandomForwardRequestsAreRejectedOrComputedNeverCrash) {
  std::mt19937_64 rng(20261123);
  ParamRegistry registry;
  auto backend = kernels::MakeCpuBackend({.threads = 2});
  int computed = 0;
  for (int i = 0; i < kIterations; ++i) {
    const int64_t rows = 1 + rng() % 4;
    const int64_t hidden = 1 + rng() % 300;
    const v1::DType dtype = static_cast<v1::DType>(1 + rng() % 3);
    v1::ForwardRequest request;
    *request.mutable_config() = RandomConfig(rng);
    *request.mutable_x() = RandomTensor(rng, rows, hidden, dtype, false);
    if (rng() % 2) *request.mutable_residual() = RandomTensor(rng, rows, hidden, dtype, false);
    if (rng() % 2) {
      *request.mutable_params()->mutable_weight() = RandomTensor(rng, rows, hidden, dtype, true);
    }
    if (rng() % 3 == 0) {
      *request.mutable_params()->mutable_bias() = RandomTensor(rng, rows, hidden, dtype, true);
    }
    if (rng() % 8 == 0) request.mutable_params()->set_handle("params-404");
    if (rng() % 3 == 0) request.set_residual_out_dtype(RandomDType(rng));
    request.set_return_stats(rng() % 2);

    v1::ForwardResponse response;
    auto item = BuildForwardItem(request, &response, registry);
    if (!item.ok()) {
      EXPECT_TRUE(IsRejection(item.status())) << item.status();
      EXPECT_FALSE(item.status().message().empty());
      continue;
    }
    // Accepted: every buffer holds exactly rows * hidden elements.
    const WorkItem& work = **item;
    const int64_t elements = work.forward.rows * work.key.hidden;
    ASSERT_EQ(static_cast<int64_t>(request.x().data().size()),
              elements * static_cast<int64_t>(kernels::DTypeSize(work.key.dtype)));
    ASSERT_EQ(response.output().data().size(), request.x().data().size());
    std::vector<std::unique_ptr<WorkItem>> items;
    items.push_back(std::move(*item));
    ASSERT_TRUE(backend->Forward(MakeForwardBatch(items.front()->key, items)).ok());
    ++computed;
  }
  // The generator must produce accepted requests too, or the test proves little.
  EXPECT_GT(computed, kIterations / 20);
}

TEST(RequestFuzzTest, RandomBackwardRequestsAreRejectedOrComputedNeverCrash) {
  std::mt19937_64 rng(7);
  ParamRegistry registry;
  auto backend = kernels::MakeCpuBackend({.threads = 2});
  int computed = 0;
  for (int i = 0; i < kIterations; ++i) {
    const int64_t rows = 1 + rng() % 4;
    const int64_t hidden = 1 + rng() % 300;
    const v1::DType dtype = static_cast<v1::DType>(1 + rng() % 3);
    v1::BackwardRequest request;
    *request.mutable_config() = RandomConfig(rng);
    *request.mutable_x() = RandomTensor(rng, rows, hidden, dtype, false);
    *request.mutable_grad_output() = RandomTensor(rng, rows, hidden, dtype, false);
    if (rng() % 2) *request.mutable_residual() = RandomTensor(rng, rows, hidden, dtype, false);
    if (rng() % 3 == 0) {
      *request.mutable_grad_residual_out() =
          RandomTensor(rng, rows, hidden, rng() % 2 ? dtype : v1::DTYPE_FP32, false);
    }
    if (rng() % 2) {
      *request.mutable_params()->mutable_weight() = RandomTensor(rng, rows, hidden, dtype, true);
    }
    if (rng() % 3 == 0) {
      *request.mutable_mean() = RandomTensor(rng, 1, rows, v1::DTYPE_FP32, true);
      if (rng() % 4) *request.mutable_rstd() = RandomTensor(rng, 1, rows, v1::DTYPE_FP32, true);
    }
    request.set_want_grad_weight(rng() % 2);
    request.set_want_grad_bias(rng() % 2);

    v1::BackwardResponse response;
    auto item = BuildBackwardItem(request, &response, registry);
    if (!item.ok()) {
      EXPECT_TRUE(IsRejection(item.status())) << item.status();
      continue;
    }
    ASSERT_EQ(response.grad_input().data().size(), request.x().data().size());
    std::vector<std::unique_ptr<WorkItem>> items;
    items.push_back(std::move(*item));
    ASSERT_TRUE(backend->Backward(MakeBackwardBatch(items.front()->key, items)).ok());
    ++computed;
  }
  EXPECT_GT(computed, kIterations / 20);
}

TEST(RequestFuzzTest, RandomBytesNeverCrashTheParserOrTheBuilder) {
  std::mt19937_64 rng(99);
  ParamRegistry registry;
  for (int i = 0; i < kIterations; ++i) {
    std::string bytes(rng() % 256, '\0');
    for (char& byte : bytes) byte = static_cast<char>(rng());
    v1::ForwardRequest request;
    if (!request.ParseFromString(bytes)) continue;
    v1::ForwardResponse response;
    auto item = BuildForwardItem(request, &response, registry);
    if (!item.ok()) {
      EXPECT_TRUE(IsRejection(item.status())) << item.status();
    }
  }
}

}  // namespace
}  // namespace normserve::server
