// The CUDA backend: host batches (batch.h) in, one kernel launch per batch.
//
// Per call: the segments' inputs are packed into a pinned staging buffer, sent
// with one host-to-device copy, computed with one launch (two for backward:
// rows, then the dw / db column reduction), and the outputs come back with one
// device-to-host copy and are scattered to each segment's own pointers.
//
// Concurrency: a small pool of lanes, each a CUDA stream with its own pinned
// and device buffers (grown as needed, then reused). A call takes a free lane
// for its whole duration, so concurrent batches overlap their copies with each
// other's kernels; when every lane is busy, the caller waits for one.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "launch.h"
#include "normserve/kernels/backend.h"

namespace normserve::kernels {
namespace {

using cuda::BackwardArgs;
using cuda::ForwardArgs;
using cuda::SegmentPlan;

constexpr int kLanes = 2;
constexpr size_t kRegionAlign = 256;

absl::Status CudaError(cudaError_t err, const char* what) {
  return absl::InternalError(absl::StrCat("CUDA ", what, ": ", cudaGetErrorString(err)));
}

#define NORMSERVE_CUDA_RETURN(call)           \
  do {                                        \
    const cudaError_t normserve_err = (call); \
    if (normserve_err != cudaSuccess) {       \
      return CudaError(normserve_err, #call); \
    }                                         \
  } while (false)

// Offsets of the tensors of one batch inside the staging buffers: inputs
// first (sent with one copy), then outputs (fetched with one copy), then
// device-only scratch.
class Layout {
 public:
  // Reserves `bytes` (0 for an absent tensor) and returns its offset.
  size_t Add(size_t bytes) {
    const size_t offset = end_;
    end_ += (bytes + kRegionAlign - 1) / kRegionAlign * kRegionAlign;
    return offset;
  }
  size_t end() const { return end_; }

 private:
  size_t end_ = 0;
};

// One stream and its buffers; used by one call at a time.
struct Lane {
  cudaStream_t stream = nullptr;
  char* pinned = nullptr;  // host, page-locked
  size_t pinned_bytes = 0;
  char* device = nullptr;
  size_t device_bytes = 0;

  absl::Status Reserve(size_t host_bytes, size_t device_need) {
    if (host_bytes > pinned_bytes) {
      // Grow geometrically: pinning is slow, batches vary in size.
      const size_t grown = std::max(host_bytes, pinned_bytes * 2);
      if (pinned != nullptr) NORMSERVE_CUDA_RETURN(cudaFreeHost(pinned));
      pinned = nullptr;
      pinned_bytes = 0;
      NORMSERVE_CUDA_RETURN(cudaMallocHost(reinterpret_cast<void**>(&pinned), grown));
      pinned_bytes = grown;
    }
    if (device_need > device_bytes) {
      if (device != nullptr) NORMSERVE_CUDA_RETURN(cudaFree(device));
      device = nullptr;
      device_bytes = 0;
      NORMSERVE_CUDA_RETURN(cudaMalloc(reinterpret_cast<void**>(&device), device_need));
      device_bytes = device_need;
    }
    return absl::OkStatus();
  }
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, std::string name) : device_(device), name_(std::move(name)) {}

  ~CudaBackend() override {
    cudaSetDevice(device_);
    for (auto& lane : lanes_) {
      if (lane->stream != nullptr) {
        cudaStreamSynchronize(lane->stream);
        cudaStreamDestroy(lane->stream);
      }
      if (lane->pinned != nullptr) cudaFreeHost(lane->pinned);
      if (lane->device != nullptr) cudaFree(lane->device);
    }
  }

  absl::Status Init() {
    NORMSERVE_CUDA_RETURN(cudaSetDevice(device_));
    for (int i = 0; i < kLanes; ++i) {
      auto lane = std::make_unique<Lane>();
      NORMSERVE_CUDA_RETURN(cudaStreamCreateWithFlags(&lane->stream, cudaStreamNonBlocking));
      free_.push_back(lane.get());
      lanes_.push_back(std::move(lane));
    }
    return absl::OkStatus();
  }

  std::string Describe() const override { return absl::StrCat("cuda:", device_, " (", name_, ")"); }

  absl::Status Forward(const ForwardBatch& batch) override {
    if (absl::Status status = ValidateForwardBatch(batch); !status.ok()) return status;
    if (TotalRows(batch) == 0) return absl::OkStatus();
    LaneHolder lane(this);
    NORMSERVE_CUDA_RETURN(cudaSetDevice(device_));
    return RunForward(batch, *lane.get());
  }

  // Segments with y and segments without run as two launches: a launch's
  // layout may depend on whether it has y (ChooseBackwardRowLayout), and a
  // row's bits on its layout, so a row's bits never depend on its neighbours.
  absl::Status Backward(const BackwardBatch& batch) override {
    if (absl::Status status = ValidateBackwardBatch(batch); !status.ok()) return status;
    LaneHolder lane(this);
    NORMSERVE_CUDA_RETURN(cudaSetDevice(device_));
    const auto& segments = batch.segments;
    if (std::all_of(segments.begin(), segments.end(), HasY) ||
        std::none_of(segments.begin(), segments.end(), HasY)) {
      return RunBackward(batch, *lane.get());  // the common case: no copy
    }
    BackwardBatch with_y = batch, without_y = batch;
    with_y.segments.clear();
    without_y.segments.clear();
    for (const BackwardSegment& s : segments) (HasY(s) ? with_y : without_y).segments.push_back(s);
    if (absl::Status status = RunBackward(with_y, *lane.get()); !status.ok()) return status;
    return RunBackward(without_y, *lane.get());
  }

 private:
  // Takes a free lane for the caller's scope.
  class LaneHolder {
   public:
    explicit LaneHolder(CudaBackend* backend) : backend_(backend) {
      std::unique_lock<std::mutex> lock(backend_->mu_);
      backend_->lane_freed_.wait(lock, [this] { return !backend_->free_.empty(); });
      lane_ = backend_->free_.back();
      backend_->free_.pop_back();
    }
    ~LaneHolder() {
      {
        std::lock_guard<std::mutex> lock(backend_->mu_);
        backend_->free_.push_back(lane_);
      }
      backend_->lane_freed_.notify_one();
    }
    Lane* get() const { return lane_; }

   private:
    CudaBackend* backend_;
    Lane* lane_;
  };

  absl::Status RunForward(const ForwardBatch& batch, Lane& lane) {
    const int64_t rows = TotalRows(batch);
    const size_t row_bytes = static_cast<size_t>(batch.hidden) * DTypeSize(batch.dtype);
    const size_t res_row_bytes =
        static_cast<size_t>(batch.hidden) * DTypeSize(batch.residual_dtype);
    const size_t weight_bytes = row_bytes;
    bool any_y = false, any_res = false, any_mean = false, any_rstd = false;
    for (const ForwardSegment& s : batch.segments) {
      any_y |= s.y != nullptr && s.rows > 0;
      any_res |= s.residual_out != nullptr && s.rows > 0;
      any_mean |= s.mean != nullptr && s.rows > 0;
      any_rstd |= s.rstd != nullptr && s.rows > 0;
    }
    Layout layout;
    const size_t x_at = layout.Add(rows * row_bytes);
    const size_t y_at = layout.Add(any_y ? rows * row_bytes : 0);
    const size_t w_at = layout.Add(batch.weight != nullptr ? weight_bytes : 0);
    const size_t b_at = layout.Add(batch.bias != nullptr ? weight_bytes : 0);
    const size_t inputs_end = layout.end();
    const size_t out_at = layout.Add(rows * row_bytes);
    const size_t res_at = layout.Add(any_res ? rows * res_row_bytes : 0);
    const size_t mean_at = layout.Add(any_mean ? rows * sizeof(float) : 0);
    const size_t rstd_at = layout.Add(any_rstd ? rows * sizeof(float) : 0);
    const size_t total = layout.end();
    if (absl::Status status = lane.Reserve(total, total); !status.ok()) return status;

    // Pack the inputs: the callers' buffers are pageable and scattered, so one
    // copy into pinned memory is what makes a single DMA transfer possible.
    char* host = lane.pinned;
    size_t row_offset = 0;
    for (const ForwardSegment& s : batch.segments) {
      const size_t bytes = s.rows * row_bytes;
      std::memcpy(host + x_at + row_offset, s.x, bytes);
      if (any_y) {
        if (s.y != nullptr) {
          std::memcpy(host + y_at + row_offset, s.y, bytes);
        } else {
          std::memset(host + y_at + row_offset, 0, bytes);  // y = 0: same bits as no y
        }
      }
      row_offset += bytes;
    }
    if (batch.weight != nullptr) std::memcpy(host + w_at, batch.weight, weight_bytes);
    if (batch.bias != nullptr) std::memcpy(host + b_at, batch.bias, weight_bytes);

    char* dev = lane.device;
    ForwardArgs args;
    args.dtype = batch.dtype;
    args.residual_dtype = batch.residual_dtype;
    args.rows = rows;
    args.hidden = batch.hidden;
    args.norm = cuda::MakeNormScalars(batch.config, batch.hidden);
    args.x = dev + x_at;
    args.y = any_y ? dev + y_at : nullptr;
    args.weight = batch.weight != nullptr ? dev + w_at : nullptr;
    args.bias = batch.bias != nullptr ? dev + b_at : nullptr;
    args.out = dev + out_at;
    args.residual_out = any_res ? dev + res_at : nullptr;
    args.mean = any_mean ? reinterpret_cast<float*>(dev + mean_at) : nullptr;
    args.rstd = any_rstd ? reinterpret_cast<float*>(dev + rstd_at) : nullptr;

    NORMSERVE_CUDA_RETURN(
        cudaMemcpyAsync(dev, host, inputs_end, cudaMemcpyHostToDevice, lane.stream));
    NORMSERVE_CUDA_RETURN(cuda::LaunchForward(args, lane.stream));
    NORMSERVE_CUDA_RETURN(cudaMemcpyAsync(host + inputs_end, dev + inputs_end, total - inputs_end,
                                          cudaMemcpyDeviceToHost, lane.stream));
    NORMSERVE_CUDA_RETURN(cudaStreamSynchronize(lane.stream));

    // Scatter: each caller's outputs live in its own buffers.
    int64_t row = 0;
    for (const ForwardSegment& s : batch.segments) {
      std::memcpy(s.out, host + out_at + row * row_bytes, s.rows * row_bytes);
      if (s.residual_out != nullptr) {
        std::memcpy(s.residual_out, host + res_at + row * res_row_bytes, s.rows * res_row_bytes);
      }
      if (s.mean != nullptr) {
        std::memcpy(s.mean, host + mean_at + row * sizeof(float), s.rows * sizeof(float));
      }
      if (s.rstd != nullptr) {
        std::memcpy(s.rstd, host + rstd_at + row * sizeof(float), s.rows * sizeof(float));
      }
      row += s.rows;
    }
    return absl::OkStatus();
  }

  static bool HasY(const BackwardSegment& s) { return s.y != nullptr && s.rows > 0; }

  // A batch whose segments with rows all have y, or none has (Backward).
  absl::Status RunBackward(const BackwardBatch& batch, Lane& lane) {
    const int64_t rows = TotalRows(batch);
    const int num_segments = static_cast<int>(batch.segments.size());
    if (num_segments == 0) return absl::OkStatus();
    if (num_segments > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("at most 65535 segments per backward batch, got ", num_segments));
    }
    const size_t hidden = static_cast<size_t>(batch.hidden);
    const size_t row_bytes = hidden * DTypeSize(batch.dtype);
    const size_t res_row_bytes = hidden * DTypeSize(batch.residual_dtype);
    bool any_y = false, any_gres = false, any_stats = false, any_dw = false, any_db = false;
    std::vector<SegmentPlan> plan(num_segments);
    for (int i = 0; i < num_segments; ++i) {
      const BackwardSegment& s = batch.segments[i];
      any_y |= HasY(s);
      any_gres |= s.grad_residual_out != nullptr && s.rows > 0;
      any_stats |= s.rstd != nullptr && s.rows > 0;
      any_dw |= s.grad_weight != nullptr;
      any_db |= s.grad_bias != nullptr;
      plan[i].rows = s.rows;
      plan[i].has_stats = s.rstd != nullptr ? 1 : 0;
    }
    // Every staged tensor starts on a region boundary (Layout): LaunchBackward
    // finds its buffers aligned, and the width alone picks the vector.
    const int total_chunks =
        cuda::PlanBackward(batch.dtype, batch.hidden, /*aligned=*/true, batch.config.center, any_y,
                           plan.data(), num_segments);

    Layout layout;
    const size_t x_at = layout.Add(rows * row_bytes);
    const size_t y_at = layout.Add(any_y ? rows * row_bytes : 0);
    const size_t dy_at = layout.Add(rows * row_bytes);
    const size_t gres_at = layout.Add(any_gres ? rows * res_row_bytes : 0);
    const size_t w_at = layout.Add(batch.weight != nullptr ? row_bytes : 0);
    const size_t mean_at = layout.Add(any_stats ? rows * sizeof(float) : 0);
    const size_t rstd_at = layout.Add(any_stats ? rows * sizeof(float) : 0);
    const size_t plan_at = layout.Add(num_segments * sizeof(SegmentPlan));
    const size_t inputs_end = layout.end();
    const size_t dx_at = layout.Add(rows * row_bytes);
    const size_t dw_at = layout.Add(any_dw ? num_segments * hidden * sizeof(float) : 0);
    const size_t db_at = layout.Add(any_db ? num_segments * hidden * sizeof(float) : 0);
    const size_t outputs_end = layout.end();
    const size_t ws_at =
        layout.Add(any_dw || any_db ? cuda::BackwardWorkspaceBytes(batch.hidden, total_chunks) : 0);
    if (absl::Status status = lane.Reserve(outputs_end, layout.end()); !status.ok()) return status;

    // Pack the inputs (see RunForward for why this copy exists).
    char* host = lane.pinned;
    int64_t row = 0;
    for (const BackwardSegment& s : batch.segments) {
      const size_t at = row * row_bytes;
      const size_t bytes = s.rows * row_bytes;
      std::memcpy(host + x_at + at, s.x, bytes);
      std::memcpy(host + dy_at + at, s.grad_out, bytes);
      if (HasY(s)) std::memcpy(host + y_at + at, s.y, bytes);
      if (any_gres) {
        const size_t res_at = row * res_row_bytes;
        const size_t res_bytes = s.rows * res_row_bytes;
        if (s.grad_residual_out != nullptr) {
          std::memcpy(host + gres_at + res_at, s.grad_residual_out, res_bytes);
        } else {
          std::memset(host + gres_at + res_at, 0, res_bytes);
        }
      }
      if (any_stats) {
        const size_t stat_at = row * sizeof(float);
        const size_t stat_bytes = s.rows * sizeof(float);
        if (s.rstd != nullptr) {
          std::memcpy(host + mean_at + stat_at, s.mean, stat_bytes);
          std::memcpy(host + rstd_at + stat_at, s.rstd, stat_bytes);
        } else {
          std::memset(host + mean_at + stat_at, 0, stat_bytes);  // unused: has_stats = 0
          std::memset(host + rstd_at + stat_at, 0, stat_bytes);
        }
      }
      row += s.rows;
    }
    if (batch.weight != nullptr) std::memcpy(host + w_at, batch.weight, row_bytes);
    std::memcpy(host + plan_at, plan.data(), num_segments * sizeof(SegmentPlan));

    char* dev = lane.device;
    BackwardArgs args;
    args.dtype = batch.dtype;
    args.residual_dtype = batch.residual_dtype;
    args.rows = rows;
    args.hidden = batch.hidden;
    args.norm = cuda::MakeNormScalars(batch.config, batch.hidden);
    args.x = dev + x_at;
    args.y = any_y ? dev + y_at : nullptr;
    args.grad_out = dev + dy_at;
    args.grad_residual_out = any_gres ? dev + gres_at : nullptr;
    args.mean = any_stats ? reinterpret_cast<const float*>(dev + mean_at) : nullptr;
    args.rstd = any_stats ? reinterpret_cast<const float*>(dev + rstd_at) : nullptr;
    args.weight = batch.weight != nullptr ? dev + w_at : nullptr;
    args.grad_in = dev + dx_at;
    args.grad_weight = any_dw ? reinterpret_cast<float*>(dev + dw_at) : nullptr;
    args.grad_bias = any_db ? reinterpret_cast<float*>(dev + db_at) : nullptr;
    args.segments = reinterpret_cast<const SegmentPlan*>(dev + plan_at);
    args.num_segments = num_segments;
    args.total_chunks = total_chunks;
    args.workspace = any_dw || any_db ? dev + ws_at : nullptr;

    NORMSERVE_CUDA_RETURN(
        cudaMemcpyAsync(dev, host, inputs_end, cudaMemcpyHostToDevice, lane.stream));
    NORMSERVE_CUDA_RETURN(cuda::LaunchBackward(args, lane.stream));
    NORMSERVE_CUDA_RETURN(cudaMemcpyAsync(host + inputs_end, dev + inputs_end,
                                          outputs_end - inputs_end, cudaMemcpyDeviceToHost,
                                          lane.stream));
    NORMSERVE_CUDA_RETURN(cudaStreamSynchronize(lane.stream));

    row = 0;
    for (int i = 0; i < num_segments; ++i) {
      const BackwardSegment& s = batch.segments[i];
      std::memcpy(s.grad_in, host + dx_at + row * row_bytes, s.rows * row_bytes);
      if (s.grad_weight != nullptr) {
        std::memcpy(s.grad_weight, host + dw_at + i * hidden * sizeof(float),
                    hidden * sizeof(float));
      }
      if (s.grad_bias != nullptr) {
        std::memcpy(s.grad_bias, host + db_at + i * hidden * sizeof(float), hidden * sizeof(float));
      }
      row += s.rows;
    }
    return absl::OkStatus();
  }

  const int device_;
  const std::string name_;
  // The lanes; created in Init, destroyed with the backend.
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::mutex mu_;
  // Lanes not held by a call. Guarded by mu_.
  std::vector<Lane*> free_;
  // Signalled when a lane returns to free_.
  std::condition_variable lane_freed_;
};

}  // namespace

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the error: no driver or no device means no GPU
    return 0;
  }
  return count;
}

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options) {
  const int count = CudaDeviceCount();
  if (count == 0) return absl::UnavailableError("no CUDA device");
  if (options.device < 0 || options.device >= count) {
    return absl::UnavailableError(
        absl::StrCat("CUDA device ", options.device, " out of range [0, ", count, ")"));
  }
  cudaDeviceProp prop;
  if (const cudaError_t err = cudaGetDeviceProperties(&prop, options.device); err != cudaSuccess) {
    return absl::UnavailableError(
        absl::StrCat("CUDA device ", options.device, ": ", cudaGetErrorString(err)));
  }
  auto backend = std::make_unique<CudaBackend>(options.device, prop.name);
  if (absl::Status status = backend->Init(); !status.ok()) {
    return absl::UnavailableError(status.message());
  }
  return backend;
}

}  // namespace normserve::kernels
