// Host half of launch.h: scalars from the config, alignment, the backward
// chunk plan, and the dtype switch onto the per-dtype launchers.
#include "launch.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "row_layout.h"
#include "typed_launch.h"

namespace normserve::kernels::cuda {

NormScalars MakeNormScalars(const NormConfig& config, int64_t hidden) {
  NormScalars scalars;
  scalars.center = config.center;
  scalars.eps = config.eps;
  scalars.scale = OutputScale(config, hidden);
  scalars.stat_len = StatisticLength(config, hidden);
  return scalars;
}

bool VectorAligned(std::initializer_list<const void*> pointers) {
  for (const void* pointer : pointers) {
    if (reinterpret_cast<uintptr_t>(pointer) % 16 != 0) return false;
  }
  return true;
}

namespace {

// An attribute of the current device, cached per device (the query is cheap,
// but not free per launch); `fallback` where there is no device to ask.
template <cudaDeviceAttr kAttribute>
int CachedDeviceAttribute(int fallback) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cached[kMaxDevices];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) {
    return fallback;
  }
  int value = cached[device].load(std::memory_order_relaxed);
  if (value == 0) {
    if (cudaDeviceGetAttribute(&value, kAttribute, device) != cudaSuccess || value < 1) {
      value = fallback;
    }
    cached[device].store(value, std::memory_order_relaxed);
  }
  return value;
}

}  // namespace

int MultiprocessorCount() { return CachedDeviceAttribute<cudaDevAttrMultiProcessorCount>(132); }

int MaxChunksPerSegment() { return 2 * MultiprocessorCount(); }

size_t MaxSharedBytesPerBlock() {
  // The fallback is the H100's.
  return static_cast<size_t>(
      CachedDeviceAttribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>(227 * 1024));
}

bool HighDramBandwidthPerSm() {
  // Fallbacks: the H100's (2619 MHz, 5120 bits), so false without a device.
  const double memory_khz = CachedDeviceAttribute<cudaDevAttrMemoryClockRate>(2619000);
  const double bus_bits = CachedDeviceAttribute<cudaDevAttrGlobalMemoryBusWidth>(5120);
  const double sms = CachedDeviceAttribute<cudaDevAttrMultiProcessorCount>(132);
  const double gb_per_second = 2.0 * memory_khz * 1e3 * bus_bits / 8.0 / 1e9;  // double data rate
  return gb_per_second / sms >= kHighDramGBPerSecondPerSm;
}

int ResidentBlocksPerSm(const void* kernel, int threads) {
  static std::mutex mutex;
  static std::map<std::tuple<int, const void*, int>, int> cache;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 1;
  const auto key = std::make_tuple(device, kernel, threads);
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, 0) != cudaSuccess ||
      blocks < 1) {
    blocks = 1;
  }
  cache.emplace(key, blocks);
  return blocks;
}

int MaxBackwardChunks(DType dtype, int64_t hidden, const RowLayout& layout) {
  // Cached: the occupancy query looks up the kernel's attributes.
  static std::mutex mutex;
  static std::map<std::tuple<int, DType, int64_t, int, bool>, int> cache;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return MaxChunksPerSegment();
  const auto key = std::make_tuple(device, dtype, hidden, layout.vec, layout.realigned);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const int sms = MultiprocessorCount();
  int chunks = 2 * sms;
  switch (dtype) {
    case DType::kF32:
      chunks = BackwardResidentBlocksF32(layout, hidden, sms);
      break;
    case DType::kF16:
      chunks = BackwardResidentBlocksF16(layout, hidden, sms);
      break;
    case DType::kBF16:
      chunks = BackwardResidentBlocksBF16(layout, hidden, sms);
      break;
  }
  const std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(key, chunks);
  return chunks;
}

int PlanBackward(DType dtype, int64_t hidden, bool aligned, bool center, bool y,
                 SegmentPlan* segments, int num_segments) {
  const RowLayout layout = ChooseBackwardRowLayout(dtype, hidden, aligned, center, y);
  const int max_chunks = MaxBackwardChunks(dtype, hidden, layout);
  int64_t row = 0;
  int chunk = 0;
  for (int i = 0; i < num_segments; ++i) {
    SegmentPlan& s = segments[i];
    const int chunks = BackwardChunks(s.rows, layout, max_chunks);
    s.row_begin = row;
    s.chunk_begin = chunk;
    s.chunks = chunks;
    s.chunk_rows = static_cast<int32_t>(BackwardChunkRows(s.rows, chunks));
    row += s.rows;
    chunk += chunks;
  }
  return chunk;
}

StageOneOccupancy BackwardStageOneOccupancy(DType dtype, int64_t hidden,
                                            const BackwardLaunchKind& kind) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) return {};
  switch (dtype) {
    case DType::kF32:
      return BackwardStageOneOccupancyF32(hidden, kind);
    case DType::kF16:
      return BackwardStageOneOccupancyF16(hidden, kind);
    case DType::kBF16:
      return BackwardStageOneOccupancyBF16(hidden, kind);
  }
  return {};
}

size_t BackwardWorkspaceBytes(int64_t hidden, int total_chunks) {
  // dw partials, then db partials: [2][total_chunks][hidden] fp32.
  return 2 * sizeof(float) * static_cast<size_t>(total_chunks) * static_cast<size_t>(hidden);
}

namespace {

// NormScalars' derived fields (see launch.h).
NormScalars WithReciprocals(NormScalars norm, int64_t hidden) {
  norm.inv_hidden = 1.0f / static_cast<float>(hidden);
  norm.inv_stat_len = 1.0f / static_cast<float>(norm.stat_len);
  return norm;
}

}  // namespace

cudaError_t LaunchForward(const ForwardArgs& in, cudaStream_t stream) {
  if (in.rows < 0 || in.hidden < 1 || in.x == nullptr || in.out == nullptr) {
    return cudaErrorInvalidValue;
  }
  ForwardArgs args = in;
  args.norm = WithReciprocals(in.norm, in.hidden);
  switch (args.dtype) {
    case DType::kF32:
      return LaunchForwardF32(args, stream);
    case DType::kF16:
      return LaunchForwardF16(args, stream);
    case DType::kBF16:
      return LaunchForwardBF16(args, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchBackward(const BackwardArgs& in, cudaStream_t stream) {
  if (in.rows < 0 || in.hidden < 1 || in.x == nullptr || in.grad_out == nullptr ||
      in.grad_in == nullptr) {
    return cudaErrorInvalidValue;
  }
  BackwardArgs args = in;
  args.norm = WithReciprocals(in.norm, in.hidden);
  switch (args.dtype) {
    case DType::kF32:
      return LaunchBackwardF32(args, stream);
    case DType::kF16:
      return LaunchBackwardF16(args, stream);
    case DType::kBF16:
      return LaunchBackwardBF16(args, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace normserve::kernels::cuda
