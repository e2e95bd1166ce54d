#include <cuda_runtime.h>

#include <atomic>
#include <initializer_list>
#include <map>
#include <mutex>
#include <tuple>

#include "kernels/recipes/reference.hpp"
#include "launch.hpp"
#include "launch_note.cuh"

namespace dql::cuda {

namespace {

template <class Args, void (*Item)(const Args&, int64_t)>
__global__ void items_kernel(Args a, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Item(a, i);
  }
}

std::string finish(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) return {};
  return std::string(what) + " failed on the GPU: " + cudaGetErrorString(e);
}

std::string queued(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return {};
  return std::string(what) + " could not start on the GPU: " + cudaGetErrorString(e);
}

template <class Args, void (*Item)(const Args&, int64_t)>
std::string launch_items(const Args& a, int64_t n, const char* what, bool wait) {
  if (n <= 0) return {};
  const int64_t blocks = (n + 255) / 256;
  run_kernel(items_kernel<Args, Item>, static_cast<unsigned>(blocks < 65536 ? blocks : 65536), 256, 0, a, n);
  return wait ? finish(what) : queued(what);
}

__global__ void flush_kernel(const uint4* buffer, size_t chunks, uint32_t* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < chunks;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint4 x = __ldcg(buffer + i);
    acc ^= x.x ^ x.y ^ x.z ^ x.w;
  }
  if (acc == 0xFFFFFFFFu) *sink = acc;  // never true for a zeroed buffer; keeps the reads
}

// One thread waits until the host sets flags[0], or for `timeout_ns` of the GPU's clock.
__global__ void hold_kernel(volatile uint32_t* flags, uint64_t timeout_ns) {
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (flags[0] == 0u) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeout_ns) {
      flags[1] = 1u;
      return;
    }
    __nanosleep(500);
  }
}

__global__ void fill_kernel(uint32_t* p, size_t n, uint64_t seed, uint32_t and_mask, uint32_t or_mask) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t x = seed + 0x9E3779B97F4A7C15ull * (i + 1);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    p[i] = (static_cast<uint32_t>(x) & and_mask) | or_mask;
  }
}

// Records each step's destination register on the device, in the order the host traces them.
struct DeviceRecorder {
  static constexpr bool kTrace = true;
  uint32_t* values;
  int count;
  __device__ void record(recipes::OpKind, const char*, recipes::Reg dst, std::initializer_list<recipes::Opd>,
                         uint32_t, const char*, const char* = nullptr) {
    values[count++] = dst.v;
  }
};

__global__ void trace_kernel(recipes::RecipeId id, uint32_t reg, uint32_t absmax, uint32_t* values,
                             int* count) {
  recipes::Exec<DeviceRecorder> x{DeviceRecorder{values, 0}};
  const uint32_t in[2] = {reg, absmax};
  uint32_t out[4];
  recipes::run_recipe(id, x, in, out);
  *count = x.rec.count;
}

template <recipes::RecipeId Id>
__global__ void verify_kernel(unsigned long long* counts) {
  constexpr int kElems = recipes::recipe_elems(Id);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t r = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; r < (1ull << 32);
       r += stride) {
    const uint32_t in[2] = {static_cast<uint32_t>(r), 0x3F800000u};
    uint32_t out[4];
    recipes::Exec<recipes::NoTrace> x;
    recipes::run_recipe(Id, x, in, out);
    bool bad = false;
#pragma unroll
    for (int e = 0; e < kElems; ++e) {
      const uint32_t got = (e % 2) ? bits::hi16(out[e / 2]) : bits::lo16(out[e / 2]);
      bad |= got != recipes::reference_bits(Id, in[0], in[1], e);
    }
    if (bad) {
      atomicAdd(&counts[0], 1ull);
      atomicMin(&counts[1], static_cast<unsigned long long>(r));
    }
  }
}

}  // namespace

std::string launch_quant(const quant::QuantArgs& a, bool wait) {
  return launch_items<quant::QuantArgs, quant::quant_group>(a, quant::quant_items(a), "quantize", wait);
}
std::string launch_pack(const quant::PackArgs& a, bool wait) {
  return launch_items<quant::PackArgs, quant::pack_word>(a, quant::pack_items(a), "pack", wait);
}
std::string launch_pack_params(const quant::PackArgs& a, int64_t groups, bool wait) {
  return launch_items<quant::PackArgs, quant::pack_params>(a, groups, "pack scales", wait);
}
size_t occupancy_cap_bytes(int blocks, size_t static_bytes) {
  static std::mutex lock;
  static std::map<std::tuple<int, int, size_t>, size_t> known;  // (device, blocks, static bytes)
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  const std::lock_guard<std::mutex> hold(lock);
  const auto key = std::make_tuple(dev, blocks, static_bytes);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  int per_sm = 0, reserved = 0;
  size_t need = 0;
  if (cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) == cudaSuccess &&
      cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev) == cudaSuccess) {
    const int64_t n = int64_t{per_sm} / (blocks + 1) + 1 - reserved - static_cast<int64_t>(static_bytes);
    if (n > 0) need = static_cast<size_t>(n);
  }
  known.emplace(key, need);
  return need;
}

std::string launch_l2_flush(const void* buffer, size_t chunks, uint32_t* sink) {
  run_kernel(flush_kernel, 1024, 256, 0, static_cast<const uint4*>(buffer), chunks, sink);
  return queued("the L2 flush");
}

StreamHold::StreamHold() {
  void* p = nullptr;
  if (cudaHostAlloc(&p, 2 * sizeof(uint32_t), cudaHostAllocMapped) != cudaSuccess) return;
  host_ = static_cast<uint32_t*>(p);
  void* d = nullptr;
  if (cudaHostGetDevicePointer(&d, p, 0) != cudaSuccess) return;
  device_ = static_cast<uint32_t*>(d);
}
StreamHold::~StreamHold() {
  if (host_) cudaFreeHost(host_);
}
std::string StreamHold::hold(double timeout_s) {
  if (!device_) return "the benchmark's stream hold has no mapped host memory";
  reinterpret_cast<volatile uint32_t*>(host_)[0] = 0u;
  reinterpret_cast<volatile uint32_t*>(host_)[1] = 0u;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  run_kernel(hold_kernel, 1, 1, 0, device_, static_cast<uint64_t>(timeout_s * 1e9));
  return queued("the benchmark's stream hold");
}
void StreamHold::release() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (host_) reinterpret_cast<volatile uint32_t*>(host_)[0] = 1u;
}
bool StreamHold::timed_out() const {
  return host_ && reinterpret_cast<const volatile uint32_t*>(host_)[1] != 0u;
}

std::string launch_fill(uint32_t* p, size_t n, uint64_t seed, uint32_t and_mask, uint32_t or_mask) {
  if (n == 0) return {};
  const size_t blocks = (n + 255) / 256;
  run_kernel(fill_kernel, static_cast<unsigned>(blocks < 65536 ? blocks : 65536), 256, 0, p, n, seed,
             and_mask, or_mask);
  return finish("fill");
}

std::string launch_trace(recipes::RecipeId id, uint32_t reg, uint32_t absmax, uint32_t* values, int* count) {
  run_kernel(trace_kernel, 1, 1, 0, id, reg, absmax, values, count);
  return finish("trace");
}

std::string launch_verify(recipes::RecipeId id, unsigned long long* counts) {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const unsigned blocks = static_cast<unsigned>(sms > 0 ? sms * 8 : 1024);
  using R = recipes::RecipeId;
  switch (id) {
#define DQL_VERIFY(ID) \
  case R::ID: run_kernel(verify_kernel<R::ID>, blocks, 256, 0, counts); break;
    DQL_VERIFY(AwqInt4F16)
    DQL_VERIFY(FtInt4F16)
    DQL_VERIFY(FtUint8F16)
    DQL_VERIFY(FtUint8Bf16)
    DQL_VERIFY(FtInt4Bf16)
    DQL_VERIFY(CutlassInt4F16)
    DQL_VERIFY(CutlassInt8F16)
    DQL_VERIFY(Nf4F16)
    DQL_VERIFY(NaiveInt4F16)
    DQL_VERIFY(NaiveInt8F16)
#undef DQL_VERIFY
  }
  return finish("verify");
}

}  // namespace dql::cuda
