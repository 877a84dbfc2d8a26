// RowPool runs every task exactly once, for any thread count, also when
// several callers share the pool.
#include "row_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace normserve::kernels::cpu {
namespace {

TEST(RowPoolTest, EveryTaskRunsExactlyOnce) {
  for (int threads : {0, 1, 2, 5}) {
    RowPool pool(threads);
    for (int64_t tasks : {0, 1, 2, 1000}) {
      std::vector<std::atomic<int>> runs(tasks);
      pool.ParallelFor(tasks, [&](int64_t t) { runs[t].fetch_add(1); });
      for (int64_t t = 0; t < tasks; ++t) ASSERT_EQ(runs[t].load(), 1) << threads << " " << t;
    }
  }
}

TEST(RowPoolTest, ConcurrentCallersEachGetAllTheirTasks) {
  RowPool pool(3);
  constexpr int kCallers = 4;
  constexpr int64_t kTasks = 5000;
  std::vector<std::vector<std::atomic<int>>> runs(kCallers);
  for (auto& r : runs) r = std::vector<std::atomic<int>>(kTasks);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int rep = 0; rep < 20; ++rep) {
        pool.ParallelFor(kTasks / 20, [&](int64_t t) { runs[c][rep * (kTasks / 20) + t]++; });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) {
    for (int64_t t = 0; t < kTasks; ++t) ASSERT_EQ(runs[c][t].load(), 1);
  }
}

}  // namespace
}  // namespace normserve::kernels::cpu
