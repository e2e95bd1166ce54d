#include <cuda_runtime.h>

#include <memory>

#include "gpu_kernels.hpp"
#include "kernels/bits/arith.hpp"
#include "kernels/bits/lop3.hpp"
#include "kernels/bits/prmt.hpp"

namespace dql::gpu_test {

namespace {

__global__ void primitive_kernel(Prim p, uint32_t param, const uint32_t* a, const uint32_t* b,
                                 const uint32_t* c, size_t n, uint32_t* out) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint32_t x = a[i], y = b[i], z = c[i];
    uint32_t d = 0;
    switch (p) {
      case Prim::Lop3: d = bits::lop3_any(x, y, z, param); break;
      case Prim::Prmt: d = bits::prmt(x, y, z, static_cast<bits::PrmtMode>(param)); break;
      case Prim::AddF16x2: d = bits::add_f16x2(x, y); break;
      case Prim::SubF16x2: d = bits::sub_f16x2(x, y); break;
      case Prim::MulF16x2: d = bits::mul_f16x2(x, y); break;
      case Prim::FmaF16x2: d = bits::fma_f16x2(x, y, z); break;
      case Prim::FmaBF16x2: d = bits::fma_bf16x2(x, y, z); break;
      case Prim::SubF32: d = bits::sub_f32(x, y); break;
      case Prim::MulF32: d = bits::mul_f32(x, y); break;
      case Prim::CvtF16F32: d = bits::cvt_f16_f32(x); break;
      case Prim::CvtF16x2F32: d = bits::cvt_f16x2_f32(x, y); break;
      case Prim::CvtF16S32: d = bits::cvt_f16_s32(static_cast<int32_t>(x)); break;
    }
    out[i] = d;
  }
}

template <recipes::RecipeId Id>
__global__ void recipe_kernel(const uint32_t* regs, const uint32_t* absmax, size_t n, uint32_t* out) {
  constexpr int kOut = recipes::spec_of(Id).out_regs;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint32_t in[2] = {regs[i], absmax ? absmax[i] : 0x3F800000u};
    uint32_t res[kOut];
    recipes::Exec<recipes::NoTrace> x;
    recipes::run_recipe(Id, x, in, res);
    for (int r = 0; r < kOut; ++r) out[i * kOut + r] = res[r];
  }
}

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DevicePtr = std::unique_ptr<uint32_t, DeviceFree>;

std::string check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  return std::string(what) + " failed: " + cudaGetErrorString(e);
}

#define DQL_RETURN_IF(message)      \
  do {                              \
    std::string err_ = (message);   \
    if (!err_.empty()) return err_; \
  } while (0)
#define DQL_TRY(call, what) DQL_RETURN_IF(check((call), what))

std::string alloc(DevicePtr& p, size_t words) {
  void* raw = nullptr;
  DQL_TRY(cudaMalloc(&raw, words * sizeof(uint32_t)), "cudaMalloc");
  p.reset(static_cast<uint32_t*>(raw));
  return {};
}

std::string upload(DevicePtr& p, const uint32_t* host, size_t n) {
  if (!host) return {};
  DQL_RETURN_IF(alloc(p, n));
  DQL_TRY(cudaMemcpy(p.get(), host, n * sizeof(uint32_t), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  return {};
}

unsigned grid_for(size_t n) {
  const size_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
}

}  // namespace

std::string device_problem() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("no usable CUDA driver or device (") + cudaGetErrorString(e) + ")";
  if (count == 0) return "no CUDA device found";
  return {};
}

std::string device_description() {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "unknown device";
  return std::string(prop.name) + ", compute capability " + std::to_string(prop.major) + "." +
         std::to_string(prop.minor);
}

std::string run_primitive(Prim p, uint32_t param, const uint32_t* a, const uint32_t* b, const uint32_t* c,
                          size_t n, uint32_t* out) {
  DevicePtr da, db, dc, dout;
  DQL_RETURN_IF(upload(da, a, n));
  DQL_RETURN_IF(upload(db, b, n));
  DQL_RETURN_IF(upload(dc, c, n));
  DQL_RETURN_IF(alloc(dout, n));
  primitive_kernel<<<grid_for(n), 256>>>(p, param, da.get(), db.get(), dc.get(), n, dout.get());
  DQL_TRY(cudaGetLastError(), "primitive kernel launch");
  DQL_TRY(cudaDeviceSynchronize(), "primitive kernel");
  DQL_TRY(cudaMemcpy(out, dout.get(), n * sizeof(uint32_t), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  return {};
}

std::string run_recipe(recipes::RecipeId id, const uint32_t* regs, const uint32_t* absmax, size_t n,
                       uint32_t* out) {
  const size_t words = n * static_cast<size_t>(recipes::spec_of(id).out_regs);
  DevicePtr dregs, dabs, dout;
  DQL_RETURN_IF(upload(dregs, regs, n));
  DQL_RETURN_IF(upload(dabs, absmax, n));
  DQL_RETURN_IF(alloc(dout, words));
  const unsigned g = grid_for(n);
  using recipes::RecipeId;
  switch (id) {
#define DQL_CASE(ID) \
  case RecipeId::ID: recipe_kernel<RecipeId::ID><<<g, 256>>>(dregs.get(), dabs.get(), n, dout.get()); break;
    DQL_CASE(AwqInt4F16)
    DQL_CASE(FtInt4F16)
    DQL_CASE(FtUint8F16)
    DQL_CASE(FtUint8Bf16)
    DQL_CASE(FtInt4Bf16)
    DQL_CASE(CutlassInt4F16)
    DQL_CASE(CutlassInt8F16)
    DQL_CASE(Nf4F16)
    DQL_CASE(NaiveInt4F16)
    DQL_CASE(NaiveInt8F16)
#undef DQL_CASE
  }
  DQL_TRY(cudaGetLastError(), "recipe kernel launch");
  DQL_TRY(cudaDeviceSynchronize(), "recipe kernel");
  DQL_TRY(cudaMemcpy(out, dout.get(), words * sizeof(uint32_t), cudaMemcpyDeviceToHost),
          "cudaMemcpy to host");
  return {};
}

}  // namespace dql::gpu_test
