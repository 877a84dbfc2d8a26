// Between .npy arrays and wire tensors, and the one-line summary the CLI prints.
//
// NumPy has no bfloat16, so bf16 travels through files as float32: a '<f4'
// array becomes a bf16 tensor when bf16 is asked for, and a bf16 result is
// written as '<f4' (exactly: bf16 widens to fp32 without loss).
#ifndef NORMSERVE_CLI_TENSOR_NPY_H_
#define NORMSERVE_CLI_TENSOR_NPY_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "normserve/npy/npy.h"
#include "normserve/v1/normserve.pb.h"

namespace normserve::cli {

// The wire dtype a file maps to by default: '<f4' -> fp32, '<f2' -> fp16.
v1::DType DefaultDType(const npy::NpyArray& array);

// `array` as a tensor of `dtype` (converting with round-to-nearest-even when
// narrowing). INVALID_ARGUMENT for a rank-0 array or a zero dimension.
absl::StatusOr<v1::Tensor> TensorFromNpy(const npy::NpyArray& array, v1::DType dtype);

// Reads `path` and converts as TensorFromNpy; errors name the path.
absl::StatusOr<v1::Tensor> ReadTensor(const std::string& path, v1::DType dtype);

// fp32 -> '<f4', fp16 -> '<f2', bf16 -> '<f4' (widened).
absl::StatusOr<npy::NpyArray> NpyFromTensor(const v1::Tensor& tensor);
absl::Status WriteTensor(const std::string& path, const v1::Tensor& tensor);

// "name: shape [16, 4096] bf16  min -3.1 max 3.2 mean 0.0012"
std::string Summarize(absl::string_view name, const v1::Tensor& tensor);

}  // namespace normserve::cli

#endif  // NORMSERVE_CLI_TENSOR_NPY_H_
