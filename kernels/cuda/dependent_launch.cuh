// Programmatic dependent launch (sm_90): a kernel launched with
// LaunchDependent may be scheduled while the kernel before it on the stream
// still runs, once every block of that one has called AllowDependentLaunch (or
// exited); it must call WaitForPrimaryGrid before touching what that kernel
// writes, which returns once that kernel has completed and its writes are
// visible. So the second kernel's launch and ramp-up overlap the first's tail
// instead of following it.
#ifndef NORMSERVE_KERNELS_CUDA_DEPENDENT_LAUNCH_CUH_
#define NORMSERVE_KERNELS_CUDA_DEPENDENT_LAUNCH_CUH_

namespace normserve::kernels::cuda {

__device__ __forceinline__ void AllowDependentLaunch() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

__device__ __forceinline__ void WaitForPrimaryGrid() {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

// Launches `kernel` on `stream` as a programmatic dependent of the kernel
// launched before it there.
template <typename... Params, typename... Args>
cudaError_t LaunchDependent(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                            Args... args) {
  cudaLaunchAttribute dependent;
  dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = stream;
  config.attrs = &dependent;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

}  // namespace normserve::kernels::cuda

#endif  // NORMSERVE_KERNELS_CUDA_DEPENDENT_LAUNCH_CUH_
