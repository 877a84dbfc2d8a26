// Vector accesses to rows that start anywhere (RowLayout::realigned: 16-bit
// backward rows whose width no 16-byte vector divides, or buffers that are not
// 16-byte aligned). A thread still owns the elements [col, col + N) of its
// vectors, as in a row of aligned vectors, so which thread adds which element
// (and with it every bit of the result) does not depend on where the row
// starts; only the memory accesses do. A load takes the two 16-byte aligned
// words around the 16 bytes it wants and shifts them into place; where such a
// word would reach outside the row (its first and last bytes), the elements
// are read one by one, so nothing outside the row's tensor is touched.
#ifndef NORMSERVE_KERNELS_CUDA_REALIGNED_CUH_
#define NORMSERVE_KERNELS_CUDA_REALIGNED_CUH_

#include <cstdint>

#include "row_ops.cuh"

namespace normserve::kernels::cuda {

// A realigned row's length in whole vectors of vec: the dw / db rows a block
// accumulates, into which the last vector's elements past the row's end add
// zeros.
__host__ __device__ inline int64_t RealignedRowLength(int64_t hidden, int vec) {
  return (hidden + vec - 1) / vec * vec;
}

// Bytes [shift, shift + 16) of the 32 bytes lo:hi (shift a multiple of 2,
// below 16).
__device__ __forceinline__ uint4 ShiftedWord(const uint4& lo, const uint4& hi, int shift) {
  const uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  const int words = shift >> 2;
  const unsigned bits = 8u * (shift & 3);
  uint32_t s[5];
#pragma unroll
  for (int j = 0; j < 5; ++j) {  // s[j] = w[words + j], with constant indices
    s[j] = words == 0 ? w[j] : words == 1 ? w[j + 1] : words == 2 ? w[j + 2] : w[j + 3];
  }
  return uint4{__funnelshift_r(s[0], s[1], bits), __funnelshift_r(s[1], s[2], bits),
               __funnelshift_r(s[2], s[3], bits), __funnelshift_r(s[3], s[4], bits)};
}

// ShiftedWord of the 32 bytes from `at` (16-byte aligned, in shared memory):
// three 8-byte loads from the 8-byte word that holds byte `shift`, so only bit
// 2 of the shift is left to select by (5 selects where ShiftedWord's 4-way
// choice of words takes 15, 18 % of the realigned backward's stall samples in
// gpu-2026-11-28-round48.md, table 6). With the byte-permuted stores below:
// bf16 RMSNorm backward 8192 x 8191 218.6 -> 196.3 us, 4096 x 14501 194.8 ->
// 158.9 on an H200 (gpu-2026-11-28-round49.md, table 1). Five 4-byte loads
// and no selects were slower at 60 of 64 cells, up to 1.18x (table 2).
__device__ __forceinline__ uint4 ShiftedSharedWord(const void* at, int shift) {
  const uint2* pairs = static_cast<const uint2*>(at) + (shift >> 3);
  const uint2 p0 = pairs[0], p1 = pairs[1], p2 = pairs[2];
  const uint32_t w[6] = {p0.x, p0.y, p1.x, p1.y, p2.x, p2.y};
  const bool odd = (shift & 4) != 0;
  const unsigned bits = 8u * (shift & 3);
  uint32_t s[5];
#pragma unroll
  for (int j = 0; j < 5; ++j) s[j] = odd ? w[j + 1] : w[j];
  return uint4{__funnelshift_r(s[0], s[1], bits), __funnelshift_r(s[1], s[2], bits),
               __funnelshift_r(s[2], s[3], bits), __funnelshift_r(s[3], s[4], bits)};
}

// The 16 bytes of `row` (`len` elements of U) from element e, zeros at and
// past len.
template <typename U>
__device__ __forceinline__ uint4 LoadRealigned16(const U* row, int e, int len) {
  constexpr int kPer = 16 / sizeof(U);
  const char* bytes = reinterpret_cast<const char*>(row);
  const int first = e * static_cast<int>(sizeof(U));
  const int shift = static_cast<int>(reinterpret_cast<uintptr_t>(bytes + first) & 15);
  const int row_bytes = len * static_cast<int>(sizeof(U));
  const int start = first - shift;  // of the aligned words, relative to the row
  if (start >= 0 && start + (shift != 0 ? 32 : 16) <= row_bytes) {
    const uint4* words = reinterpret_cast<const uint4*>(bytes + start);
    const uint4 lo = words[0];
    if (shift == 0) return lo;
    return ShiftedWord(lo, words[1], shift);
  }
  U v[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    if (e + i < len) {
      v[i] = row[e + i];
    } else {
      __builtin_memset(&v[i], 0, sizeof(U));
    }
  }
  uint4 word;
  static_assert(sizeof(v) == sizeof(word));
  __builtin_memcpy(&word, v, sizeof(word));
  return word;
}

// The N values of U (one 16-byte word) of `row` (`len` elements) from column
// col, as stored; zeros at and past len.
template <typename U, int N>
__device__ __forceinline__ Vec<U, N> LoadRealignedVec(const U* row, int col, int len) {
  static_assert(sizeof(U) * N == 16, "one 16-byte word");
  const uint4 word = LoadRealigned16(row, col, len);
  Vec<U, N> v;
  __builtin_memcpy(&v, &word, sizeof(word));
  return v;
}

// The same as fp32, N * sizeof(U) any multiple of 16 bytes (an fp32 vector of
// 8 is two words).
template <typename U, int N>
__device__ __forceinline__ void LoadRealignedFloats(const U* row, int col, int len,
                                                    float (&dst)[N]) {
  constexpr int kPer = 16 / sizeof(U);
  static_assert(N % kPer == 0, "whole 16-byte words");
#pragma unroll
  for (int j = 0; j < N / kPer; ++j) {
    float part[kPer];
    UnpackRaw<U, kPer>(LoadRealigned16(row, col + j * kPer, len), part);
#pragma unroll
    for (int i = 0; i < kPer; ++i) dst[j * kPer + i] = part[i];
  }
}

// LoadFloatsEither for realigned rows: the row from element `first` of
// `base`, stored as T, or as fp32 when `as_f32`.
template <typename T, int N>
__device__ __forceinline__ void LoadRealignedEither(const void* base, int64_t first, int col,
                                                    int len, bool as_f32, float (&dst)[N]) {
  if (as_f32) {
    LoadRealignedFloats(static_cast<const float*>(base) + first, col, len, dst);
  } else {
    LoadRealignedFloats(static_cast<const T*>(base) + first, col, len, dst);
  }
}

// Stores the values of src below len - col into `row` from column col: one
// 16-byte store where the address allows, 4-byte stores for the 16-bit pairs
// of a 4-byte aligned or 2 mod 4 address, else one element at a time.
template <typename T, int N>
__device__ __forceinline__ void StoreRealignedFloats(T* row, int col, int len,
                                                     const float (&src)[N]) {
  Vec<T, N> raw;
#pragma unroll
  for (int i = 0; i < N; ++i) raw.v[i] = FromFloat<T>(src[i]);
  T* dst = row + col;
  const uintptr_t address = reinterpret_cast<uintptr_t>(dst);
  if (col + N <= len) {
    if (address % 16 == 0 && sizeof(T) * N == 16) {
      *reinterpret_cast<Vec<T, N>*>(dst) = raw;
      return;
    }
    if constexpr (sizeof(T) == 2) {
      uint32_t words[N / 2];
      if (address % 4 == 0) {
        __builtin_memcpy(words, raw.v, sizeof(words));
#pragma unroll
        for (int i = 0; i < N / 2; ++i) reinterpret_cast<uint32_t*>(dst)[i] = words[i];
        return;
      }
      // 2 mod 4: one element, the pairs between, one element. Each pair is
      // the high half of one packed word and the low half of the next (a
      // byte permute): copying the pairs out of raw.v + 1 instead went
      // through local memory (gpu-2026-11-28-round48.md, table 6).
      __builtin_memcpy(words, raw.v, sizeof(words));
      dst[0] = raw.v[0];
#pragma unroll
      for (int i = 0; i < N / 2 - 1; ++i) {
        reinterpret_cast<uint32_t*>(dst + 1)[i] = __byte_perm(words[i], words[i + 1], 0x5432);
      }
      dst[N - 1] = raw.v[N - 1];
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if (col + i < len) dst[i] = raw.v[i];
  }
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_REALIGNED_CUH_
