#include <algorithm>
#include <memory>
#include <vector>

#include "normserve/kernels/norm_config.h"
#include "row_kernels.h"
#include "run_batch.h"
#include "task_size.h"

namespace normserve::kernels::cpu {
namespace {

// Chunks [first_chunk, last_chunk) of one segment.
struct ChunkRange {
  size_t segment;
  int64_t first_chunk;
  int64_t last_chunk;
};

// Columns [begin, end) of one segment's grad_weight / grad_bias.
struct ColumnRange {
  size_t segment;
  int64_t begin;
  int64_t end;
};

constexpr int64_t kReduceColumns = kMaxReduceColumns;

int64_t ChunkCount(int64_t rows) { return (rows + kGradChunkRows - 1) / kGradChunkRows; }

}  // namespace

void RunBackward(RowPool& pool, const BackwardBatch& batch) {
  const int64_t d = batch.hidden;
  BackwardRowParams params;
  params.hidden = d;
  params.stat_length = StatisticLength(batch.config, d);
  params.center = batch.config.center;
  params.eps = batch.config.eps;
  params.scale = OutputScale(batch.config, d);
  // scale * w in fp32, once per batch.
  std::vector<float> scaled_weight(d, 1.0f);
  if (batch.weight != nullptr) ConvertToFloat(batch.dtype, batch.weight, d, scaled_weight.data());
  for (float& w : scaled_weight) w *= params.scale;
  params.scaled_weight = scaled_weight.data();
  params.stream_grad_in =
      TotalRows(batch) * d * static_cast<int64_t>(DTypeSize(batch.dtype)) >= kStreamMinBytes;
  const BackwardRowsFn rows_fn = BackwardRowsFor(batch.dtype, batch.residual_dtype);

  // Partial sums: one fp32 [hidden] row per chunk of each segment that asks
  // for grad_weight (grad_bias); chunk_base[s] is segment s's first chunk.
  const size_t segments = batch.segments.size();
  std::vector<int64_t> chunk_base(segments + 1, 0);
  for (size_t s = 0; s < segments; ++s) {
    chunk_base[s + 1] = chunk_base[s] + ChunkCount(batch.segments[s].rows);
  }
  bool any_dw = false;
  bool any_db = false;
  for (const BackwardSegment& segment : batch.segments) {
    any_dw |= segment.grad_weight != nullptr;
    any_db |= segment.grad_bias != nullptr;
  }
  // Uninitialized on purpose: each chunk overwrites its own partial row.
  const auto partial_size = static_cast<size_t>(chunk_base[segments] * d);
  std::unique_ptr<float[]> dw_partials(any_dw ? new float[partial_size] : nullptr);
  std::unique_ptr<float[]> db_partials(any_db ? new float[partial_size] : nullptr);

  const bool parallel = TotalRows(batch) * d >= kParallelMinElements && pool.threads() > 1;
  const int64_t chunks_per_task =
      parallel ? std::max<int64_t>(1, RowsPerTask(d) / kGradChunkRows) : INT64_MAX;
  std::vector<ChunkRange> tasks;
  for (size_t s = 0; s < segments; ++s) {
    const int64_t chunks = ChunkCount(batch.segments[s].rows);
    for (int64_t first = 0; first < chunks;) {
      const int64_t last = first + std::min(chunks_per_task, chunks - first);
      tasks.push_back({s, first, last});
      first = last;
    }
  }
  auto run_chunks = [&](int64_t t) {
    const ChunkRange& task = tasks[t];
    const BackwardSegment& segment = batch.segments[task.segment];
    for (int64_t c = task.first_chunk; c < task.last_chunk; ++c) {
      const int64_t offset = (chunk_base[task.segment] + c) * d;
      float* dw = segment.grad_weight != nullptr ? dw_partials.get() + offset : nullptr;
      float* db = segment.grad_bias != nullptr ? db_partials.get() + offset : nullptr;
      rows_fn(params, segment, c * kGradChunkRows, std::min(segment.rows, (c + 1) * kGradChunkRows),
              dw, db);
    }
  };
  if (parallel) {
    pool.ParallelFor(static_cast<int64_t>(tasks.size()), run_chunks);
  } else {
    for (size_t t = 0; t < tasks.size(); ++t) run_chunks(static_cast<int64_t>(t));
  }

  if (!any_dw && !any_db) return;
  std::vector<ColumnRange> columns;
  for (size_t s = 0; s < segments; ++s) {
    for (int64_t begin = 0; begin < d; begin += kReduceColumns) {
      columns.push_back({s, begin, std::min(d, begin + kReduceColumns)});
    }
  }
  auto reduce = [&](int64_t t) {
    const ColumnRange& range = columns[t];
    const BackwardSegment& segment = batch.segments[range.segment];
    const int64_t chunks = ChunkCount(segment.rows);
    const int64_t offset = chunk_base[range.segment] * d;
    if (segment.grad_weight != nullptr) {
      ReduceChunkPartials(dw_partials.get() + offset, chunks, d, range.begin, range.end,
                          params.scale, segment.grad_weight);
    }
    if (segment.grad_bias != nullptr) {
      ReduceChunkPartials(db_partials.get() + offset, chunks, d, range.begin, range.end, 1.0,
                          segment.grad_bias);
    }
  };
  // A small reduction costs less than waking the workers a second time.
  const bool parallel_reduce = parallel && chunk_base[segments] * d >= kParallelMinReduceElements;
  if (parallel_reduce) {
    pool.ParallelFor(static_cast<int64_t>(columns.size()), reduce);
  } else {
    for (size_t t = 0; t < columns.size(); ++t) reduce(static_cast<int64_t>(t));
  }
}

}  // namespace normserve::kernels::cpu
