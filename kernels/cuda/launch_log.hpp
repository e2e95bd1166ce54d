// Which kernels a call launched. Every launch site of the CUDA layer notes its kernel, grid, block and
// dynamic shared memory while a LaunchLog is open on the calling thread, so that the bench's rows, the
// gemv command and the timing view can say what ran: the kernel's own instance (the names the SASS view
// lists), not only the family a bench row is named by.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace dql::cuda {

struct KernelLaunch {
  // The kernel's C++ signature, its symbol demangled (sass::short_name shortens it as the SASS view
  // does); for a library's call, the function called ("cublasGemmEx", "cudaMemcpyAsync").
  std::string name;
  bool library = false;  // a library's call: it launches kernels of its own, whose grids are not known here
  std::array<unsigned, 3> grid{}, block{};
  std::array<unsigned, 3> cluster{};  // {0, 0, 0}: launched without a cluster
  size_t shared_bytes = 0;            // dynamic shared memory a block
  // Launched as the programmatic dependent of the launch before it (compute capability 9.0): its blocks may
  // start while that launch ends, and wait for it (griddepcontrol.wait) before what depends on it.
  bool dependent = false;
};

// Opens a log on the calling thread: the launches made on it until the log closes are noted here. Logs
// nest; a launch is noted in the innermost open one only.
class LaunchLog {
 public:
  LaunchLog();
  ~LaunchLog();
  LaunchLog(const LaunchLog&) = delete;
  LaunchLog& operator=(const LaunchLog&) = delete;
  const std::vector<KernelLaunch>& launches() const { return launches_; }

 private:
  friend void note_launch(KernelLaunch l);
  std::vector<KernelLaunch> launches_;
  LaunchLog* outer_ = nullptr;
};

// Whether a log is open on this thread: a launch site notes its launch only then.
bool launch_log_open();
// Adds l to the innermost open log; nothing where none is open.
void note_launch(KernelLaunch l);
// A library's call (cuBLAS, a copy) among the launches.
void note_library_call(std::string what);
// The demangled signature of a kernel's entry function (its host stub's address), or "a kernel at
// 0x..." where the runtime cannot name it. Cached: the runtime is asked once a kernel.
std::string kernel_signature(const void* func);

}  // namespace dql::cuda
