#include "row_pool.h"

#include <algorithm>
#include <atomic>

namespace normserve::kernels::cpu {

struct RowPool::Job {
  Job(int64_t tasks, absl::FunctionRef<void(int64_t)> fn) : tasks(tasks), fn(fn) {}

  const int64_t tasks;
  const absl::FunctionRef<void(int64_t)> fn;
  // Next unclaimed task; claims are fetch_add, so each task runs once.
  std::atomic<int64_t> next{0};
  // Workers currently running this job's tasks. Guarded by RowPool::mu_.
  int attached = 0;
};

RowPool::RowPool(int threads) {
  const int workers = std::max(threads, 1) - 1;
  workers_.reserve(workers);
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

RowPool::~RowPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void RowPool::RunTasks(Job& job) {
  for (int64_t task = job.next.fetch_add(1, std::memory_order_relaxed); task < job.tasks;
       task = job.next.fetch_add(1, std::memory_order_relaxed)) {
    job.fn(task);
  }
}

void RowPool::ParallelFor(int64_t tasks, absl::FunctionRef<void(int64_t)> fn) {
  if (tasks <= 0) return;
  Job job(tasks, fn);
  if (workers_.empty() || tasks == 1) {
    RunTasks(job);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(&job);
  }
  work_cv_.notify_all();
  RunTasks(job);
  // Every task is claimed. Unqueue the job so no worker attaches anew, then
  // wait for the attached ones to finish the tasks they claimed; after that
  // no thread refers to job, which lives on this stack frame.
  std::unique_lock<std::mutex> lock(mu_);
  if (auto it = std::find(queue_.begin(), queue_.end(), &job); it != queue_.end()) {
    queue_.erase(it);
  }
  detach_cv_.wait(lock, [&job] { return job.attached == 0; });
}

void RowPool::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ is set and nothing is left
    Job* job = queue_.front();
    ++job->attached;
    lock.unlock();
    RunTasks(*job);
    lock.lock();
    // RunTasks returned: the job has no unclaimed task left.
    if (!queue_.empty() && queue_.front() == job) queue_.pop_front();
    if (--job->attached == 0) detach_cv_.notify_all();
  }
}

}  // namespace normserve::kernels::cpu
