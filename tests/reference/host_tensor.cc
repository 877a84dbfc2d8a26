#include "host_tensor.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace normserve::reference {
namespace {

struct SmallFloatFormat {
  int exponent_bits;
  int mantissa_bits;
};

SmallFloatFormat FormatOf(DType dtype) {
  return dtype == DType::kF16 ? SmallFloatFormat{5, 10} : SmallFloatFormat{8, 7};
}

// IEEE-style encoding with the given field widths, by frexp / ldexp.
uint32_t EncodeSmallFloat(SmallFloatFormat format, double v) {
  const int bias = (1 << (format.exponent_bits - 1)) - 1;
  const int min_exponent = 1 - bias;
  const int max_exponent = bias;
  const uint32_t exponent_all_ones = (1u << format.exponent_bits) - 1;
  const uint32_t sign = std::signbit(v) ? 1u << (format.exponent_bits + format.mantissa_bits) : 0;
  if (std::isnan(v)) {
    return sign | (exponent_all_ones << format.mantissa_bits) | (1u << (format.mantissa_bits - 1));
  }
  const uint32_t inf = exponent_all_ones << format.mantissa_bits;
  const double a = std::fabs(v);
  if (a == 0.0) return sign;
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exponent = std::max(e - 1, min_exponent);
  const double quantum = std::ldexp(1.0, exponent - format.mantissa_bits);
  const double rounded = std::nearbyint(a / quantum) * quantum;  // ties to even
  if (rounded >= std::ldexp(1.0, max_exponent + 1)) return sign | inf;
  if (rounded == 0.0) return sign;
  std::frexp(rounded, &e);
  exponent = e - 1;
  if (exponent < min_exponent) {  // subnormal
    const double mantissa = rounded / std::ldexp(1.0, min_exponent - format.mantissa_bits);
    return sign | static_cast<uint32_t>(mantissa);
  }
  const double fraction =
      (rounded / std::ldexp(1.0, exponent) - 1.0) * std::ldexp(1.0, format.mantissa_bits);
  return sign | (static_cast<uint32_t>(exponent + bias) << format.mantissa_bits) |
         static_cast<uint32_t>(fraction);
}

double DecodeSmallFloat(SmallFloatFormat format, uint32_t bits) {
  const int bias = (1 << (format.exponent_bits - 1)) - 1;
  const uint32_t mantissa_mask = (1u << format.mantissa_bits) - 1;
  const uint32_t exponent_all_ones = (1u << format.exponent_bits) - 1;
  const bool negative = (bits >> (format.exponent_bits + format.mantissa_bits)) & 1u;
  const uint32_t exponent = (bits >> format.mantissa_bits) & exponent_all_ones;
  const uint32_t mantissa = bits & mantissa_mask;
  double value;
  if (exponent == exponent_all_ones) {
    value = mantissa != 0 ? std::nan("") : INFINITY;
  } else if (exponent == 0) {
    value = std::ldexp(static_cast<double>(mantissa), 1 - bias - format.mantissa_bits);
  } else {
    value = std::ldexp(1.0 + std::ldexp(static_cast<double>(mantissa), -format.mantissa_bits),
                       static_cast<int>(exponent) - bias);
  }
  return negative ? -value : value;
}

}  // namespace

uint32_t EncodeElement(DType dtype, double v) {
  if (dtype == DType::kF32) return std::bit_cast<uint32_t>(static_cast<float>(v));
  return EncodeSmallFloat(FormatOf(dtype), v);
}

double DecodeElement(DType dtype, uint32_t bits) {
  if (dtype == DType::kF32) return static_cast<double>(std::bit_cast<float>(bits));
  return DecodeSmallFloat(FormatOf(dtype), bits);
}

HostTensor HostTensor::FromValues(DType dtype, const std::vector<double>& values) {
  HostTensor t;
  t.dtype_ = dtype;
  t.size_ = static_cast<int64_t>(values.size());
  t.bytes_.resize(t.bytes());
  for (size_t i = 0; i < values.size(); ++i) {
    const uint32_t bits = EncodeElement(dtype, values[i]);
    if (dtype == DType::kF32) {
      std::memcpy(t.bytes_.data() + 4 * i, &bits, 4);
    } else {
      const auto half = static_cast<uint16_t>(bits);
      std::memcpy(t.bytes_.data() + 2 * i, &half, 2);
    }
  }
  return t;
}

HostTensor HostTensor::Random(DType dtype, int64_t n, std::mt19937_64& rng, double mean,
                              double stddev) {
  std::normal_distribution<double> normal(mean, stddev);
  std::vector<double> values(n);
  bool all_zero = true;
  while (all_zero && n > 0) {
    for (double& v : values) {
      v = normal(rng);
      all_zero &= DecodeElement(dtype, EncodeElement(dtype, v)) == 0.0;
    }
  }
  return FromValues(dtype, values);
}

HostTensor HostTensor::Poisoned(DType dtype, int64_t n) {
  return FromValues(dtype, std::vector<double>(n, std::nan("")));
}

HostTensor HostTensor::Offset(int64_t elements) const {
  HostTensor t;
  t.dtype_ = dtype_;
  t.size_ = size_;
  t.offset_bytes_ = static_cast<size_t>(elements) * kernels::DTypeSize(dtype_);
  t.bytes_.resize(t.offset_bytes_ + bytes());
  std::memcpy(t.bytes_.data() + t.offset_bytes_, data(), bytes());
  return t;
}

std::vector<double> HostTensor::Values() const {
  std::vector<double> values(size_);
  const auto* base = static_cast<const uint8_t*>(data());
  for (int64_t i = 0; i < size_; ++i) {
    if (dtype_ == DType::kF32) {
      uint32_t bits;
      std::memcpy(&bits, base + 4 * i, 4);
      values[i] = DecodeElement(dtype_, bits);
    } else {
      uint16_t bits;
      std::memcpy(&bits, base + 2 * i, 2);
      values[i] = DecodeElement(dtype_, bits);
    }
  }
  return values;
}

}  // namespace normserve::reference
