// Wire tensors for integration tests, built from and read back into the
// reference's host tensors (whose fp16 / bf16 coding is independent of the
// server's).
#ifndef NORMSERVE_TESTS_SERVER_WIRE_TENSORS_H_
#define NORMSERVE_TESTS_SERVER_WIRE_TENSORS_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "host_tensor.h"
#include "normserve/v1/normserve.pb.h"

namespace normserve::testing {

inline v1::DType ToWire(kernels::DType dtype) {
  switch (dtype) {
    case kernels::DType::kF32:
      return v1::DTYPE_FP32;
    case kernels::DType::kF16:
      return v1::DTYPE_FP16;
    case kernels::DType::kBF16:
      return v1::DTYPE_BF16;
  }
  return v1::DTYPE_UNSPECIFIED;
}

inline v1::Tensor ToTensor(const reference::HostTensor& host, std::vector<int64_t> shape) {
  v1::Tensor tensor;
  tensor.set_dtype(ToWire(host.dtype()));
  for (int64_t dim : shape) tensor.add_shape(dim);
  tensor.set_data(host.data(), host.bytes());
  return tensor;
}

// The tensor's elements as doubles; empty when the byte count is not a whole
// number of elements of its dtype.
inline std::vector<double> Values(const v1::Tensor& tensor) {
  kernels::DType dtype = kernels::DType::kF32;
  if (tensor.dtype() == v1::DTYPE_FP16) dtype = kernels::DType::kF16;
  if (tensor.dtype() == v1::DTYPE_BF16) dtype = kernels::DType::kBF16;
  const size_t size = kernels::DTypeSize(dtype);
  if (tensor.data().size() % size != 0) return {};
  std::vector<double> values(tensor.data().size() / size);
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, tensor.data().data() + i * size, size);
    values[i] = reference::DecodeElement(dtype, bits);
  }
  return values;
}

}  // namespace normserve::testing

#endif  // NORMSERVE_TESTS_SERVER_WIRE_TENSORS_H_
