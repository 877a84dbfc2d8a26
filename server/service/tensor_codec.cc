#include "tensor_codec.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace normserve::server {

absl::StatusOr<kernels::DType> FromProtoDType(v1::DType dtype, absl::string_view field) {
  switch (dtype) {
    case v1::DTYPE_FP32:
      return kernels::DType::kF32;
    case v1::DTYPE_FP16:
      return kernels::DType::kF16;
    case v1::DTYPE_BF16:
      return kernels::DType::kBF16;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".dtype must be DTYPE_FP32, DTYPE_FP16 or DTYPE_BF16, got ",
                       v1::DType_IsValid(dtype) ? v1::DType_Name(dtype)
                                                : absl::StrCat(static_cast<int>(dtype))));
  }
}

v1::DType ToProtoDType(kernels::DType dtype) {
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

std::string DescribeTensor(const v1::Tensor& tensor) {
  absl::string_view dtype = "unspecified";
  if (auto parsed = FromProtoDType(tensor.dtype(), ""); parsed.ok()) {
    dtype = kernels::DTypeName(*parsed);
  }
  return absl::StrCat("[", absl::StrJoin(tensor.shape(), ", "), "] ", dtype);
}

bool IsAbsent(const v1::Tensor& tensor) {
  return tensor.dtype() == v1::DTYPE_UNSPECIFIED && tensor.shape_size() == 0 &&
         tensor.data().empty();
}

namespace {

// product(shape), or an error when a dim is < 1 or the product overflows.
absl::StatusOr<int64_t> Elements(const v1::Tensor& tensor, absl::string_view field) {
  int64_t elements = 1;
  for (int i = 0; i < tensor.shape_size(); ++i) {
    const int64_t dim = tensor.shape(i);
    if (dim < 1) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".shape[", i, "] must be >= 1, got ",
                                                     dim, " (shape ", DescribeTensor(tensor), ")"));
    }
    if (elements > std::numeric_limits<int64_t>::max() / 8 / dim) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " shape ", DescribeTensor(tensor), " is too large"));
    }
    elements *= dim;
  }
  return elements;
}

absl::Status CheckDataLength(const v1::Tensor& tensor, absl::string_view field, int64_t elements,
                             kernels::DType dtype) {
  const int64_t expected = elements * static_cast<int64_t>(kernels::DTypeSize(dtype));
  if (static_cast<int64_t>(tensor.data().size()) != expected) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".data has ", tensor.data().size(),
                                                   " bytes; shape ", DescribeTensor(tensor),
                                                   " needs ", expected));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MatrixView> ViewMatrix(const v1::Tensor& tensor, absl::string_view field) {
  if (IsAbsent(tensor)) return absl::InvalidArgumentError(absl::StrCat(field, " is required"));
  auto dtype = FromProtoDType(tensor.dtype(), field);
  if (!dtype.ok()) return dtype.status();
  if (tensor.shape_size() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".shape must have rank >= 1 (the last dim is hidden), got []"));
  }
  auto elements = Elements(tensor, field);
  if (!elements.ok()) return elements.status();
  const int64_t hidden = tensor.shape(tensor.shape_size() - 1);
  if (hidden > kMaxHidden) {
    return absl::InvalidArgumentError(absl::StrCat(field, " hidden size ", hidden, " (shape ",
                                                   DescribeTensor(tensor), ") exceeds ",
                                                   kMaxHidden));
  }
  if (auto status = CheckDataLength(tensor, field, *elements, *dtype); !status.ok()) return status;
  return MatrixView{*dtype, *elements / hidden, hidden, tensor.data().data()};
}

absl::StatusOr<MatrixView> ViewMatrixLike(const v1::Tensor& tensor, absl::string_view field,
                                          const v1::Tensor& like, kernels::DType dtype) {
  auto view = ViewMatrix(tensor, field);
  if (!view.ok()) return view.status();
  if (view->dtype != dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has dtype ", kernels::DTypeName(view->dtype), " (",
                     DescribeTensor(tensor), "), expected ", kernels::DTypeName(dtype)));
  }
  if (tensor.shape_size() != like.shape_size() ||
      !std::equal(tensor.shape().begin(), tensor.shape().end(), like.shape().begin())) {
    return absl::InvalidArgumentError(absl::StrCat(field, " has shape ", DescribeTensor(tensor),
                                                   ", expected the shape of x ",
                                                   DescribeTensor(like)));
  }
  return view;
}

absl::StatusOr<const void*> OptionalDataLike(const v1::Tensor& tensor, absl::string_view field,
                                             const v1::Tensor& like, kernels::DType dtype) {
  if (IsAbsent(tensor)) return nullptr;
  auto view = ViewMatrixLike(tensor, field, like, dtype);
  if (!view.ok()) return view.status();
  return view->data;
}

absl::Status CheckVector(const v1::Tensor& tensor, absl::string_view field, int64_t length,
                         kernels::DType dtype) {
  auto parsed = FromProtoDType(tensor.dtype(), field);
  if (!parsed.ok()) return parsed.status();
  if (tensor.shape_size() != 1 || tensor.shape(0) != length) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has shape ", DescribeTensor(tensor), ", expected [", length, "]"));
  }
  if (*parsed != dtype) {
    return absl::InvalidArgumentError(absl::StrCat(field, " has dtype ",
                                                   kernels::DTypeName(*parsed), ", expected ",
                                                   kernels::DTypeName(dtype)));
  }
  return CheckDataLength(tensor, field, length, dtype);
}

void* AllocateTensor(v1::Tensor* out, kernels::DType dtype,
                     const google::protobuf::RepeatedField<int64_t>& shape) {
  out->set_dtype(ToProtoDType(dtype));
  *out->mutable_shape() = shape;
  int64_t elements = 1;
  for (int64_t dim : shape) elements *= dim;
  // The kernels write the results straight into the response's buffer, so the
  // only copy after compute is gRPC's serialisation. (std::string::resize
  // zero-fills; libstdc++ offers no uninitialised resize.)
  out->mutable_data()->resize(static_cast<size_t>(elements) * kernels::DTypeSize(dtype));
  return out->mutable_data()->data();
}

void* AllocateVector(v1::Tensor* out, kernels::DType dtype, int64_t length) {
  google::protobuf::RepeatedField<int64_t> shape;
  shape.Add(length);
  return AllocateTensor(out, dtype, shape);
}

}  // namespace normserve::server
