// GroupSum for a row split over the blocks of a cluster, without a cluster
// barrier per call.
//
// A cluster barrier (barrier.cluster.arrive, release semantics) waits for every
// memory operation the thread has issued, its global stores included: in the
// backward kernels the previous row's dx stores. ncu put 41 % of the staged
// fp32 backward's stall samples on that wait (8192 x 16384,
// bench/results/gpu-2026-11-24-round11.md). Here each warp instead sends its
// partials to every block of the cluster with st.async, whose arrival the
// receiving block's "full" mbarrier counts in bytes; a block reads only its
// own shared memory, and tells the senders that a stage may be overwritten
// through their "empty" mbarriers (remote arrives, relaxed: they order no
// data). Nothing waits for global memory.
#ifndef NORMSERVE_KERNELS_CUDA_CLUSTER_SUM_CUH_
#define NORMSERVE_KERNELS_CUDA_CLUSTER_SUM_CUH_

#include <cooperative_groups.h>

#include <cstdint>
#include <type_traits>

#include "async_copy.cuh"
#include "row_ops.cuh"

namespace normserve::kernels::cuda {

// --- mbarrier and distributed shared memory primitives (sm_90) -------------

// The address of the same shared variable in block `rank` of the cluster.
__device__ __forceinline__ unsigned PeerAddress(unsigned shared_address, unsigned rank) {
  unsigned peer;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(peer)
               : "r"(shared_address), "r"(rank));
  return peer;
}

__device__ __forceinline__ void MbarrierInit(uint64_t* barrier, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(SharedAddress(barrier)),
               "r"(arrivals)
               : "memory");
}

// This block's arrival on its own barrier, announcing `bytes` of st.async.
__device__ __forceinline__ void MbarrierArriveExpectBytes(uint64_t* barrier, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.relaxed.cta.shared::cta.b64 _, [%0], %1;" ::"r"(
                   SharedAddress(barrier)),
               "r"(bytes)
               : "memory");
}

// An arrival on the barrier at `peer_barrier` (PeerAddress) of another block.
__device__ __forceinline__ void MbarrierArrivePeer(unsigned peer_barrier) {
  asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];" ::"r"(peer_barrier)
               : "memory");
}

// Waits until the barrier's phase of parity `parity` has completed.
__device__ __forceinline__ void MbarrierWait(uint64_t* barrier, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(SharedAddress(barrier)),
      "r"(parity)
      : "memory");
}

// Stores `value` at `peer_address` of another block; its barrier at
// `peer_barrier` counts the 4 bytes on arrival.
__device__ __forceinline__ void StoreAsyncPeer(unsigned peer_address, float value,
                                               unsigned peer_barrier) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                   peer_address),
               "r"(__float_as_uint(value)), "r"(peer_barrier)
               : "memory");
}

// --- GroupSum over a cluster ------------------------------------------------

// The state of GroupSum for one row group spread over the kCtas blocks of a
// cluster. Two stages, used by alternate calls; each block holds, per stage,
// the partials of all the group's warps (block 0's warps first) and two
// barriers: `full` completes when all of them have arrived, `empty` when every
// warp of the cluster has read its own block's copy (so senders may write the
// stage again).
template <int kCtas>
struct ClusterSums {
  static_assert(kCtas >= 2 && kCtas <= kMaxClusterCtas, "kClusterScratchBytes sizes the largest");
  static constexpr int kStageFloats = kCtas * kMaxWarps * kMaxGroupSums;
  struct Storage {
    float partials[2][kStageFloats];
    uint64_t full[2];
    uint64_t empty[2];
  };
  static_assert(sizeof(Storage) == ClusterScratchBytes(kCtas));
  Storage* storage;  // __shared__
  int calls = 0;     // GroupSum calls so far: the stage and the barriers' parity
};

// The GroupSum state of a kernel whose row groups span kCtas blocks.
template <int kCtas>
using ClusterScratch = std::conditional_t<kCtas == 1, GroupScratch, ClusterSums<kCtas>>;

// Static shared memory for ClusterScratch<kCtas>.
template <int kCtas>
struct alignas(alignof(uint64_t)) ClusterScratchStorage {
  unsigned char bytes[kCtas == 1 ? kScratchBytes : ClusterScratchBytes(kCtas)];
};

// Sets up a kernel's GroupSum state (kDoubleBuffered: see GroupScratchOf;
// clusters are always double-buffered); every thread of the cluster calls it
// before any GroupSum (with kCtas > 1 it synchronizes the cluster once, so that
// no block sends to a peer whose barriers are not yet initialised).
template <int kCtas, bool kDoubleBuffered = true>
__device__ __forceinline__ auto MakeClusterScratch(ClusterScratchStorage<kCtas>& storage, int tpr) {
  if constexpr (kCtas == 1) {
    return GroupScratchOf<kDoubleBuffered>{reinterpret_cast<float*>(storage.bytes)};
  } else {
    auto* s = reinterpret_cast<typename ClusterSums<kCtas>::Storage*>(storage.bytes);
    if (threadIdx.x == 0) {
      for (int stage = 0; stage < 2; ++stage) {
        MbarrierInit(&s->full[stage], 1);          // this block's expect-bytes arrival
        MbarrierInit(&s->empty[stage], tpr / 32);  // one per warp of the cluster
      }
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cooperative_groups::this_cluster().sync();
    return ClusterSums<kCtas>{s};
  }
}

// GroupSum (row_ops.cuh) for a row group spread over a cluster: the same
// additions in the same order (the butterfly within each warp, then lane l of
// every warp adds up the partial of the group's warp l % span), so the same
// bits as a block holding the whole group would give. More than 32 warps (a
// wide cluster): lane l first adds the partials of warps l, l + 32, ...
template <int N, int kCtas>
__device__ __forceinline__ void GroupSum(float (&v)[N], int tpr, ClusterSums<kCtas>& sums) {
  static_assert(N <= kMaxGroupSums, "a stage holds kMaxGroupSums values per warp");
  WarpSum(v, 32);  // cluster rows have tpr >= 64
  auto& s = *sums.storage;
  const int stage = sums.calls & 1;
  const unsigned parity = (sums.calls >> 1) & 1;  // uses of this stage so far, mod 2
  ++sums.calls;
  const int warps = tpr / 32;  // the group's warps, all blocks
  const int cta_warps = warps / kCtas;
  const int rank = static_cast<int>(cooperative_groups::this_cluster().block_rank());
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  float* partials = s.partials[stage];
  if (threadIdx.x == 0) MbarrierArriveExpectBytes(&s.full[stage], warps * N * sizeof(float));
  if (lane < kCtas) {                           // lane r sends the warp's partials to block r
    MbarrierWait(&s.empty[stage], parity ^ 1);  // every block has read the stage's last use
    const unsigned to = PeerAddress(SharedAddress(partials + (rank * cta_warps + warp) * N), lane);
    const unsigned full = PeerAddress(SharedAddress(&s.full[stage]), lane);
#pragma unroll
    for (int i = 0; i < N; ++i) StoreAsyncPeer(to + i * sizeof(float), v[i], full);
  }
  MbarrierWait(&s.full[stage], parity);
  const int span = PartialsSpan(warps < 32 ? warps : 32);
  const int w = lane & (span - 1);
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = 0.0f;
  if (w < warps) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = partials[w * N + i];
  }
  if constexpr (kCtas * kMaxWarps > 32) {
    for (int more = w + 32; more < warps; more += 32) {
#pragma unroll
      for (int i = 0; i < N; ++i) v[i] += partials[more * N + i];
    }
  }
  WarpSum(v, span);  // its shuffles consume every lane's reads of the stage
  // The reads above (generic proxy) before the peers' next st.async (async
  // proxy) into this stage.
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncwarp();
  if (lane < kCtas) MbarrierArrivePeer(PeerAddress(SharedAddress(&s.empty[stage]), lane));
}

// A block of a cluster may exit only when nothing more will arrive in its
// shared memory: every block calls this after its last GroupSum. The calls
// awaited every send to this block; the empty barriers' last phases complete
// with the peers' last arrivals.
template <int kCtas>
__device__ __forceinline__ void DrainClusterSums(ClusterSums<kCtas>& sums) {
  auto& s = *sums.storage;
  for (int call = sums.calls - 2; call < sums.calls; ++call) {
    if (call >= 0) MbarrierWait(&s.empty[call & 1], (call >> 1) & 1);
  }
}
// (A block's sums leave nothing in flight.)
template <bool kDoubleBuffered>
__device__ __forceinline__ void DrainClusterSums(GroupScratchOf<kDoubleBuffered>&) {}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_CLUSTER_SUM_CUH_
