#include "kernel_batch.h"

namespace normserve::server {

kernels::ForwardBatch MakeForwardBatch(const BatchKey& key,
                                       const std::vector<std::unique_ptr<WorkItem>>& items) {
  kernels::ForwardBatch batch;
  batch.config = key.config;
  batch.dtype = key.dtype;
  batch.residual_dtype = key.residual_dtype;
  batch.hidden = key.hidden;
  batch.weight = key.params ? key.params->weight_data() : nullptr;
  batch.bias = key.params ? key.params->bias_data() : nullptr;
  batch.segments.reserve(items.size());
  for (const auto& item : items) batch.segments.push_back(item->forward);
  return batch;
}

kernels::BackwardBatch MakeBackwardBatch(const BatchKey& key,
                                         const std::vector<std::unique_ptr<WorkItem>>& items) {
  kernels::BackwardBatch batch;
  batch.config = key.config;
  batch.dtype = key.dtype;
  batch.residual_dtype = key.residual_dtype;
  batch.hidden = key.hidden;
  batch.weight = key.params ? key.params->weight_data() : nullptr;
  batch.segments.reserve(items.size());
  for (const auto& item : items) batch.segments.push_back(item->backward);
  return batch;
}

}  // namespace normserve::server
