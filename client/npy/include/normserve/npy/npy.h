// NumPy .npy files: the array format the CLI reads inputs from and writes
// results to.
//
// Supported: format versions 1.0, 2.0 and 3.0 headers; dtypes '<f4' (float32)
// and '<f2' (float16); C (row-major) order; any rank >= 0. Everything else
// (big-endian, other dtypes, Fortran order, truncated data) is rejected with
// INVALID_ARGUMENT naming what was found. Written files use version 1.0 (2.0
// when the header is too long for 1.0) with the header padded to 64 bytes,
// like numpy.save.
//
//   absl::StatusOr<NpyArray> x = ReadNpy("x.npy");
//   x->dtype == NpyDType::kF4; x->shape == {16, 4096}; x->data.size() == 16*4096*4
#ifndef NORMSERVE_NPY_NPY_H_
#define NORMSERVE_NPY_NPY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace normserve::npy {

enum class NpyDType { kF4, kF2 };  // '<f4' float32, '<f2' float16

// 4 or 2.
size_t NpyDTypeSize(NpyDType dtype);
// "<f4" or "<f2".
absl::string_view NpyDescr(NpyDType dtype);

struct NpyArray {
  NpyDType dtype = NpyDType::kF4;
  std::vector<int64_t> shape;  // empty = a scalar
  std::string data;            // product(shape) * size bytes, little-endian, C order
  int64_t elements() const;
};

// Parses the bytes of a whole .npy file.
absl::StatusOr<NpyArray> ParseNpy(absl::string_view bytes);
// The bytes of a .npy file holding `array`; INVALID_ARGUMENT when data's size
// does not match the shape.
absl::StatusOr<std::string> SerializeNpy(const NpyArray& array);

// File versions. NOT_FOUND when the file cannot be opened for reading,
// PERMISSION_DENIED / INTERNAL when writing fails; the path is in the message.
absl::StatusOr<NpyArray> ReadNpy(const std::string& path);
absl::Status WriteNpy(const std::string& path, const NpyArray& array);

// Convenience: a float32 array from values (copied).
NpyArray MakeF4(std::vector<int64_t> shape, const std::vector<float>& values);

}  // namespace normserve::npy

#endif  // NORMSERVE_NPY_NPY_H_
