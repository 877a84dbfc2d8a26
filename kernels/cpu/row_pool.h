// A persistent pool of worker threads that runs numbered tasks in parallel.
//
// The CPU backend cuts a batch into tasks (ranges of rows) and hands them to
// ParallelFor; the calling thread works on its own job too, so a pool of N
// threads starts N - 1 workers.
//
//   RowPool pool(/*threads=*/4);
//   pool.ParallelFor(tasks, [&](int64_t task) { RunRows(task); });
//
// Which thread runs which task is unspecified: callers must make each task's
// result independent of that (the backend does: a row's math never depends on
// its thread, and reductions go through per-task partials).
#ifndef NORMSERVE_KERNELS_CPU_ROW_POOL_H_
#define NORMSERVE_KERNELS_CPU_ROW_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace normserve::kernels::cpu {

class RowPool {
 public:
  // threads: how many threads work on a job, the caller included; values
  // below 1 count as 1. Starts threads - 1 workers, which live until the pool
  // is destroyed.
  explicit RowPool(int threads);
  // Stops and joins the workers. No ParallelFor may be running.
  ~RowPool();

  RowPool(const RowPool&) = delete;
  RowPool& operator=(const RowPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(task) once for every task in [0, tasks) and returns when all
  // calls have returned. Thread-safe: concurrent calls share the workers, and
  // each caller always makes progress on its own job. fn must not call
  // ParallelFor on the same pool.
  void ParallelFor(int64_t tasks, absl::FunctionRef<void(int64_t)> fn);

 private:
  struct Job;

  void WorkerLoop();
  // Claims and runs the job's tasks until none are left unclaimed.
  static void RunTasks(Job& job);

  std::mutex mu_;
  // Signalled when a job is queued or the pool stops.
  std::condition_variable work_cv_;
  // Signalled when a worker detaches from a job.
  std::condition_variable detach_cv_;
  // Jobs with tasks possibly left to claim, oldest first. Guarded by mu_.
  std::deque<Job*> queue_;
  // Set once by the destructor. Guarded by mu_.
  bool stop_ = false;
  // Started in the constructor, joined in the destructor after stop_ is set.
  std::vector<std::thread> workers_;
};

}  // namespace normserve::kernels::cpu

#endif  // NORMSERVE_KERNELS_CPU_ROW_POOL_H_
