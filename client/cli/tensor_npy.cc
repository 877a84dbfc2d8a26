#include "normserve/cli/tensor_npy.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "normserve/client/half.h"
#include "normserve/client/tensor.h"

namespace normserve::cli {
namespace {

std::vector<float> WidenNpy(const npy::NpyArray& array) {
  std::vector<float> values(static_cast<size_t>(array.elements()));
  if (array.dtype == npy::NpyDType::kF4) {
    std::memcpy(values.data(), array.data.data(), array.data.size());
  } else {
    for (size_t i = 0; i < values.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, array.data.data() + 2 * i, 2);
      values[i] = client::HalfBitsToFloat(bits);
    }
  }
  return values;
}

}  // namespace

v1::DType DefaultDType(const npy::NpyArray& array) {
  return array.dtype == npy::NpyDType::kF4 ? v1::DTYPE_FP32 : v1::DTYPE_FP16;
}

absl::StatusOr<v1::Tensor> TensorFromNpy(const npy::NpyArray& array, v1::DType dtype) {
  if (array.shape.empty()) {
    return absl::InvalidArgumentError("a scalar (rank-0) array is not a tensor; use rank >= 1");
  }
  // Same storage: move the bytes across without converting.
  if ((array.dtype == npy::NpyDType::kF4 && dtype == v1::DTYPE_FP32) ||
      (array.dtype == npy::NpyDType::kF2 && dtype == v1::DTYPE_FP16)) {
    v1::Tensor tensor;
    tensor.set_dtype(dtype);
    for (int64_t d : array.shape) tensor.add_shape(d);
    tensor.set_data(array.data);
    absl::Status valid = client::ValidateTensor(tensor);
    if (!valid.ok()) return valid;
    return tensor;
  }
  const std::vector<float> values = WidenNpy(array);
  return client::MakeTensor(values, array.shape, dtype);
}

absl::StatusOr<v1::Tensor> ReadTensor(const std::string& path, v1::DType dtype) {
  absl::StatusOr<npy::NpyArray> array = npy::ReadNpy(path);
  if (!array.ok()) return array.status();
  absl::StatusOr<v1::Tensor> tensor = TensorFromNpy(*array, dtype);
  if (!tensor.ok()) {
    return absl::Status(tensor.status().code(),
                        absl::StrCat(path, ": ", tensor.status().message()));
  }
  return tensor;
}

absl::StatusOr<npy::NpyArray> NpyFromTensor(const v1::Tensor& tensor) {
  absl::Status valid = client::ValidateTensor(tensor);
  if (!valid.ok()) return valid;
  npy::NpyArray array;
  array.shape.assign(tensor.shape().begin(), tensor.shape().end());
  if (tensor.dtype() == v1::DTYPE_FP16) {
    array.dtype = npy::NpyDType::kF2;
    array.data = tensor.data();
    return array;
  }
  array.dtype = npy::NpyDType::kF4;
  if (tensor.dtype() == v1::DTYPE_FP32) {
    array.data = tensor.data();
    return array;
  }
  absl::StatusOr<std::vector<float>> values = client::ToFloats(tensor);
  if (!values.ok()) return values.status();
  array.data.resize(values->size() * 4);
  std::memcpy(array.data.data(), values->data(), array.data.size());
  return array;
}

absl::Status WriteTensor(const std::string& path, const v1::Tensor& tensor) {
  absl::StatusOr<npy::NpyArray> array = NpyFromTensor(tensor);
  if (!array.ok()) return array.status();
  return npy::WriteNpy(path, *array);
}

std::string Summarize(absl::string_view name, const v1::Tensor& tensor) {
  absl::StatusOr<std::vector<float>> values = client::ToFloats(tensor);
  if (!values.ok()) return absl::StrCat(name, ": ", values.status().ToString());
  float lo = std::numeric_limits<float>::infinity();
  float hi = -lo;
  double sum = 0;
  for (float v : *values) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  const double mean = values->empty() ? 0.0 : sum / static_cast<double>(values->size());
  return absl::StrFormat("%s: shape [%s] %s  min %.6g max %.6g mean %.6g", name,
                         absl::StrJoin(tensor.shape(), ", "), client::DTypeName(tensor.dtype()), lo,
                         hi, mean);
}

}  // namespace normserve::cli
