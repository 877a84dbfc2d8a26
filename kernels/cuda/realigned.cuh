// Vector accesses to rows that start anywhere (RowLayout::realigned: backward
// rows whose width no 16-byte vector divides, or buffers that are not 16-byte
// aligned). A thread still owns the elements [col, col + N) of its
// vectors, as in a row of aligned vectors, so which thread adds which element
// (and with it every bit of the result) does not depend on where the row
// starts; only the memory accesses do. A load of 16-bit elements takes the
// two 16-byte aligned words around the 16 bytes it wants and shifts them into
// place; where such a word would reach outside the row (its first and last
// bytes), the elements are read one by one, so nothing outside the row's
// tensor is touched. One of 4-byte elements takes aligned pieces of the 16
// bytes themselves (LoadRealignedWords).
#ifndef NORMSERVE_KERNELS_CUDA_REALIGNED_CUH_
#define NORMSERVE_KERNELS_CUDA_REALIGNED_CUH_

#include <cstdint>
#include <type_traits>

#include "row_ops.cuh"

namespace normserve::kernels::cuda {

// A realigned row's length in whole vectors of vec: the dw / db rows a block
// accumulates, into which the last vector's elements past the row's end add
// zeros.
__host__ __device__ inline int64_t RealignedRowLength(int64_t hidden, int vec) {
  return (hidden + vec - 1) / vec * vec;
}

// The 16 bytes from byte `bits` / 8 (below 4) of the 20 bytes s[0..4].
__device__ __forceinline__ uint4 FunnelShiftWords(const uint32_t (&s)[5], unsigned bits) {
  return uint4{__funnelshift_r(s[0], s[1], bits), __funnelshift_r(s[1], s[2], bits),
               __funnelshift_r(s[2], s[3], bits), __funnelshift_r(s[3], s[4], bits)};
}

// Bytes [shift, shift + 16) of the 32 bytes lo:hi (shift a multiple of 2,
// below 16).
__device__ __forceinline__ uint4 ShiftedWord(const uint4& lo, const uint4& hi, int shift) {
  const uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  const int words = shift >> 2;
  uint32_t s[5];
#pragma unroll
  for (int j = 0; j < 5; ++j) {  // s[j] = w[words + j], with constant indices
    s[j] = words == 0 ? w[j] : words == 1 ? w[j + 1] : words == 2 ? w[j + 2] : w[j + 3];
  }
  return FunnelShiftWords(s, 8u * (shift & 3));
}

// ShiftedWord of the 32 bytes from `at` (16-byte aligned, in shared memory):
// three 8-byte loads from the 8-byte word that holds byte `shift`, so only bit
// 2 of the shift is left to select by (5 selects where ShiftedWord's 4-way
// choice of words takes 15, 18 % of the realigned backward's stall samples in
// gpu-2026-11-28-round48.md, table 6). With the byte-permuted stores below:
// bf16 RMSNorm backward 8192 x 8191 218.6 -> 196.3 us, 4096 x 14501 194.8 ->
// 158.9 on an H200 (gpu-2026-11-28-round49.md, table 1). Five 4-byte loads
// and no selects were slower at 60 of 64 cells, up to 1.18x (table 2).
// kElemBytes: the row's element size; rows of 4-byte elements start on a
// 4-byte boundary, so no funnel shift is left.
template <int kElemBytes>
__device__ __forceinline__ uint4 ShiftedSharedWord(const void* at, int shift) {
  const uint2* pairs = static_cast<const uint2*>(at) + (shift >> 3);
  const uint2 p0 = pairs[0], p1 = pairs[1], p2 = pairs[2];
  const uint32_t w[6] = {p0.x, p0.y, p1.x, p1.y, p2.x, p2.y};
  const bool odd = (shift & 4) != 0;
  uint32_t s[5];
#pragma unroll
  for (int j = 0; j < 5; ++j) s[j] = odd ? w[j + 1] : w[j];
  if constexpr (kElemBytes == 4) {
    return uint4{s[0], s[1], s[2], s[3]};
  } else {
    return FunnelShiftWords(s, 8u * (shift & 3));
  }
}

// LoadRealigned16 of 4-byte elements: the 16 bytes in the fewest aligned
// loads the address allows (16, 2 x 8 or 4 x 4 bytes), each straight into its
// word of the result, so no arithmetic waits for them where they are issued
// (the residual gradient's are issued before the row's reductions, for use
// after them). Against shifting two 16-byte words, whose shift waited for
// them where they were issued, on the H200 (bench/results/gpu-2026-11-29-
// round50.md, table 3, new against nold), fp32 add + RMSNorm backward 8192 x
// 8190 441.4 -> 286.1 us, 16384 x 4097 625.4 -> 351.5; with y (rows of 8190
// on the register kernel, whose stages do not fit) 533.9 -> 386.4.
__device__ __forceinline__ uint4 LoadRealignedWords(const uint32_t* at, int n) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(at);
  if (n >= 4) {
    if (address % 16 == 0) return *reinterpret_cast<const uint4*>(at);
    if (address % 8 == 0) {
      const uint2 lo = reinterpret_cast<const uint2*>(at)[0];
      const uint2 hi = reinterpret_cast<const uint2*>(at)[1];
      return uint4{lo.x, lo.y, hi.x, hi.y};
    }
    return uint4{at[0], at[1], at[2], at[3]};
  }
  return uint4{n > 0 ? at[0] : 0u, n > 1 ? at[1] : 0u, n > 2 ? at[2] : 0u, 0u};
}

// The 16 bytes of `row` (`len` elements of U) from element e, zeros at and
// past len.
template <typename U>
__device__ __forceinline__ uint4 LoadRealigned16(const U* row, int e, int len) {
  constexpr int kPer = 16 / sizeof(U);
  if constexpr (sizeof(U) == 4) {
    return LoadRealignedWords(reinterpret_cast<const uint32_t*>(row + e), len - e);
  }
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
// 16-byte store where the address allows; else 16-bit pairs as 4-byte stores
// (a 4-byte aligned or 2 mod 4 address), fp32 pairs as 8-byte stores (an
// 8-byte aligned or 4 mod 8 address); the row's last, partial vector one
// element at a time.
template <typename T, int N>
__device__ __forceinline__ void StoreRealignedFloats(T* row, int col, int len,
                                                     const float (&src)[N]) {
  static_assert(sizeof(T) * N == 16, "one 16-byte vector");
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
    // Pairs of elements packed in words of two (sizeof(T) bytes each half).
    using Pair = std::conditional_t<sizeof(T) == 2, uint32_t, uint2>;
    Pair pairs[N / 2];
    __builtin_memcpy(pairs, raw.v, sizeof(pairs));
    if (address % (2 * sizeof(T)) == 0) {
#pragma unroll
      for (int i = 0; i < N / 2; ++i) reinterpret_cast<Pair*>(dst)[i] = pairs[i];
      return;
    }
    // One element, the pairs between, one element. Each pair is the high half
    // of one packed word and the low half of the next (for 16-bit ones a byte
    // permute: copying the pairs out of raw.v + 1 instead went through local
    // memory, gpu-2026-11-28-round48.md, table 6).
    dst[0] = raw.v[0];
#pragma unroll
    for (int i = 0; i < N / 2 - 1; ++i) {
      if constexpr (sizeof(T) == 2) {
        reinterpret_cast<uint32_t*>(dst + 1)[i] = __byte_perm(pairs[i], pairs[i + 1], 0x5432);
      } else {
        reinterpret_cast<uint2*>(dst + 1)[i] = uint2{pairs[i].y, pairs[i + 1].x};
      }
    }
    dst[N - 1] = raw.v[N - 1];
    return;
  }
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if (col + i < len) dst[i] = raw.v[i];
  }
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_REALIGNED_CUH_
