// The GPU backend: host data in, host data out; each step runs the CUDA kernels in kernels/cuda.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string_view>

#include "backend.hpp"
#include "device_array.hpp"
#include "host_steps.hpp"
#include "kernels/cuda/fast.hpp"
#include "kernels/cuda/gemv.hpp"
#include "kernels/cuda/launch.hpp"
#include "kernels/cuda/launch_log.hpp"

namespace dql {

namespace {

void check(cudaError_t e, const char* what) { check_cuda(e, what); }
void check(const std::string& err) {
  if (!err.empty()) throw Error(err);
}

void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS)
    throw Error(fmt::format("{} failed in cuBLAS (status {})", what, static_cast<int>(e)));
}

// What the quant launcher needs to know of the device.
cuda::QuantDevice quant_device(const DeviceInfo& d) { return {d.cc(), d.sms, d.l2_bytes}; }

// One cuBLAS handle per process, made on first use.
cublasHandle_t cublas() {
  static cublasHandle_t h = [] {
    cublasHandle_t x = nullptr;
    check(cublasCreate(&x), "cublasCreate");
    return x;
  }();
  return h;
}

// Y [M, N] = X [M, K] W^T with W [N, K] row-major in fp16 / bf16, fp32 accumulation: the baseline.
// Column-major view: Y^T (N x M) = W (the K x N array transposed) times X^T (K x M).
void cublas_product(recipes::OutType t, int64_t m, int64_t n, int64_t k, const void* x, const void* w,
                    void* y) {
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType dt = t == recipes::OutType::F16 ? CUDA_R_16F : CUDA_R_16BF;
  cuda::note_library_call("cublasGemmEx");
  check(cublasGemmEx(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                     static_cast<int>(k), &alpha, w, dt, static_cast<int>(k), x, dt, static_cast<int>(k),
                     &beta, y, dt, static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "the fp16 / bf16 product");
}

// Buffers for one benchmark case on the GPU, filled on the GPU with random data; each sample is
// timed with CUDA events around the launches (queued while the stream is held), after an L2 flush
// when a single run is timed cold. The flush reads a buffer twice the L2's size, leaving the L2 full
// of clean lines: a flush by writing would leave dirty lines whose write-back would be charged to the
// kernel being timed. Cold back-to-back runs take the case's buffers' copies in turn instead, each
// copy allocated and filled as the first.
class CudaBenchTarget final : public BenchTarget {
 public:
  CudaBenchTarget(const BenchCase& c, const DeviceInfo& dev, int copies) {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
    // The destructor does not run for a constructor that throws: what was made is released here.
    try {
      flush_bytes_ = flush_bytes(dev);
      flush_ = alloc<uint8_t>(flush_bytes_);
      sink_ = alloc<uint32_t>(1);
      check(cudaMemset(flush_, 0, flush_bytes_), "clearing the L2 flush buffer");
      for (int i = 0; i < std::max(1, copies); ++i) runs_.push_back(make_run(c, dev));
      // One run before any sample, on a stream that is not held: a kernel's first launch loads its
      // module (CUDA loads them lazily) and cuBLAS sets itself up, and either may wait for the
      // device, which a held stream would keep busy until the hold expired. Its launches are the case's.
      {
        const cuda::LaunchLog log;
        runs_[0]();
        launches_ = log.launches();
      }
      check(cudaDeviceSynchronize(), "preparing the benchmark");
    } catch (...) {
      release();
      throw;
    }
  }
  ~CudaBenchTarget() override { release(); }
  // The L2 flush buffer: twice the L2, and at least 64 MiB.
  static size_t flush_bytes(const DeviceInfo& dev) {
    return std::max<size_t>(2 * dev.l2_bytes, size_t{64} << 20);
  }
  CudaBenchTarget(const CudaBenchTarget&) = delete;
  CudaBenchTarget& operator=(const CudaBenchTarget&) = delete;
  std::vector<cuda::KernelLaunch> launches() const override { return launches_; }
  int copies() const override { return static_cast<int>(runs_.size()); }

  // The events and launches are queued behind a held stream (cuda::StreamHold), so that only the
  // device's time lies between the events, never the host's launching. A launch that waited for the
  // device itself would let the hold expire (after a second): from then on this case runs unheld.
  double time_once(bool cold) override {
    if (cold) check(cuda::launch_l2_flush(flush_, flush_bytes_ / 16, sink_));
    return timed(1);
  }
  // The same hold with `runs` runs between the events, each on the next copy of the buffers: the
  // device goes from one to the next as it would in a model's stream of launches.
  double time_back_to_back(int runs) override { return timed(runs) / runs; }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  cuda::StreamHold hold_;
  bool hold_works_ = true;
  uint8_t* flush_ = nullptr;
  size_t flush_bytes_ = 0;
  uint32_t* sink_ = nullptr;
  std::vector<void*> allocs_;
  std::vector<std::function<void()>> runs_;  // one a copy of the buffers
  size_t next_ = 0;                          // the copy the next run takes
  std::vector<cuda::KernelLaunch> launches_;

  void release() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    start_ = stop_ = nullptr;
    for (void* p : allocs_) cudaFree(p);
    allocs_.clear();
  }

  // Seconds from the start event to the stop event around `runs` runs.
  double timed(int runs) {
    // A hold that cannot be queued (no mapped host memory) is not asked for again.
    const bool held = hold_works_ && (hold_works_ = hold_.hold(1.0).empty());
    try {
      check(cudaEventRecord(start_), "cudaEventRecord");
      for (int i = 0; i < runs; ++i) {
        runs_[next_]();
        next_ = (next_ + 1) % runs_.size();
      }
      check(cudaEventRecord(stop_), "cudaEventRecord");
    } catch (...) {
      if (held) hold_.release();  // the error is the user's to read, not the hold's second to wait
      throw;
    }
    if (held) hold_.release();
    check(cudaEventSynchronize(stop_), "the benchmarked kernel");
    if (held && hold_.timed_out()) hold_works_ = false;
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms / 1e3;
  }

  // One copy of the case's buffers, allocated and filled, and the run that reads and writes them.
  std::function<void()> make_run(const BenchCase& c, const DeviceInfo& dev) {
    const int64_t n = c.n, k = c.k, elems = n * k;
    switch (c.kind) {
      case BenchKind::Copy: {
        const size_t words = static_cast<size_t>(c.copy_bytes / 4);
        uint32_t* src = random_words(words, 1, ~0u, 0u);
        uint32_t* dst = alloc<uint32_t>(words);
        return [src, dst, words] {
          cuda::note_library_call("cudaMemcpyAsync (device to device)");
          check(cudaMemcpyAsync(dst, src, words * 4, cudaMemcpyDeviceToDevice), "copy");
        };
      }
      case BenchKind::Dequant: {
        const quant::Scheme scheme = scheme_of_recipe(c.recipe);
        const quant::Layout layout = layout_of_recipe(c.recipe);
        const size_t words = static_cast<size_t>(elems * quant::scheme_bits(scheme) / 32);
        const size_t groups = static_cast<size_t>(elems / c.group);
        const quant::DequantArgs dq{
            scheme,
            layout,
            c.recipe,
            n,
            k,
            c.group,
            random_words(words, 2, ~0u, 0u),
            reinterpret_cast<uint16_t*>(random_words((groups + 1) / 2, 3, 0x03FF03FFu, 0x20002000u)),
            random_words(groups / 8 + 1, 4, ~0u, 0u),
            reinterpret_cast<float*>(random_words(groups, 5, 0x007FFFFFu, 0x3C000000u)),
            alloc<uint16_t>(static_cast<size_t>(elems))};
        return [dq] { check(cuda::fast_dequant(dq, false)); };
      }
      case BenchKind::Quant: {
        const size_t groups = static_cast<size_t>(elems / c.group);
        const quant::QuantArgs q{
            c.scheme,
            n,
            k,
            c.group,
            reinterpret_cast<float*>(random_words(static_cast<size_t>(elems), 6, 0x807FFFFFu, 0x3C000000u)),
            nullptr,
            nullptr,
            nullptr,
            alloc<float>(groups)};
        uint32_t* words = alloc<uint32_t>(static_cast<size_t>(elems * quant::scheme_bits(c.scheme) / 32));
        uint16_t* scales = alloc<uint16_t>(groups);
        return [q, words, scales, d = quant_device(dev)] {
          check(cuda::fast_quant_plain(q, words, scales, d, false));
        };
      }
      case BenchKind::Gemv: {
        const QuantSpec spec{c.scheme, c.layout, c.group};
        const bool f16 = c.dtype == recipes::OutType::F16;
        const size_t groups = group_count(spec, n, k);
        const uint16_t* x = reinterpret_cast<uint16_t*>(random_words(static_cast<size_t>(c.m * k + 1) / 2, 8,
                                                                     f16 ? 0x83FF83FFu : 0x807F807Fu,
                                                                     f16 ? 0x38003800u : 0x3F003F00u));
        const uint16_t* bias = reinterpret_cast<uint16_t*>(random_words(static_cast<size_t>(n + 1) / 2, 9,
                                                                        f16 ? 0x83FF83FFu : 0x807F807Fu,
                                                                        f16 ? 0x30003000u : 0x3E003E00u));
        uint16_t* y = alloc<uint16_t>(static_cast<size_t>(c.m * n));
        gemv::Problem p{c.path, c.dtype, c.m, x, bias, gemv::Epilogue{}};
        if (c.path == gemv::Path::Cublas) {
          const uint16_t* w16 = reinterpret_cast<uint16_t*>(random_words(static_cast<size_t>(elems + 1) / 2,
                                                                         10, f16 ? 0x87FF87FFu : 0x80FF80FFu,
                                                                         f16 ? 0x1C001C00u : 0x3B803B80u));
          const int64_t m = c.m;
          const recipes::OutType t = c.dtype;
          return [=] { cublas_product(t, m, n, k, x, w16, y); };
        }
        cuda::GemvLaunch g{};
        g.w = gemv::Weights{
            c.scheme,
            c.layout,
            n,
            k,
            c.group,
            random_words(qword_count(spec, n, k), 11, ~0u, 0u),
            reinterpret_cast<uint16_t*>(random_words((groups + 1) / 2, 12, 0x07FF07FFu, 0x1C001C00u)),
            random_words(groups / 8 + 1, 13, ~0u, 0u),
            reinterpret_cast<float*>(random_words(groups, 14, 0x007FFFFFu, 0x3F800000u))};
        g.p = p;
        g.y = y;
        const size_t ws = cuda::gemv_workspace_bytes(g.w, c.m);
        g.workspace = alloc<uint8_t>(ws);
        check(cudaMemset(g.workspace, 0, ws), "clearing the GEMV workspace");
        g.sms = dev.sms;
        g.cc = dev.cc();
        g.block_shared_most = static_cast<int64_t>(dev.block_shared_bytes);
        g.rows = c.gemm_rows;
        g.no_walk = c.ring;
        return [g] { check(cuda::gemv_run(g, false)); };
      }
      case BenchKind::Permute: {
        const size_t words = static_cast<size_t>(elems * quant::scheme_bits(c.scheme) / 32);
        const quant::PermuteArgs pm{quant::scheme_bits(c.scheme), n, k, random_words(words, 7, ~0u, 0u),
                                    alloc<uint32_t>(words)};
        const bool fwd = c.forward;
        return [pm, fwd] { check(cuda::fast_permute(pm, fwd, false)); };
      }
    }
    throw Error("a benchmark case of a kind this backend does not time");
  }

  template <class T>
  T* alloc(size_t n) {
    void* p = nullptr;
    check(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc");
    allocs_.push_back(p);
    return static_cast<T*>(p);
  }
  uint32_t* random_words(size_t n, uint64_t seed, uint32_t and_mask, uint32_t or_mask) {
    uint32_t* p = alloc<uint32_t>(n);
    check(cuda::launch_fill(p, n, seed, and_mask, or_mask));
    return p;
  }
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
    info_.backend = "cuda";
    info_.name = p.name;
    info_.cc_major = p.major;
    info_.cc_minor = p.minor;
    info_.sms = p.multiProcessorCount;
    info_.memory_bytes = p.totalGlobalMem;
    info_.l2_bytes = static_cast<size_t>(p.l2CacheSize);
    info_.block_shared_bytes = p.sharedMemPerBlockOptin;
    int clock = 0;
    if (cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, device) == cudaSuccess)
      info_.sm_clock_mhz = clock / 1000;
    if (cudaDeviceGetAttribute(&clock, cudaDevAttrMemoryClockRate, device) == cudaSuccess) {
      info_.mem_clock_mhz = clock / 1000;
    }
    cudaDriverGetVersion(&info_.driver_version);
    cudaRuntimeGetVersion(&info_.runtime_version);
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) info_.free_bytes = free_b;
  }
  const DeviceInfo& info() const override { return info_; }

  QuantizedMatrix quantize(const Tensor& w, const QuantSpec& spec) override {
    const int64_t n = w.shape.at(0), k = w.shape.at(1);
    check_quant_shape(spec, n, k);
    const size_t groups = group_count(spec, n, k), words = qword_count(spec, n, k);
    require_memory(static_cast<size_t>(n * k) * 5 + words * 8 + groups * 16);
    DeviceArray<float> dw(w.as<float>(), static_cast<size_t>(n * k));
    const bool awq = spec.layout == quant::Layout::Awq;  // the only format packed from codes
    DeviceArray<int8_t> codes(awq ? static_cast<size_t>(n * k) : 0);
    DeviceArray<uint16_t> scales(groups);
    DeviceArray<uint8_t> zeros(awq ? groups : 0);
    const bool nf4 = spec.scheme == quant::Scheme::Nf4;
    DeviceArray<float> absmax(nf4 ? groups : 0);
    const quant::QuantArgs qa{spec.scheme,  n,           k,           spec.group, dw.get(), codes.get(),
                              scales.get(), zeros.get(), absmax.get()};
    DeviceArray<uint32_t> plain(words);
    if (awq) {
      check(cuda::launch_quant(qa));  // asymmetric: codes and zeros, packed below
    } else {
      check(cuda::fast_quant_plain(qa, plain.get(), scales.get(), quant_device(info_)));
    }
    QuantizedMatrix q{spec, n, k, {}, {}, {}, {}};
    if (!nf4) check_scales(spec, scales.to_host(), k);

    DeviceArray<uint16_t> scales_out(nf4 ? 0 : groups);
    DeviceArray<uint32_t> qzeros(awq ? groups / 8 : 0);
    const quant::PackArgs pa{spec.scheme, spec.layout,  n,           k,           spec.group,
                             codes.get(), scales.get(), zeros.get(), plain.get(), scales_out.get(),
                             qzeros.get()};
    if (awq) check(cuda::launch_pack(pa));  // AWQ's packing of 8 columns a word
    if (!nf4) check(cuda::launch_pack_params(pa, static_cast<int64_t>(groups)));
    if (spec.layout == quant::Layout::Ft) {
      DeviceArray<uint32_t> ft(words);
      check(cuda::fast_permute(
          quant::PermuteArgs{quant::scheme_bits(spec.scheme), n, k, plain.get(), ft.get()}, true));
      q.qwords = ft.to_host();
    } else {
      q.qwords = plain.to_host();
    }
    q.scales = scales_out.to_host();
    q.qzeros = qzeros.to_host();
    q.absmax = absmax.to_host();
    return q;
  }

  std::vector<uint16_t> dequantize(const QuantizedMatrix& q, recipes::RecipeId recipe) override {
    check_recipe_reads(q.spec, recipe);
    const size_t out_n = static_cast<size_t>(q.n * q.k);
    require_memory(packed_bytes(q) + out_n * 2);
    DeviceArray<uint16_t> out(out_n);
    dequantize_into(q, recipe, out.get());
    return out.to_host();
  }

  std::vector<uint32_t> permute(int bits, int64_t n, int64_t k, const std::vector<uint32_t>& words,
                                bool forward) override {
    check_permute_shape(bits, n, k);
    require_memory(words.size() * 8);
    DeviceArray<uint32_t> in(words);
    DeviceArray<uint32_t> out(words.size());
    check(cuda::fast_permute(quant::PermuteArgs{bits, n, k, in.get(), out.get()}, forward));
    return out.to_host();
  }

  std::vector<uint32_t> trace_values(recipes::RecipeId id, const recipes::Inputs& in) override {
    DeviceArray<uint32_t> values(64);
    DeviceArray<int> count(1);
    check(cuda::launch_trace(id, in.reg, in.absmax, values.get(), count.get()));
    const int n = count.to_host()[0];
    std::vector<uint32_t> v = values.to_host();
    v.resize(static_cast<size_t>(n));
    return v;
  }

  std::vector<uint16_t> gemv(const QuantizedMatrix& w, const GemvRequest& r) override {
    check_gemv(w, r);
    const size_t out_n = static_cast<size_t>(r.m * w.n);
    if (r.path == gemv::Path::Cublas) {
      const recipes::RecipeId recipe = dequant_recipe_for(w.spec, r.dtype);
      require_memory(packed_bytes(w) + static_cast<size_t>(w.n * w.k) * 2 + r.x.size() * 2 + out_n * 2);
      DeviceArray<uint16_t> dw(static_cast<size_t>(w.n * w.k)), dx(r.x), db(r.bias), dy(out_n);
      dequantize_into(w, recipe, dw.get());  // on the GPU, where the product reads it
      cublas_product(r.dtype, r.m, w.n, w.k, dx.get(), dw.get(), dy.get());
      cuda::GemvLaunch L{};
      L.w.n = w.n;
      L.p = gemv::Problem{r.path, r.dtype, r.m, dx.get(), r.bias.empty() ? nullptr : db.get(), r.epi};
      L.y = dy.get();
      check(cuda::gemv_epilogue(L));
      return dy.to_host();
    }
    gemv::Weights hw = weights_of(w);
    const size_t ws_bytes = cuda::gemv_workspace_bytes(hw, r.m);
    require_memory(packed_bytes(w) + r.x.size() * 2 + out_n * 2 + ws_bytes);
    DeviceArray<uint32_t> qw(w.qwords), qz(w.qzeros);
    DeviceArray<uint16_t> sc(w.scales), dx(r.x), db(r.bias), dy(out_n);
    DeviceArray<float> am(w.absmax);
    DeviceArray<uint8_t> ws(ws_bytes);
    check(cudaMemset(ws.get(), 0, ws_bytes), "clearing the GEMV workspace");
    cuda::GemvLaunch L{};
    L.w = hw;
    L.w.q = qw.get(), L.w.scales = sc.get(), L.w.qzeros = qz.get(), L.w.absmax = am.get();
    L.p = gemv::Problem{r.path, r.dtype, r.m, dx.get(), r.bias.empty() ? nullptr : db.get(), r.epi};
    L.y = dy.get();
    L.workspace = ws.get();
    L.sms = info_.sms;
    L.cc = info_.cc();
    L.block_shared_most = static_cast<int64_t>(info_.block_shared_bytes);
    check(cuda::gemv_run(L));
    return dy.to_host();
  }

  std::unique_ptr<BenchTarget> bench_target(const BenchCase& c, int copies) override {
    if (copies > 1) {
      // Cold back-to-back runs take a copy of the case's buffers each, and the L2 flush buffer is made too.
      require_memory(static_cast<size_t>(copies * c.bytes()) + CudaBenchTarget::flush_bytes(info_),
                     fmt::format("{} {}: cold back-to-back runs on {} copies of its buffers need",
                                 c.kernel_name(), c.shape_name(), copies),
                     "time it back to back warm (one copy), or a run at a time");
    }
    return std::make_unique<CudaBenchTarget>(c, info_, copies);
  }

  VerifyResult verify(recipes::RecipeId id) override {
    DeviceArray<unsigned long long> counts(std::vector<unsigned long long>{0ull, ~0ull});
    const auto t0 = std::chrono::steady_clock::now();
    check(cuda::launch_verify(id, counts.get()));
    VerifyResult r;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto c = counts.to_host();
    r.checked = 1ull << 32;
    r.exhaustive = true;
    r.mismatches = c[0];
    r.first_mismatch = c[0] ? c[1] : 0;
    return r;
  }

 private:
  DeviceInfo info_;

  static size_t packed_bytes(const QuantizedMatrix& q) {
    return q.qwords.size() * 4 + q.scales.size() * 2 + q.qzeros.size() * 4 + q.absmax.size() * 4;
  }

  // The format's dequant kernel from host arrays into `out` ([N, K] on the GPU).
  void dequantize_into(const QuantizedMatrix& q, recipes::RecipeId recipe, uint16_t* out) {
    DeviceArray<uint32_t> qw(q.qwords);
    DeviceArray<uint16_t> sc(q.scales);
    DeviceArray<uint32_t> qz(q.qzeros);
    DeviceArray<float> am(q.absmax);
    const quant::DequantArgs da{q.spec.scheme, q.spec.layout, recipe,   q.n,      q.k, q.spec.group,
                                qw.get(),      sc.get(),      qz.get(), am.get(), out};
    check(cuda::fast_dequant(da));
  }

  // Refuses, before anything is allocated, work whose buffers the GPU's free memory cannot hold.
  // `needs` opens the sentence ("this needs"); `advice` ends it with what the user can do instead.
  void require_memory(size_t bytes, std::string_view needs = "this needs",
                      std::string_view advice = "use a smaller matrix or --backend cpu") {
    size_t free_b = 0, total_b = 0;
    check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    if (bytes > free_b) {
      throw Error(fmt::format("{} {:.2f} GiB on the GPU but {:.2f} GiB are free: {}", needs,
                              bytes / 1073741824.0, free_b / 1073741824.0, advice));
    }
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why) {
      if (e == cudaSuccess || e == cudaErrorNoDevice) {
        *why = "no CUDA GPU found";
      } else if (e == cudaErrorInsufficientDriver) {
        *why = "no NVIDIA driver that can run CUDA was found";
      } else {
        *why = fmt::format("no usable CUDA GPU ({})", cudaGetErrorString(e));
      }
    }
    cudaGetLastError();  // clear the sticky error of a failed probe
    return nullptr;
  }
  try {
    return std::make_unique<CudaBackend>(0);
  } catch (const Error& err) {
    if (why) *why = err.what();
    return nullptr;
  }
}

}  // namespace dql
