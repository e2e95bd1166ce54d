// Current GPU clocks and throttle reasons, read through NVML when the driver provides it
// (loaded at run time: machines without a driver still run everything else).
#pragma once

#include <string>

namespace dql {

struct GpuClocks {
  bool available = false;
  unsigned sm_mhz = 0, mem_mhz = 0, sm_max_mhz = 0, mem_max_mhz = 0;
  std::string throttle;  // why the clocks are held down, empty when they are not
  std::string driver;    // the driver's version string
};

GpuClocks read_gpu_clocks(int device = 0);

}  // namespace dql
