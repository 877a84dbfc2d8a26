// Per-thread fp32 scratch rows for the CPU backend.
//
// A row is converted to fp32 once into scratch (which stays in L1/L2 for
// hidden sizes up to tens of thousands) and every later pass reads it there,
// so each input row is read from memory once.
//
//   float* p = ThreadScratch(/*slot=*/0, hidden);
#ifndef NORMSERVE_KERNELS_CPU_SCRATCH_H_
#define NORMSERVE_KERNELS_CPU_SCRATCH_H_

#include <cstdint>
#include <memory>
#include <new>

namespace normserve::kernels::cpu {

// Slots a kernel may use at once.
inline constexpr int kScratchSlots = 2;

// A 64-byte aligned fp32 array of at least n elements, owned by the calling
// thread and reused by its later calls with the same slot (contents are not
// kept across calls that grow it). Valid until the thread's next call with
// the same slot and a larger n.
inline float* ThreadScratch(int slot, int64_t n) {
  struct AlignedDelete {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  struct Buffer {
    std::unique_ptr<float[], AlignedDelete> data;
    int64_t size = 0;
  };
  thread_local Buffer buffers[kScratchSlots];
  Buffer& buffer = buffers[slot];
  if (buffer.size < n) {
    buffer.data.reset(static_cast<float*>(
        ::operator new[](static_cast<size_t>(n) * sizeof(float), std::align_val_t(64))));
    buffer.size = n;
  }
  return buffer.data.get();
}

}  // namespace normserve::kernels::cpu

#endif  // NORMSERVE_KERNELS_CPU_SCRATCH_H_
