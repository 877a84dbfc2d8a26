// Host tensors for kernel tests: bytes in a DType plus the exact values they
// hold as doubles, random inputs, poisoned outputs.
//
//   std::mt19937_64 rng(7);
//   HostTensor x = HostTensor::Random(DType::kBF16, rows * hidden, rng);
//   HostTensor out = HostTensor::Poisoned(DType::kBF16, rows * hidden);
//   ... run a kernel writing out.data() ...
//   std::vector<double> values = out.Values();
//
// fp16 / bf16 encoding and decoding here is written independently of the
// library's half.h (frexp / ldexp on doubles, and for results of the normal
// range the same rounding on the double's bits, which is faster), so tests of
// half.h and of the kernels do not check the library against itself.
#ifndef NORMSERVE_TESTS_REFERENCE_HOST_TENSOR_H_
#define NORMSERVE_TESTS_REFERENCE_HOST_TENSOR_H_

#include <cstdint>
#include <random>
#include <vector>

#include "normserve/kernels/dtype.h"

namespace normserve::reference {

using kernels::DType;

class HostTensor {
 public:
  HostTensor() = default;

  // n elements drawn from N(mean, stddev^2), rounded to dtype (nearest even).
  // Fresh values on every call; never all zeros.
  static HostTensor Random(DType dtype, int64_t n, std::mt19937_64& rng, double mean = 0.0,
                           double stddev = 1.0);
  // n elements of dtype holding the given values rounded to dtype.
  static HostTensor FromValues(DType dtype, const std::vector<double>& values);
  // n elements that are all NaN: an output a kernel fails to write stays NaN.
  static HostTensor Poisoned(DType dtype, int64_t n);

  DType dtype() const { return dtype_; }
  int64_t size() const { return size_; }
  // The storage, with `offset_elements` leading elements of padding before
  // element 0 (see Offset).
  void* data() { return bytes_.data() + offset_bytes_; }
  const void* data() const { return bytes_.data() + offset_bytes_; }
  size_t bytes() const { return static_cast<size_t>(size_) * kernels::DTypeSize(dtype_); }

  // The same elements moved `elements` elements past the allocation's start,
  // so data() is misaligned for any vector width when elements is odd.
  HostTensor Offset(int64_t elements) const;

  // Element values as doubles (exact).
  std::vector<double> Values() const;

 private:
  // n elements of all-zero bits.
  static HostTensor Zeros(DType dtype, int64_t n);
  // Stores element i's bit pattern (16 bits for fp16 / bf16).
  void SetBits(int64_t i, uint32_t bits);

  DType dtype_ = DType::kF32;
  int64_t size_ = 0;
  size_t offset_bytes_ = 0;
  std::vector<uint8_t> bytes_;
};

// Rounds v to the nearest value of dtype (ties to even; beyond the finite
// range: +-Inf) and returns its bit pattern: 32 bits for kF32, 16 otherwise.
uint32_t EncodeElement(DType dtype, double v);
// The value of a bit pattern of dtype (exact; NaN for NaN patterns).
double DecodeElement(DType dtype, uint32_t bits);

}  // namespace normserve::reference

#endif  // NORMSERVE_TESTS_REFERENCE_HOST_TENSOR_H_
