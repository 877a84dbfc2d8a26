// Checks wire tensors and turns them into kernel-side views, and allocates
// response tensors. Every check here runs before any allocation sized by the
// request; messages name the field, its shape and its dtype.
#ifndef NORMSERVE_SERVER_SERVICE_TENSOR_CODEC_H_
#define NORMSERVE_SERVER_SERVICE_TENSOR_CODEC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "normserve/kernels/dtype.h"
#include "normserve/v1/normserve.pb.h"

namespace normserve::server {

// Largest hidden size the kernels accept.
inline constexpr int64_t kMaxHidden = 65536;

// An activation viewed as [rows, hidden]: all leading dimensions flattened.
struct MatrixView {
  kernels::DType dtype = kernels::DType::kF32;
  int64_t rows = 0;
  int64_t hidden = 0;
  const void* data = nullptr;
};

absl::StatusOr<kernels::DType> FromProtoDType(v1::DType dtype, absl::string_view field);
v1::DType ToProtoDType(kernels::DType dtype);

// "[2, 4096] bf16": how a tensor is described in error messages.
std::string DescribeTensor(const v1::Tensor& tensor);

// True when the tensor is the proto default (no dtype, shape or data): the
// way an optional tensor is left out.
bool IsAbsent(const v1::Tensor& tensor);

// A rank >= 1 activation: dtype set, every dim >= 1, last dim (hidden) in
// [1, kMaxHidden], data length = product(shape) * dtype size.
absl::StatusOr<MatrixView> ViewMatrix(const v1::Tensor& tensor, absl::string_view field);

// A tensor that must have exactly `like`'s shape, and dtype `dtype`.
absl::StatusOr<MatrixView> ViewMatrixLike(const v1::Tensor& tensor, absl::string_view field,
                                          const v1::Tensor& like, kernels::DType dtype);

// An optional tensor: nullptr when absent, else (after ViewMatrixLike's
// checks) its data.
absl::StatusOr<const void*> OptionalDataLike(const v1::Tensor& tensor, absl::string_view field,
                                             const v1::Tensor& like, kernels::DType dtype);

// A rank-1 tensor of `length` elements of `dtype`.
absl::Status CheckVector(const v1::Tensor& tensor, absl::string_view field, int64_t length,
                         kernels::DType dtype);

// Sets out to dtype with the given shape and returns its (uninitialised
// contents) data buffer.
void* AllocateTensor(v1::Tensor* out, kernels::DType dtype,
                     const google::protobuf::RepeatedField<int64_t>& shape);
void* AllocateVector(v1::Tensor* out, kernels::DType dtype, int64_t length);

}  // namespace normserve::server

#endif  // NORMSERVE_SERVER_SERVICE_TENSOR_CODEC_H_
