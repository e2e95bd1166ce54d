// Kernel launches that note themselves in the calling thread's open LaunchLog (launch_log.hpp): every
// launch site of the CUDA layer goes through these two, so that a log sees every kernel a call starts.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "launch_log.hpp"

namespace dql::cuda {

inline std::array<unsigned, 3> dims_of(dim3 d) { return {d.x, d.y, d.z}; }

// kernel<<<grid, block, shared>>>(args...), noted.
template <class... P, class... A>
void run_kernel(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared, A&&... args) {
  if (launch_log_open()) {
    note_launch(KernelLaunch{kernel_signature(reinterpret_cast<const void*>(kernel)),
                             false,
                             dims_of(grid),
                             dims_of(block),
                             {},
                             shared});
  }
  kernel<<<grid, block, shared>>>(std::forward<A>(args)...);
}

// cudaLaunchKernelEx(&cfg, kernel, args...), noted with the cluster its attributes ask for and whether it
// is a programmatic dependent.
template <class... P, class... A>
cudaError_t run_kernel_ex(const cudaLaunchConfig_t& cfg, void (*kernel)(P...), A&&... args) {
  if (launch_log_open()) {
    KernelLaunch l{kernel_signature(reinterpret_cast<const void*>(kernel)),
                   false,
                   dims_of(cfg.gridDim),
                   dims_of(cfg.blockDim),
                   {},
                   cfg.dynamicSmemBytes};
    for (unsigned i = 0; i < cfg.numAttrs; ++i) {
      if (cfg.attrs[i].id == cudaLaunchAttributeClusterDimension) {
        const auto& c = cfg.attrs[i].val.clusterDim;
        l.cluster = {c.x, c.y, c.z};
      }
      if (cfg.attrs[i].id == cudaLaunchAttributeProgrammaticStreamSerialization)
        l.dependent = cfg.attrs[i].val.programmaticStreamSerializationAllowed != 0;
    }
    note_launch(std::move(l));
  }
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...);
}

}  // namespace dql::cuda
