// Tensor helpers for the wire type normserve::v1::Tensor.
//
// Building: MakeTensor copies fp32 values into the message (protobuf owns its
// bytes as a std::string, so one copy is unavoidable) converting to fp16 / bf16
// on the way with round-to-nearest-even.
// Reading: View / Float32Span / Bits16Span look at a response's bytes in
// place, without a copy, for as long as the message lives; ToFloats copies and
// widens any dtype to fp32.
//
//   auto x = MakeTensor(values, {16, 4096}, v1::DTYPE_BF16);
//   ...
//   absl::StatusOr<std::vector<float>> o = ToFloats(response.output());
//
// Every function validates the tensor first: a known dtype, dims >= 1 and
// exactly product(shape) * sizeof(dtype) bytes; otherwise INVALID_ARGUMENT
// naming the mismatch. All functions are thread-safe on distinct or const
// messages.
#ifndef NORMSERVE_CLIENT_TENSOR_H_
#define NORMSERVE_CLIENT_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "normserve/v1/normserve.pb.h"

namespace normserve::client {

// 4 for fp32, 2 for fp16 / bf16; INVALID_ARGUMENT for DTYPE_UNSPECIFIED.
absl::StatusOr<size_t> DTypeSize(v1::DType dtype);
// "fp32", "fp16", "bf16" or "unspecified".
absl::string_view DTypeName(v1::DType dtype);
// Parses "fp32" | "fp16" | "bf16" (also "f32", "f16", "float32", "float16",
// "bfloat16"); INVALID_ARGUMENT otherwise.
absl::StatusOr<v1::DType> ParseDType(absl::string_view name);

// product(shape); INVALID_ARGUMENT when a dim is < 1 or the product overflows.
absl::StatusOr<int64_t> ShapeElements(std::span<const int64_t> shape);

// OK when the tensor is well formed (see the header comment).
absl::Status ValidateTensor(const v1::Tensor& tensor);

// A tensor of `dtype` and `shape` holding `values` (converted from fp32).
// INVALID_ARGUMENT when values.size() != product(shape).
absl::StatusOr<v1::Tensor> MakeTensor(std::span<const float> values, std::span<const int64_t> shape,
                                      v1::DType dtype = v1::DTYPE_FP32);
absl::StatusOr<v1::Tensor> MakeTensor(std::span<const float> values,
                                      std::initializer_list<int64_t> shape,
                                      v1::DType dtype = v1::DTYPE_FP32);

// A fp16 or bf16 tensor from raw 16-bit patterns (no conversion).
absl::StatusOr<v1::Tensor> MakeTensorFromBits(std::span<const uint16_t> bits,
                                              std::span<const int64_t> shape, v1::DType dtype);

// A view of a tensor's bytes; valid while the tensor is alive and unchanged.
struct TensorView {
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  std::span<const int64_t> shape;
  std::span<const std::byte> bytes;
  int64_t elements = 0;
  // [rows, hidden] of the 2-D flattening (rows = product of leading dims).
  int64_t hidden() const { return shape.empty() ? 0 : shape.back(); }
  int64_t rows() const { return hidden() == 0 ? 0 : elements / hidden(); }
};
absl::StatusOr<TensorView> View(const v1::Tensor& tensor);

// Zero-copy element views. Float32Span needs a fp32 tensor, Bits16Span a fp16
// or bf16 one (INVALID_ARGUMENT otherwise); FAILED_PRECONDITION in the unusual
// case that the message's bytes are not aligned for the element type.
absl::StatusOr<std::span<const float>> Float32Span(const v1::Tensor& tensor);
absl::StatusOr<std::span<const uint16_t>> Bits16Span(const v1::Tensor& tensor);

// Copies and widens any dtype to fp32.
absl::StatusOr<std::vector<float>> ToFloats(const v1::Tensor& tensor);

// Total payload bytes (data fields) of a tensor; 0 when absent.
inline size_t PayloadBytes(const v1::Tensor& tensor) { return tensor.data().size(); }

}  // namespace normserve::client

#endif  // NORMSERVE_CLIENT_TENSOR_H_
