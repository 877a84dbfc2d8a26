#include "host_tensor.h"

#include <algorithm>
#include <array>
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

// The same rounding as EncodeSmallFloat, by integer arithmetic on the
// double's bits, for values that land on a normal value of the format (almost
// every random input): the 52-bit significand is cut to `mantissa_bits` with
// ties to even, a carry out of the significand stepping the exponent (into the
// all-ones exponent of Inf past the largest finite value, as rounding
// requires). Other values (zero, subnormal results, overflow, NaN) return
// false and take the frexp path.
bool EncodeNormalSmallFloat(SmallFloatFormat format, double v, uint32_t* bits) {
  const uint64_t d = std::bit_cast<uint64_t>(v);
  const int bias = (1 << (format.exponent_bits - 1)) - 1;
  const int exponent = static_cast<int>((d >> 52) & 0x7FF) - 1023;
  if (exponent < 1 - bias || exponent > bias) return false;
  const int dropped = 52 - format.mantissa_bits;
  const uint64_t significand = d & ((uint64_t{1} << 52) - 1);
  const uint64_t kept = significand >> dropped;
  const uint64_t rest = significand & ((uint64_t{1} << dropped) - 1);
  const uint64_t half = uint64_t{1} << (dropped - 1);
  const uint64_t round_up = rest > half || (rest == half && (kept & 1));
  const uint32_t sign = (d >> 63) ? 1u << (format.exponent_bits + format.mantissa_bits) : 0;
  *bits = sign |
          static_cast<uint32_t>((static_cast<uint64_t>(exponent + bias) << format.mantissa_bits) +
                                kept + round_up);
  return true;
}

// Every value of a 16-bit format, decoded once: Values() of large tensors.
const std::vector<double>& DecodedHalves(DType dtype) {
  static const auto decoded = [] {
    std::array<std::vector<double>, 2> tables;
    for (int f = 0; f < 2; ++f) {
      const SmallFloatFormat format = FormatOf(f == 0 ? DType::kF16 : DType::kBF16);
      tables[f].resize(1 << 16);
      for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
        tables[f][bits] = DecodeSmallFloat(format, bits);
      }
    }
    return tables;
  }();
  return decoded[dtype == DType::kF16 ? 0 : 1];
}

}  // namespace

uint32_t EncodeElement(DType dtype, double v) {
  if (dtype == DType::kF32) return std::bit_cast<uint32_t>(static_cast<float>(v));
  uint32_t bits;
  if (EncodeNormalSmallFloat(FormatOf(dtype), v, &bits)) return bits;
  return EncodeSmallFloat(FormatOf(dtype), v);
}

double DecodeElement(DType dtype, uint32_t bits) {
  if (dtype == DType::kF32) return static_cast<double>(std::bit_cast<float>(bits));
  return DecodedHalves(dtype)[bits & 0xFFFF];
}

HostTensor HostTensor::Zeros(DType dtype, int64_t n) {
  HostTensor t;
  t.dtype_ = dtype;
  t.size_ = n;
  t.bytes_.resize(t.bytes());
  return t;
}

void HostTensor::SetBits(int64_t i, uint32_t bits) {
  uint8_t* element = bytes_.data() + offset_bytes_ + i * kernels::DTypeSize(dtype_);
  if (dtype_ == DType::kF32) {
    std::memcpy(element, &bits, 4);
  } else {
    const auto half = static_cast<uint16_t>(bits);
    std::memcpy(element, &half, 2);
  }
}

HostTensor HostTensor::FromValues(DType dtype, const std::vector<double>& values) {
  HostTensor t = Zeros(dtype, static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) t.SetBits(i, EncodeElement(dtype, values[i]));
  return t;
}

HostTensor HostTensor::Random(DType dtype, int64_t n, std::mt19937_64& rng, double mean,
                              double stddev) {
  std::normal_distribution<double> normal(mean, stddev);
  HostTensor t = Zeros(dtype, n);
  bool all_zero = true;
  while (all_zero && n > 0) {
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t bits = EncodeElement(dtype, normal(rng));
      t.SetBits(i, bits);
      all_zero &= DecodeElement(dtype, bits) == 0.0;
    }
  }
  return t;
}

HostTensor HostTensor::Poisoned(DType dtype, int64_t n) {
  HostTensor t = Zeros(dtype, n);
  const uint32_t nan = EncodeElement(dtype, std::nan(""));
  for (int64_t i = 0; i < n; ++i) t.SetBits(i, nan);
  return t;
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
