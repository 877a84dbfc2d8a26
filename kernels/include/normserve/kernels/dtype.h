// Storage element types of normserve tensors.
//
// Every tensor that flows from the wire to a kernel is stored as fp32, fp16 or
// bf16 (little-endian, row-major). Accumulation and row statistics are always
// fp32, whatever the storage type.
#ifndef NORMSERVE_KERNELS_DTYPE_H_
#define NORMSERVE_KERNELS_DTYPE_H_

#include <cstddef>
#include <cstdint>

namespace normserve::kernels {

enum class DType : uint8_t { kF32, kF16, kBF16 };

// Bytes per element: 4 for kF32, 2 for kF16 and kBF16.
constexpr size_t DTypeSize(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

// "fp32", "fp16" or "bf16": the names used in error messages and flags.
constexpr const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "fp32";
    case DType::kF16:
      return "fp16";
    case DType::kBF16:
      return "bf16";
  }
  return "unknown";
}

}  // namespace normserve::kernels

#endif  // NORMSERVE_KERNELS_DTYPE_H_
