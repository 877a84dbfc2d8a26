// The CUDA kernels' device-pointer entry points: what the CUDA backend, the GPU
// benchmarks and the GPU tests call.
//
// Every pointer here is a device pointer; tensors are row-major [rows, hidden]
// in the args' dtype unless a field says otherwise. A launch only enqueues work
// on `stream`; the return value reports launch errors (bad configuration), not
// the kernel's completion.
//
//   ForwardArgs args;
//   SetNormConfig(config, hidden, args);
//   args.dtype = DType::kBF16; args.rows = m; args.hidden = n;
//   args.x = d_x; args.out = d_out; args.weight = d_w;
//   cudaError_t err = LaunchForward(args, stream);
//
// Launch configuration (vector width, threads per row, rows per block, register
// or streaming kernel) depends on dtype, hidden and pointer alignment only, never
// on the row count, so a row's outputs are bitwise the same whether it is
// computed alone or in a batch of any size (given equally aligned buffers).
//
// Inputs may be read in whole aligned 16-byte words: a kernel may read bytes
// between an input's ends and the 16-byte boundaries around them (never
// across a page). compute-sanitizer reports such a read where an allocation
// ends inside that word (bench/results/gpu-2026-12-01-round68.md, table 2),
// so inputs are allocated rounded up to 16 bytes: the CUDA backend's staging
// buffer in 256-byte regions, the benchmark's tensors rounded up.
#ifndef NORMSERVE_KERNELS_CUDA_LAUNCH_H_
#define NORMSERVE_KERNELS_CUDA_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "normserve/kernels/dtype.h"
#include "normserve/kernels/norm_config.h"
#include "row_layout.h"

namespace normserve::kernels::cuda {

// The normalization's scalars, taken from a NormConfig (see norm_config.h).
struct NormScalars {
  bool center = false;   // LayerNorm when true
  float eps = 1e-5f;     // added to the mean square under the root
  float scale = 1.0f;    // c / sqrt(hidden)
  int64_t stat_len = 1;  // k = ceil(hidden * partial), in [1, hidden]
  // 1 / hidden and 1 / stat_len, rounded to fp32: set by LaunchForward and
  // LaunchBackward (callers leave them), so the kernels scale sums by a
  // multiplication read from the parameters rather than an IEEE division.
  float inv_hidden = 1.0f;
  float inv_stat_len = 1.0f;
};
NormScalars MakeNormScalars(const NormConfig& config, int64_t hidden);

// Kernel parameters are read through the constant cache, cold at each launch:
// the fields a forward kernel reads before its row's statistics come first,
// so that they share as few cache lines as they can (ForwardKernel).
struct ForwardArgs {
  int64_t rows = 0;
  int64_t hidden = 0;            // 1 .. 65536 (larger works, on the streaming kernel)
  const void* x = nullptr;       // required
  const void* y = nullptr;       // residual branch; optional (= 0)
  const void* weight = nullptr;  // [hidden]; optional (= 1)
  const void* bias = nullptr;    // [hidden]; optional (= 0)
  void* out = nullptr;           // required
  void* residual_out = nullptr;  // p = x + y in residual_dtype; optional
  NormScalars norm;
  DType dtype = DType::kF32;           // x, y, out, weight, bias
  DType residual_dtype = DType::kF32;  // residual_out: dtype or kF32
  float* mean = nullptr;               // [rows]; optional (0 for RMSNorm)
  float* rstd = nullptr;               // [rows]; optional
};

cudaError_t LaunchForward(const ForwardArgs& args, cudaStream_t stream);

// Backward reduces grad_weight / grad_bias per segment, deterministically, in
// two launches: each block sums its chunk of rows (a chunk never crosses a
// segment boundary) into an fp32 partial in the workspace, then a column
// reduction adds a segment's partials in chunk order. A segment's chunking
// depends on its row count, hidden and dtype only.
//
// One descriptor per segment, in row order; PlanBackward fills them.
struct SegmentPlan {
  int64_t row_begin = 0;  // first row of the segment in the batch
  int64_t rows = 0;
  int32_t chunk_begin = 0;  // first chunk (block) of the segment
  int32_t chunks = 0;       // chunks of the segment
  int32_t chunk_rows = 0;   // rows per chunk when not interleaved (the last may have fewer)
  int32_t has_stats = 0;    // 1: use saved mean / rstd for these rows
};

struct BackwardArgs {
  DType dtype = DType::kF32;           // x, y, grad_out, grad_in, weight
  DType residual_dtype = DType::kF32;  // grad_residual_out: dtype or kF32
  int64_t rows = 0;
  int64_t hidden = 0;
  NormScalars norm;
  const void* x = nullptr;                  // required
  const void* y = nullptr;                  // optional (= 0)
  const void* grad_out = nullptr;           // required
  const void* grad_residual_out = nullptr;  // optional (= 0)
  const float* mean = nullptr;              // saved statistics, [rows]; optional
  const float* rstd = nullptr;              //   (used for segments with has_stats)
  const void* weight = nullptr;             // [hidden]; optional (= 1)
  void* grad_in = nullptr;                  // required
  float* grad_weight = nullptr;             // fp32 [num_segments, hidden]; optional
  float* grad_bias = nullptr;               // fp32 [num_segments, hidden]; optional
  // Segment descriptors in device memory, from PlanBackward. nullptr means one
  // segment of all rows, using the saved statistics when mean/rstd are set.
  const SegmentPlan* segments = nullptr;
  int num_segments = 1;
  int total_chunks = 0;             // from PlanBackward (computed when segments is nullptr)
  bool interleaved_chunks = false;  // set by the launcher: InterleavedChunks
  // fp32 scratch of BackwardWorkspaceBytes(); required when grad_weight or
  // grad_bias is set.
  void* workspace = nullptr;
};

// Fills segments[i].row_begin / chunk_begin / chunks / chunk_rows for the given row
// counts (segments[i].rows and has_stats set by the caller); returns the total
// number of chunks. Same dtype, hidden, alignment, norm (center: LayerNorm)
// and y (whether the launch has one) as the launch, which pick its layout
// (ChooseBackwardRowLayout); call it with the launch's device current (a
// segment gets at most MaxBackwardChunks).
int PlanBackward(DType dtype, int64_t hidden, bool aligned, bool center, bool y,
                 SegmentPlan* segments, int num_segments);
// The current device's SMs (132, an H100's, without a device).
int MultiprocessorCount();
// 2 per SM of the current device: the most blocks per SM a launch plans for.
int MaxChunksPerSegment();
// Whether a launch of `rows` rows of one block each runs at most one row per
// SM: latency-bound, so some layouts take an instance with more in flight.
inline bool AtMostOneRowPerSm(int64_t rows) { return rows <= MultiprocessorCount(); }
// The most shared memory one block of the current device may opt in to.
size_t MaxSharedBytesPerBlock();
// Whether the current device's peak DRAM bandwidth per SM is at least
// kHighDramGBPerSecondPerSm (an H200: 37; an H100 SXM: 25): each SM then
// needs more bytes in flight to keep the memory busy.
inline constexpr double kHighDramGBPerSecondPerSm = 30.0;
bool HighDramBandwidthPerSm();
// Blocks of `kernel` (a __global__ function, no dynamic shared memory) that
// one SM of the current device holds at `threads` threads a block: the
// occupancy query, cached per device, kernel and block size. At least 1.
int ResidentBlocksPerSm(const void* kernel, int threads);
// Most chunks one backward segment of this layout is cut into, in blocks (a
// row split over a cluster: its blocks): one wave, i.e. the stage-one blocks
// the device holds at once, at most 2 per SM. A second wave
// re-ran every block's prologue and doubled the dw / db partials: where one
// SM holds 1 block, one wave measured 4-12 % faster than two (bf16 LayerNorm
// 4096 x 12288 158.8 -> 139.9 us, 8192 x 16384 368.7 -> 347.6 us;
// bench/results/gpu-2026-11-24-round8.md).
int MaxBackwardChunks(DType dtype, int64_t hidden, const RowLayout& layout);
// For tests: a backward launch of one kind (LayerNorm or RMSNorm, with y or
// grad_residual_out stored as the dtype, a bias, a row that fills its layout)
// on rows of `hidden` aligned 16-byte vectors. kernel_blocks: the blocks per
// SM its stage-one kernel holds; plan_blocks: those its chunk plan runs. A
// kernel that holds fewer runs the plan's last blocks as a second wave. Both 0
// for layouts without a one-block kernel (clusters, streaming) and without a
// device.
struct BackwardLaunchKind {
  bool center = false;
  bool y = false;
  bool residual_grad = false;
  bool bias = false;
  bool full = false;  // only where FullRow holds for the layout
};
struct StageOneOccupancy {
  int kernel_blocks = 0;
  int plan_blocks = 0;
};
StageOneOccupancy BackwardStageOneOccupancy(DType dtype, int64_t hidden,
                                            const BackwardLaunchKind& kind);
// Bytes of workspace a backward launch with total_chunks chunks needs.
size_t BackwardWorkspaceBytes(int64_t hidden, int total_chunks);

cudaError_t LaunchBackward(const BackwardArgs& args, cudaStream_t stream);

// Whether every pointer is 16-byte aligned: then the row width decides the
// vector (VectorElements, row_layout.h).
bool VectorAligned(std::initializer_list<const void*> pointers);

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_LAUNCH_H_
