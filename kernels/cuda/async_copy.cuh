// sm_80+ asynchronous global -> shared copies (cp.async), 4, 8 or 16 bytes at a time;
// and bulk prefetches into L2 (sm_90).
// A thread's copies become visible to that thread after CpAsyncWait; a kernel
// in which every thread reads back only the bytes it copied needs no block
// barrier around them.
#ifndef NORMSERVE_KERNELS_CUDA_ASYNC_COPY_CUH_
#define NORMSERVE_KERNELS_CUDA_ASYNC_COPY_CUH_

#include <cstdint>

namespace normserve::kernels::cuda {

// The shared-memory address of a generic pointer into shared memory.
__device__ __forceinline__ unsigned SharedAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copies 16 bytes from global `src` to shared `dst`; writes 16 zero bytes
// (reading nothing) when `!valid`. Both addresses 16-byte aligned; `src` must be
// a valid address even when `!valid`.
__device__ __forceinline__ void CpAsync16(void* dst, const void* src, bool valid) {
  const unsigned shared = SharedAddress(dst);
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(src),
               "r"(src_bytes)
               : "memory");
}

// Copies kBytes (4, 8 or 16) from global `src` to shared `dst`, as CpAsync16
// (which it is for 16: .cg, L2 only; smaller copies go through L1, .ca).
template <int kBytes>
__device__ __forceinline__ void CpAsync(void* dst, const void* src, bool valid) {
  if constexpr (kBytes == 16) {
    CpAsync16(dst, src, valid);
  } else {
    static_assert(kBytes == 8 || kBytes == 4, "cp.async copies 4, 8 or 16 bytes");
    const unsigned shared = SharedAddress(dst);
    const int src_bytes = valid ? kBytes : 0;
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(shared), "l"(src),
                 "n"(kBytes), "r"(src_bytes)
                 : "memory");
  }
}

// Copies the first `src_bytes` (0-16) of the 16 bytes at global `src` to
// shared `dst` and zero-fills the rest; both addresses 16-byte aligned.
__device__ __forceinline__ void CpAsync16Prefix(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SharedAddress(dst)),
               "l"(src), "r"(src_bytes)
               : "memory");
}

// CpAsync16 to a shared-memory address (SharedAddress), always copying.
__device__ __forceinline__ void CpAsync16Shared(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

// Closes the thread's copies issued since the last commit into one group.
__device__ __forceinline__ void CpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most `kPending` of the thread's committed groups are in flight.
template <int kPending>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Asks L2 to fetch the 16-byte granules wholly inside [begin, begin + bytes)
// of global memory: one bulk prefetch (sm_90), a hint that holds no registers
// and that later loads find in L2. Does nothing before sm_90.
__device__ __forceinline__ void PrefetchToL2(const void* begin, int64_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uint64_t address = reinterpret_cast<uint64_t>(begin);
  const uint64_t first = (address + 15) & ~uint64_t{15};
  const uint64_t end = (address + bytes) & ~uint64_t{15};
  if (end > first) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(first),
                 "r"(static_cast<unsigned>(end - first)));
  }
#endif
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_ASYNC_COPY_CUH_
