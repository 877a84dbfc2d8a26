// Every backward launch whose rows take one block must hold the blocks per SM
// that its chunk plan runs (BackwardStageOneOccupancy, kernels/cuda/launch.h):
// a stage-one kernel that holds fewer runs the plan's last blocks as a second
// wave. (Round 36 found fp32 fused rows of 385-512 threads holding one block
// where the plan ran two: add + RMSNorm backward 16384 x 4000 on an H200
// 313.6 -> 262.1 us once they took 4 vectors per thread; round 37, fused
// LayerNorm rows of 257-384 threads, which BackwardStagedFusedLayerNormKernel
// now holds two per SM.) Needs a GPU: skipped without one.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/launch.h"
#include "cuda/row_layout.h"
#include "normserve/kernels/dtype.h"

namespace normserve::kernels_test {
namespace {

using kernels::DType;
using kernels::DTypeName;
using kernels::DTypeSize;
using kernels::cuda::BackwardLaunchKind;
using kernels::cuda::BackwardStageOneOccupancy;
using kernels::cuda::ChooseRowLayout;
using kernels::cuda::FullRow;
using kernels::cuda::Pass;
using kernels::cuda::StageOneOccupancy;

std::string KindName(const BackwardLaunchKind& k) {
  std::string name = k.center ? "LayerNorm" : "RMSNorm";
  if (k.bias) name += "+bias";
  if (k.y) name += "+y";
  if (k.residual_grad) name += "+residual_grad";
  if (k.full) name += "+full";
  return name;
}

TEST(StageOneFitTest, EveryOneBlockBackwardLaunchHoldsItsChunkPlan) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) GTEST_SKIP() << "no GPU";
  std::vector<std::string> misfits;
  int checked = 0;
  for (const DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const int64_t vec = 16 / static_cast<int64_t>(DTypeSize(dtype));
    for (int64_t hidden = vec; hidden <= 16384; hidden += vec) {
      const bool fills = FullRow(ChooseRowLayout(Pass::kBackward, dtype, hidden, /*aligned=*/true),
                                 hidden, hidden);
      for (const bool center : {false, true}) {
        for (const bool bias : {false, true}) {
          if (bias && !center) continue;
          for (const bool y : {false, true}) {
            for (const bool residual_grad : {false, true}) {
              for (const bool full : {false, true}) {
                if (full && !fills) continue;
                const BackwardLaunchKind kind{center, y, residual_grad, bias, full};
                const StageOneOccupancy o = BackwardStageOneOccupancy(dtype, hidden, kind);
                if (o.plan_blocks == 0) continue;  // clusters or streaming
                ++checked;
                if (o.kernel_blocks < o.plan_blocks) {
                  misfits.push_back(std::string(DTypeName(dtype)) + " hidden " +
                                    std::to_string(hidden) + " " + KindName(kind) + ": " +
                                    std::to_string(o.kernel_blocks) + " of " +
                                    std::to_string(o.plan_blocks) + " blocks per SM");
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
  std::string first;
  for (size_t i = 0; i < misfits.size() && i < 20; ++i) first += misfits[i] + "\n";
  EXPECT_TRUE(misfits.empty()) << misfits.size() << " launch kinds misfit, the first:\n" << first;
}

}  // namespace
}  // namespace normserve::kernels_test
