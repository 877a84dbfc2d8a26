#include <algorithm>
#include <vector>

#include "normserve/kernels/norm_config.h"
#include "row_kernels.h"
#include "run_batch.h"
#include "task_size.h"

namespace normserve::kernels::cpu {
namespace {

struct RowRange {
  size_t segment;
  int64_t begin;
  int64_t end;
};

}  // namespace

void RunForward(RowPool& pool, const ForwardBatch& batch) {
  const int64_t d = batch.hidden;
  // Weights in fp32: the batch's own arrays when they are fp32, otherwise
  // converted once per batch (d elements).
  std::vector<float> converted_weight, converted_bias;
  auto as_float = [&](const void* values, std::vector<float>& converted) -> const float* {
    if (values == nullptr) return nullptr;
    if (batch.dtype == DType::kF32) return static_cast<const float*>(values);
    converted.resize(d);
    ConvertToFloat(batch.dtype, values, d, converted.data());
    return converted.data();
  };
  ForwardRowParams params;
  params.hidden = d;
  params.stat_length = StatisticLength(batch.config, d);
  params.center = batch.config.center;
  params.eps = batch.config.eps;
  params.scale = OutputScale(batch.config, d);
  params.weight = as_float(batch.weight, converted_weight);
  params.bias = as_float(batch.bias, converted_bias);
  const ForwardRowsFn rows_fn = ForwardRowsFor(batch.dtype, batch.residual_dtype);

  const bool parallel = TotalRows(batch) * d >= kParallelMinElements && pool.threads() > 1;
  const int64_t rows_per_task = parallel ? RowsPerTask(d) : INT64_MAX;
  std::vector<RowRange> tasks;
  for (size_t s = 0; s < batch.segments.size(); ++s) {
    const int64_t rows = batch.segments[s].rows;
    for (int64_t begin = 0; begin < rows; begin += std::min(rows_per_task, rows - begin)) {
      tasks.push_back({s, begin, begin + std::min(rows_per_task, rows - begin)});
    }
  }
  auto run = [&](int64_t t) {
    const RowRange& task = tasks[t];
    rows_fn(params, batch.segments[task.segment], task.begin, task.end);
  };
  if (parallel) {
    pool.ParallelFor(static_cast<int64_t>(tasks.size()), run);
  } else {
    for (size_t t = 0; t < tasks.size(); ++t) run(static_cast<int64_t>(t));
  }
}

}  // namespace normserve::kernels::cpu
