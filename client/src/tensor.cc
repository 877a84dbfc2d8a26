#include "normserve/client/tensor.h"

#include <cstring>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "normserve/client/half.h"

namespace normserve::client {
namespace {

std::string ShapeString(std::span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

absl::StatusOr<size_t> DTypeSize(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_FP32:
      return 4;
    case v1::DTYPE_FP16:
    case v1::DTYPE_BF16:
      return 2;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("tensor dtype ", static_cast<int>(dtype), " is not fp32, fp16 or bf16"));
  }
}

absl::string_view DTypeName(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_FP32:
      return "fp32";
    case v1::DTYPE_FP16:
      return "fp16";
    case v1::DTYPE_BF16:
      return "bf16";
    default:
      return "unspecified";
  }
}

absl::StatusOr<v1::DType> ParseDType(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "fp32" || lower == "f32" || lower == "float32") return v1::DTYPE_FP32;
  if (lower == "fp16" || lower == "f16" || lower == "float16") return v1::DTYPE_FP16;
  if (lower == "bf16" || lower == "bfloat16") return v1::DTYPE_BF16;
  return absl::InvalidArgumentError(
      absl::StrCat("dtype '", name, "' is not one of fp32, fp16, bf16"));
}

absl::StatusOr<int64_t> ShapeElements(std::span<const int64_t> shape) {
  int64_t elements = 1;
  for (int64_t dim : shape) {
    if (dim < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeString(shape), " has a dimension < 1"));
    }
    if (elements > std::numeric_limits<int64_t>::max() / dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeString(shape), " has too many elements"));
    }
    elements *= dim;
  }
  return elements;
}

absl::StatusOr<TensorView> View(const v1::Tensor& tensor) {
  absl::StatusOr<size_t> size = DTypeSize(tensor.dtype());
  if (!size.ok()) return size.status();
  const std::span<const int64_t> shape(tensor.shape().data(), tensor.shape_size());
  if (shape.empty()) {
    return absl::InvalidArgumentError("tensor shape is empty (rank 0)");
  }
  absl::StatusOr<int64_t> elements = ShapeElements(shape);
  if (!elements.ok()) return elements.status();
  const size_t expected = static_cast<size_t>(*elements) * *size;
  if (tensor.data().size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor of shape ", ShapeString(shape), " and dtype ", DTypeName(tensor.dtype()), " needs ",
        expected, " bytes but holds ", tensor.data().size()));
  }
  TensorView view;
  view.dtype = tensor.dtype();
  view.shape = shape;
  view.bytes = std::as_bytes(std::span<const char>(tensor.data().data(), tensor.data().size()));
  view.elements = *elements;
  return view;
}

absl::Status ValidateTensor(const v1::Tensor& tensor) { return View(tensor).status(); }

absl::StatusOr<v1::Tensor> MakeTensor(std::span<const float> values, std::span<const int64_t> shape,
                                      v1::DType dtype) {
  absl::StatusOr<size_t> size = DTypeSize(dtype);
  if (!size.ok()) return size.status();
  absl::StatusOr<int64_t> elements = ShapeElements(shape);
  if (!elements.ok()) return elements.status();
  if (shape.empty() || static_cast<size_t>(*elements) != values.size()) {
    return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeString(shape), " needs ",
                                                   *elements, " values, got ", values.size()));
  }
  v1::Tensor tensor;
  tensor.set_dtype(dtype);
  for (int64_t dim : shape) tensor.add_shape(dim);
  std::string* data = tensor.mutable_data();
  data->resize(values.size() * *size);
  if (dtype == v1::DTYPE_FP32) {
    std::memcpy(data->data(), values.data(), data->size());
  } else {
    const bool half = dtype == v1::DTYPE_FP16;
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t bits = half ? FloatToHalfBits(values[i]) : FloatToBf16Bits(values[i]);
      std::memcpy(data->data() + 2 * i, &bits, 2);
    }
  }
  return tensor;
}

absl::StatusOr<v1::Tensor> MakeTensor(std::span<const float> values,
                                      std::initializer_list<int64_t> shape, v1::DType dtype) {
  return MakeTensor(values, std::span<const int64_t>(shape.begin(), shape.size()), dtype);
}

absl::StatusOr<v1::Tensor> MakeTensorFromBits(std::span<const uint16_t> bits,
                                              std::span<const int64_t> shape, v1::DType dtype) {
  if (dtype != v1::DTYPE_FP16 && dtype != v1::DTYPE_BF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("MakeTensorFromBits needs fp16 or bf16, got ", DTypeName(dtype)));
  }
  absl::StatusOr<int64_t> elements = ShapeElements(shape);
  if (!elements.ok()) return elements.status();
  if (shape.empty() || static_cast<size_t>(*elements) != bits.size()) {
    return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeString(shape), " needs ",
                                                   *elements, " values, got ", bits.size()));
  }
  v1::Tensor tensor;
  tensor.set_dtype(dtype);
  for (int64_t dim : shape) tensor.add_shape(dim);
  tensor.set_data(reinterpret_cast<const char*>(bits.data()), bits.size() * 2);
  return tensor;
}

absl::StatusOr<std::span<const float>> Float32Span(const v1::Tensor& tensor) {
  absl::StatusOr<TensorView> view = View(tensor);
  if (!view.ok()) return view.status();
  if (view->dtype != v1::DTYPE_FP32) {
    return absl::InvalidArgumentError(
        absl::StrCat("Float32Span needs a fp32 tensor, got ", DTypeName(view->dtype)));
  }
  if (reinterpret_cast<uintptr_t>(view->bytes.data()) % alignof(float) != 0) {
    return absl::FailedPreconditionError("tensor bytes are not 4-byte aligned; use ToFloats");
  }
  return std::span<const float>(reinterpret_cast<const float*>(view->bytes.data()),
                                static_cast<size_t>(view->elements));
}

absl::StatusOr<std::span<const uint16_t>> Bits16Span(const v1::Tensor& tensor) {
  absl::StatusOr<TensorView> view = View(tensor);
  if (!view.ok()) return view.status();
  if (view->dtype != v1::DTYPE_FP16 && view->dtype != v1::DTYPE_BF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("Bits16Span needs a fp16 or bf16 tensor, got ", DTypeName(view->dtype)));
  }
  if (reinterpret_cast<uintptr_t>(view->bytes.data()) % alignof(uint16_t) != 0) {
    return absl::FailedPreconditionError("tensor bytes are not 2-byte aligned; use ToFloats");
  }
  return std::span<const uint16_t>(reinterpret_cast<const uint16_t*>(view->bytes.data()),
                                   static_cast<size_t>(view->elements));
}

absl::StatusOr<std::vector<float>> ToFloats(const v1::Tensor& tensor) {
  absl::StatusOr<TensorView> view = View(tensor);
  if (!view.ok()) return view.status();
  std::vector<float> out(static_cast<size_t>(view->elements));
  const std::byte* bytes = view->bytes.data();
  if (view->dtype == v1::DTYPE_FP32) {
    std::memcpy(out.data(), bytes, view->bytes.size());
    return out;
  }
  const bool half = view->dtype == v1::DTYPE_FP16;
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, bytes + 2 * i, 2);
    out[i] = half ? HalfBitsToFloat(bits) : Bf16BitsToFloat(bits);
  }
  return out;
}

}  // namespace normserve::client
