#include "param_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "tensor_codec.h"

namespace normserve::server {

absl::StatusOr<v1::ParamsInfo> ParamRegistry::Register(const v1::RegisterParamsRequest& request) {
  const bool has_weight = !IsAbsent(request.weight());
  const bool has_bias = !IsAbsent(request.bias());
  if (!has_weight && !has_bias) {
    return absl::InvalidArgumentError("RegisterParams needs weight, bias or both");
  }
  const v1::Tensor& first = has_weight ? request.weight() : request.bias();
  const absl::string_view first_field = has_weight ? "weight" : "bias";
  auto dtype = FromProtoDType(first.dtype(), first_field);
  if (!dtype.ok()) return dtype.status();
  if (first.shape_size() != 1 || first.shape(0) < 1 || first.shape(0) > kMaxHidden) {
    return absl::InvalidArgumentError(
        absl::StrCat(first_field, " has shape ", DescribeTensor(first),
                     ", expected [hidden] with 1 <= hidden <= ", kMaxHidden));
  }
  const int64_t hidden = first.shape(0);
  if (has_weight) {
    if (auto status = CheckVector(request.weight(), "weight", hidden, *dtype); !status.ok()) {
      return status;
    }
  }
  if (has_bias) {
    if (auto status = CheckVector(request.bias(), "bias", hidden, *dtype); !status.ok()) {
      return status;
    }
  }

  absl::MutexLock lock(&mu_);
  if (static_cast<int>(entries_.size()) >= max_entries_) {
    return absl::ResourceExhaustedError(absl::StrCat("params registry holds ", entries_.size(),
                                                     " entries (limit ", max_entries_,
                                                     "); delete some first"));
  }
  Entry entry;
  entry.info.set_handle(absl::StrCat("params-", next_id_++));
  entry.info.set_name(request.name());
  entry.info.set_dtype(first.dtype());
  entry.info.set_hidden(hidden);
  entry.info.set_has_weight(has_weight);
  entry.info.set_has_bias(has_bias);
  // Copied once at registration; every later request shares this copy.
  entry.params = MakeParamSet(*dtype, hidden, request.weight().data(), request.bias().data());
  v1::ParamsInfo info = entry.info;
  entries_.emplace(info.handle(), std::move(entry));
  return info;
}

absl::StatusOr<std::shared_ptr<const ParamSet>> ParamRegistry::Find(
    const std::string& handle) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(handle);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat("params.handle \"", handle, "\" is not registered"));
  }
  return it->second.params;
}

std::vector<v1::ParamsInfo> ParamRegistry::List() const {
  std::vector<v1::ParamsInfo> infos;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [handle, entry] : entries_) infos.push_back(entry.info);
  }
  std::sort(infos.begin(), infos.end(),
            [](const auto& a, const auto& b) { return a.handle() < b.handle(); });
  return infos;
}

absl::Status ParamRegistry::Delete(const std::string& handle) {
  absl::MutexLock lock(&mu_);
  if (entries_.erase(handle) == 0) {
    return absl::NotFoundError(absl::StrCat("handle \"", handle, "\" is not registered"));
  }
  return absl::OkStatus();
}

}  // namespace normserve::server
