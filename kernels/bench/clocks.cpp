#include "clocks.hpp"

#include <dlfcn.h>

#include <string>

namespace dql {

namespace {

// The few NVML entry points used, declared here so that no NVML library is needed to build.
using nvmlDevice = void*;
using InitFn = int (*)();
using HandleFn = int (*)(unsigned, nvmlDevice*);
using ClockFn = int (*)(nvmlDevice, int, unsigned*);
using ReasonsFn = int (*)(nvmlDevice, unsigned long long*);
using VersionFn = int (*)(char*, unsigned);
constexpr int kClockSm = 1, kClockMem = 2;

struct Reason {
  unsigned long long bit;
  const char* text;
};
constexpr Reason kReasons[] = {{0x4ull, "software power cap"},      {0x8ull, "hardware slowdown"},
                               {0x20ull, "software thermal limit"}, {0x40ull, "hardware thermal limit"},
                               {0x80ull, "hardware power brake"},   {0x100ull, "display clock setting"}};

}  // namespace

GpuClocks read_gpu_clocks(int device) {
  GpuClocks c;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return c;
  const auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  const auto handle = reinterpret_cast<HandleFn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  const auto clock = reinterpret_cast<ClockFn>(dlsym(lib, "nvmlDeviceGetClockInfo"));
  const auto max_clock = reinterpret_cast<ClockFn>(dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
  const auto reasons = reinterpret_cast<ReasonsFn>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  const auto version = reinterpret_cast<VersionFn>(dlsym(lib, "nvmlSystemGetDriverVersion"));
  nvmlDevice dev = nullptr;
  if (init && handle && clock && max_clock && init() == 0 &&
      handle(static_cast<unsigned>(device), &dev) == 0) {
    c.available = clock(dev, kClockSm, &c.sm_mhz) == 0 && clock(dev, kClockMem, &c.mem_mhz) == 0;
    max_clock(dev, kClockSm, &c.sm_max_mhz);
    max_clock(dev, kClockMem, &c.mem_max_mhz);
    unsigned long long r = 0;
    if (reasons && reasons(dev, &r) == 0) {
      for (const Reason& x : kReasons) {
        if (r & x.bit) c.throttle += (c.throttle.empty() ? "" : ", ") + std::string(x.text);
      }
    }
    char buf[96] = {};
    if (version && version(buf, sizeof buf) == 0) c.driver = buf;
  }
  // NVML stays loaded: unloading it while the CUDA runtime runs is not worth the risk.
  return c;
}

}  // namespace dql
