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
// bytes themselves (LoadRealignedWords). A load issued long before its use
// keeps its pieces until then (PendingRealigned16).
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

// LoadRealigned16 in two steps, for a load issued long before its use (the
// fused backward's residual gradient, issued before the row's reductions):
// Issue only loads, each piece straight into its register; Word (at the use)
// puts the bytes in place. A shift where the loads are issued waits for them
// there: against it, on the H200 (bench/results/gpu-2026-11-29-round51.md,
// table 2), add + RMSNorm backward bf16 8192 x 8191 301.5 -> 203.4 us (the
// pair of 16-byte words below), 4096 x 16385 380.0 -> 285.7 (five 4-byte
// words), fp16 8192 x 8191 327.3 -> 215.7.
// PendingRealigned16<U, kFewRegisters> picks one of the three below.

// 4-byte elements need no shift (LoadRealignedWords).
struct PendingRealignedWords {
  uint4 v;
  __device__ __forceinline__ void Zero() { v = uint4{}; }
  __device__ __forceinline__ void Issue(const float* row, int e, int len) {
    v = LoadRealignedWords(reinterpret_cast<const uint32_t*>(row + e), len - e);
  }
  __device__ __forceinline__ uint4 Word() const { return v; }
};

// 16-bit elements in the two aligned 16-byte words around them (eight
// registers), or at the row's ends (where a word would reach outside the row)
// each element in its own register.
struct PendingRealignedPair {
  uint32_t w[8];
  int shift;  // the 16 bytes' byte shift in w, or -1 for an element a register

  __device__ __forceinline__ void Zero() {
#pragma unroll
    for (uint32_t& word : w) word = 0;
    shift = 0;
  }

  template <typename U>
  __device__ __forceinline__ void Issue(const U* row, int e, int len) {
    const char* bytes = reinterpret_cast<const char*>(row);
    const int first = e * 2;
    shift = static_cast<int>(reinterpret_cast<uintptr_t>(bytes + first) & 15);
    const int start = first - shift;
    if (start >= 0 && start + (shift != 0 ? 32 : 16) <= len * 2) {
      const uint4* words = reinterpret_cast<const uint4*>(bytes + start);
      const uint4 lo = words[0], hi = shift != 0 ? words[1] : uint4{};
      w[0] = lo.x, w[1] = lo.y, w[2] = lo.z, w[3] = lo.w;
      w[4] = hi.x, w[5] = hi.y, w[6] = hi.z, w[7] = hi.w;
      return;
    }
    shift = -1;
    const uint16_t* halves = reinterpret_cast<const uint16_t*>(row + e);
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = e + i < len ? halves[i] : 0u;
  }

  __device__ __forceinline__ uint4 Word() const {
    if (shift < 0) {  // element i in the low half of w[i]
      return uint4{__byte_perm(w[0], w[1], 0x5410), __byte_perm(w[2], w[3], 0x5410),
                   __byte_perm(w[4], w[5], 0x5410), __byte_perm(w[6], w[7], 0x5410)};
    }
    return ShiftedWord(uint4{w[0], w[1], w[2], w[3]}, uint4{w[4], w[5], w[6], w[7]}, shift);
  }
};

// 16-bit elements in the five aligned 4-byte words that hold them (five
// registers, the fifth unused when they start on a word); of a word that
// straddles the row's start or end, only its half in the row.
struct PendingRealignedFive {
  uint32_t w[5];
  bool half;  // the 16 bytes start 2 bytes into w[0]
  bool head;  // only w[0]'s upper half lies in the row, loaded into its low half

  __device__ __forceinline__ void Zero() {
#pragma unroll
    for (uint32_t& word : w) word = 0;
    half = head = false;
  }

  template <typename U>
  __device__ __forceinline__ void Issue(const U* row, int e, int len) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(row + e);
    const uint32_t* words = reinterpret_cast<const uint32_t*>(address & ~uintptr_t{3});
    half = (address & 2) != 0;
    // words[0]'s byte offset in the row (-2 for the first vector of a row that
    // starts 2 bytes into a word).
    const int from = e * 2 - (half ? 2 : 0);
    const int row_bytes = len * 2;
    head = from < 0;
    if (from >= 0 && from + 20 <= row_bytes) {
#pragma unroll
      for (int j = 0; j < 5; ++j) w[j] = words[j];
      return;
    }
    const char* bytes = reinterpret_cast<const char*>(row);
#pragma unroll
    for (int j = 0; j < 5; ++j) {
      const int b = from + 4 * j;
      if (b >= 0 && b + 4 <= row_bytes) {
        w[j] = words[j];
      } else if (b == -2 || b == row_bytes - 2) {  // one half in the row
        w[j] = *reinterpret_cast<const uint16_t*>(bytes + (b < 0 ? 0 : b));
      } else {
        w[j] = 0;
      }
    }
  }

  __device__ __forceinline__ uint4 Word() const {
    const uint32_t s[5] = {head ? w[0] << 16 : w[0], w[1], w[2], w[3], w[4]};
    return FunnelShiftWords(s, half ? 16u : 0u);
  }
};

// kFewRegisters: a thread keeps four vectors in flight (ITERS 4), or two
// blocks share an SM at 96 registers (the paired kernel), where the pair's
// registers spilled and the five words measured faster (table 1: 4096 x
// 16385 338.3 against 286.1 us, 2048 x 20001 202.0 against 168.9, paired
// 16384 x 4097 224.8 against 221.5). Otherwise the pair: faster at 5 of 10
// cells (8192 x 8191 203.5 against 248.9, 8192 x 6001 176.4 against 199.3),
// within 1 % at 4, slower at fp16 8192 x 8191 with y (278.5 against 263.2).
template <typename U, bool kFewRegisters>
using PendingRealigned16 = std::conditional_t<
    sizeof(U) == 4, PendingRealignedWords,
    std::conditional_t<kFewRegisters, PendingRealignedFive, PendingRealignedPair>>;

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
    // 16-bit vectors on an 8-byte boundary (every other row of half vectors,
    // hidden 4 mod 8): two 8-byte stores rather than four 4-byte ones.
    // Measured on the H200 (bench/results/gpu-2026-12-01-round68.md, table
    // 5), bf16 add + RMSNorm backward of x and y 4096 x 14500 261.2 -> 237.9
    // us, 4096 x 14501 284.4 -> 256.0, of p 186.6 -> 181.4, 204.5 -> 197.8;
    // RMSNorm 8192 x 10004 205.0 -> 202.0; the rest within 1 % but add +
    // RMSNorm of x and y 8192 x 8191 261.2 -> 264.9.
    if constexpr (sizeof(T) == 2) {
      if (address % 8 == 0) {
        uint2 halves[2];
        __builtin_memcpy(halves, raw.v, sizeof(halves));
        reinterpret_cast<uint2*>(dst)[0] = halves[0];
        reinterpret_cast<uint2*>(dst)[1] = halves[1];
        return;
      }
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
