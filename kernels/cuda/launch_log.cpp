#include "launch_log.hpp"

#include <cuda_runtime.h>
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace dql::cuda {

namespace {

thread_local LaunchLog* innermost = nullptr;

std::string demangled(const char* symbol) {
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> s(abi::__cxa_demangle(symbol, nullptr, nullptr, &status),
                                                 std::free);
  return status == 0 && s ? std::string(s.get()) : std::string(symbol);
}

}  // namespace

LaunchLog::LaunchLog() : outer_(innermost) { innermost = this; }

LaunchLog::~LaunchLog() { innermost = outer_; }

bool launch_log_open() { return innermost != nullptr; }

void note_launch(KernelLaunch l) {
  if (innermost) innermost->launches_.push_back(std::move(l));
}

void note_library_call(std::string what) {
  if (innermost) note_launch(KernelLaunch{std::move(what), true, {}, {}, {}, 0});
}

std::string kernel_signature(const void* func) {
  static std::mutex mutex;
  static std::unordered_map<const void*, std::string> names;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = names.find(func); it != names.end()) return it->second;
  const char* symbol = nullptr;
  std::string name;
  if (cudaFuncGetName(&symbol, func) == cudaSuccess && symbol) {
    name = demangled(symbol);
  } else {
    cudaGetLastError();  // the failed query's error is not the launch's
    char text[48];
    std::snprintf(text, sizeof text, "a kernel at %p", func);
    name = text;
  }
  return names.emplace(func, std::move(name)).first->second;
}

}  // namespace dql::cuda
