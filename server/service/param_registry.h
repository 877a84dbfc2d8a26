// Weights and biases uploaded once and referenced by handle in later
// requests. Thread-safe; entries live until deleted or the server stops.
#ifndef NORMSERVE_SERVER_SERVICE_PARAM_REGISTRY_H_
#define NORMSERVE_SERVER_SERVICE_PARAM_REGISTRY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "normserve/v1/normserve.pb.h"
#include "server/batching/param_set.h"

namespace normserve::server {

class ParamRegistry {
 public:
  // At most max_entries live entries; more gets RESOURCE_EXHAUSTED.
  explicit ParamRegistry(int max_entries = 4096) : max_entries_(max_entries) {}

  // INVALID_ARGUMENT when neither weight nor bias is given, or they are not
  // rank-1 tensors of one dtype and length (<= kMaxHidden).
  absl::StatusOr<v1::ParamsInfo> Register(const v1::RegisterParamsRequest& request)
      ABSL_LOCKS_EXCLUDED(mu_);
  // NOT_FOUND for an unknown handle. The returned set stays valid after a
  // Delete for as long as the caller holds it.
  absl::StatusOr<std::shared_ptr<const ParamSet>> Find(const std::string& handle) const
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<v1::ParamsInfo> List() const ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Delete(const std::string& handle) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    v1::ParamsInfo info;
    std::shared_ptr<const ParamSet> params;
  };

  const int max_entries_;
  mutable absl::Mutex mu_;
  // Handle -> entry.
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  // Source of unique handles.
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_SERVICE_PARAM_REGISTRY_H_
