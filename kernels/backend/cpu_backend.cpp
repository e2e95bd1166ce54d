// The CPU twin: the same per-item functions the CUDA kernels run, over every item, on every core.
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

#include "backend.hpp"
#include "host_steps.hpp"
#include "kernels/gemv/gemv_cpu.hpp"
#include "kernels/recipes/reference.hpp"
#include "parallel.hpp"

namespace dql {

namespace {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t c = line.find(':');
      if (c != std::string::npos) return line.substr(c + 2);
    }
  }
  return "CPU";
}

// Buffers for one benchmark case in host memory; each sample is the wall time of the twin's
// loop over all items on every core (after overwriting a buffer larger than the caches when cold).
class CpuBenchTarget final : public BenchTarget {
 public:
  explicit CpuBenchTarget(const BenchCase& c) {
    const int64_t n = c.n, k = c.k, elems = n * k;
    switch (c.kind) {
      case BenchKind::Copy: {
        a_ = random_words(static_cast<size_t>(c.copy_bytes / 4), 1, ~0u, 0u);
        b_.resize(a_.size());
        run_ = [this] {
          const int64_t chunk = 1 << 16, chunks = (static_cast<int64_t>(a_.size()) + chunk - 1) / chunk;
          parallel_items(chunks, [&](int64_t i) {
            const size_t b = static_cast<size_t>(i * chunk), e = std::min(a_.size(), b + chunk);
            std::memcpy(b_.data() + b, a_.data() + b, (e - b) * 4);
          });
        };
        break;
      }
      case BenchKind::Dequant: {
        const quant::Scheme scheme = scheme_of_recipe(c.recipe);
        const size_t groups = static_cast<size_t>(elems / c.group);
        a_ = random_words(static_cast<size_t>(elems * quant::scheme_bits(scheme) / 32), 2, ~0u, 0u);
        b_ = random_words((groups + 1) / 2, 3, 0x03FF03FFu, 0x20002000u);
        c_ = random_words(groups / 8 + 1, 4, ~0u, 0u);
        d_ = random_words(groups, 5, 0x007FFFFFu, 0x3C000000u);
        out16_.resize(static_cast<size_t>(elems));
        dq_ = quant::DequantArgs{scheme,
                                 layout_of_recipe(c.recipe),
                                 c.recipe,
                                 n,
                                 k,
                                 c.group,
                                 a_.data(),
                                 reinterpret_cast<const uint16_t*>(b_.data()),
                                 c_.data(),
                                 reinterpret_cast<const float*>(d_.data()),
                                 out16_.data()};
        run_ = [this] {
          parallel_items(quant::dequant_items(dq_), [&](int64_t i) { quant::dequant_word(dq_, i); });
        };
        break;
      }
      case BenchKind::Quant: {
        const size_t groups = static_cast<size_t>(elems / c.group);
        a_ = random_words(static_cast<size_t>(elems), 6, 0x807FFFFFu, 0x3C000000u);
        codes_.resize(static_cast<size_t>(elems));
        scales_.resize(groups);
        scales_out_.resize(groups);
        zeros_.resize(groups);
        absmax_.resize(groups);
        b_.resize(static_cast<size_t>(elems * quant::scheme_bits(c.scheme) / 32));
        q_ = quant::QuantArgs{c.scheme,
                              n,
                              k,
                              c.group,
                              reinterpret_cast<const float*>(a_.data()),
                              codes_.data(),
                              scales_.data(),
                              zeros_.data(),
                              absmax_.data()};
        p_ = quant::PackArgs{
            c.scheme,  quant::Layout::Plain, n,      k, c.group, codes_.data(), scales_.data(), zeros_.data(),
            b_.data(), scales_out_.data(),   nullptr};
        const bool nf4 = c.scheme == quant::Scheme::Nf4;
        run_ = [this, nf4, groups] {
          parallel_items(quant::quant_items(q_), [&](int64_t i) { quant::quant_group(q_, i); });
          parallel_items(quant::pack_items(p_), [&](int64_t i) { quant::pack_word(p_, i); });
          if (!nf4)
            parallel_items(static_cast<int64_t>(groups), [&](int64_t i) { quant::pack_params(p_, i); });
        };
        break;
      }
      case BenchKind::Gemv: {
        QuantSpec spec{c.scheme, c.layout, c.group};
        wq_ = random_quantized(spec, n, k, 11);
        req_ = random_gemv_request(c, 12);
        if (c.path == gemv::Path::Cublas) {
          auto cpu = make_cpu_backend();
          deq_ = cpu->dequantize(wq_, dequant_recipe_for(spec, c.dtype));
        }
        run_ = [this] {
          const gemv::Problem p{req_.path, req_.dtype, req_.m, req_.x.data(), req_.bias.data(), req_.epi};
          out16_ = gemv::gemv_cpu(weights_of(wq_), p, &deq_);
        };
        break;
      }
      case BenchKind::Permute: {
        a_ = random_words(static_cast<size_t>(elems * quant::scheme_bits(c.scheme) / 32), 7, ~0u, 0u);
        b_.resize(a_.size());
        pm_ = quant::PermuteArgs{quant::scheme_bits(c.scheme), n, k, a_.data(), b_.data()};
        const bool fwd = c.forward;
        run_ = [this, fwd] {
          parallel_items(quant::permute_items(pm_), [&](int64_t i) {
            fwd ? quant::ft_forward_word(pm_, i) : quant::ft_inverse_word(pm_, i);
          });
        };
        break;
      }
    }
  }

  double time_once(bool cold) override {
    if (cold) {
      if (flush_.empty()) flush_.resize(size_t{256} << 20);  // larger than the caches
      std::memset(flush_.data(), ++flush_value_, flush_.size());
    }
    const auto t0 = std::chrono::steady_clock::now();
    run_();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

 private:
  std::vector<uint8_t> flush_;
  int flush_value_ = 0;
  std::vector<uint32_t> a_, b_, c_, d_;
  std::vector<uint16_t> out16_, scales_, scales_out_;
  std::vector<int8_t> codes_;
  std::vector<uint8_t> zeros_;
  std::vector<float> absmax_;
  std::function<void()> run_;
  quant::DequantArgs dq_{};
  quant::QuantArgs q_{};
  quant::PackArgs p_{};
  quant::PermuteArgs pm_{};
  QuantizedMatrix wq_;
  GemvRequest req_;
  std::vector<uint16_t> deq_;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend() {
    info_.backend = "cpu";
    info_.name = cpu_model();
    info_.sms = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  const DeviceInfo& info() const override { return info_; }

  QuantizedMatrix quantize(const Tensor& w, const QuantSpec& spec) override {
    const int64_t n = w.shape.at(0), k = w.shape.at(1);
    check_quant_shape(spec, n, k);
    QuantizedMatrix q{spec, n, k, {}, {}, {}, {}};
    std::vector<int8_t> codes(static_cast<size_t>(n * k));
    const size_t groups = group_count(spec, n, k);
    std::vector<uint16_t> scales(groups);
    std::vector<uint8_t> zeros(groups);
    if (spec.scheme == quant::Scheme::Nf4) q.absmax.resize(groups);
    const quant::QuantArgs qa{
        spec.scheme,    n, k, spec.group, w.as<float>(), codes.data(), scales.data(), zeros.data(),
        q.absmax.data()};
    parallel_items(quant::quant_items(qa), [&](int64_t i) { quant::quant_group(qa, i); });
    if (spec.scheme != quant::Scheme::Nf4) check_scales(spec, scales, k);

    std::vector<uint32_t> plain(qword_count(spec, n, k));
    if (spec.scheme != quant::Scheme::Nf4) q.scales.resize(groups);
    if (spec.layout == quant::Layout::Awq) q.qzeros.resize(groups / 8);
    const quant::PackArgs pa{spec.scheme,
                             spec.layout,
                             n,
                             k,
                             spec.group,
                             codes.data(),
                             scales.data(),
                             zeros.data(),
                             plain.data(),
                             q.scales.data(),
                             q.qzeros.data()};
    parallel_items(quant::pack_items(pa), [&](int64_t i) { quant::pack_word(pa, i); });
    if (spec.scheme != quant::Scheme::Nf4) {
      parallel_items(static_cast<int64_t>(groups), [&](int64_t i) { quant::pack_params(pa, i); });
    }
    q.qwords = spec.layout == quant::Layout::Ft ? permute(quant::scheme_bits(spec.scheme), n, k, plain, true)
                                                : std::move(plain);
    return q;
  }

  std::vector<uint16_t> dequantize(const QuantizedMatrix& q, recipes::RecipeId recipe) override {
    check_recipe_reads(q.spec, recipe);
    std::vector<uint16_t> out(static_cast<size_t>(q.n * q.k));
    const quant::DequantArgs da{
        q.spec.scheme,   q.spec.layout,   recipe,          q.n,       q.k, q.spec.group, q.qwords.data(),
        q.scales.data(), q.qzeros.data(), q.absmax.data(), out.data()};
    parallel_items(quant::dequant_items(da), [&](int64_t i) { quant::dequant_word(da, i); });
    return out;
  }

  std::vector<uint32_t> permute(int bits, int64_t n, int64_t k, const std::vector<uint32_t>& words,
                                bool forward) override {
    check_permute_shape(bits, n, k);
    std::vector<uint32_t> out(words.size());
    const quant::PermuteArgs pa{bits, n, k, words.data(), out.data()};
    parallel_items(quant::permute_items(pa), [&](int64_t i) {
      forward ? quant::ft_forward_word(pa, i) : quant::ft_inverse_word(pa, i);
    });
    return out;
  }

  std::vector<uint32_t> trace_values(recipes::RecipeId id, const recipes::Inputs& in) override {
    std::vector<uint32_t> v;
    for (const auto& s : recipes::trace_recipe(id, in).steps) v.push_back(s.value);
    return v;
  }

  std::vector<uint16_t> gemv(const QuantizedMatrix& w, const GemvRequest& r) override {
    check_gemv(w, r);
    std::vector<uint16_t> deq;
    if (r.path == gemv::Path::Cublas) deq = dequantize(w, dequant_recipe_for(w.spec, r.dtype));
    const gemv::Problem p{r.path, r.dtype, r.m, r.x.data(), r.bias.empty() ? nullptr : r.bias.data(), r.epi};
    return gemv::gemv_cpu(weights_of(w), p, &deq);
  }

  std::unique_ptr<BenchTarget> bench_target(const BenchCase& c, int /*copies*/) override {
    return std::make_unique<CpuBenchTarget>(c);
  }

  // A sample: 2^24 registers spread over the whole range, against the integer reference.
  VerifyResult verify(recipes::RecipeId id) override {
    const auto t0 = std::chrono::steady_clock::now();
    constexpr int64_t kSample = int64_t{1} << 24;
    std::atomic<uint64_t> bad{0}, first{UINT64_MAX};
    const int e = recipes::recipe_elems(id);
    parallel_items(kSample, [&](int64_t i) {
      const uint32_t reg = static_cast<uint32_t>(static_cast<uint64_t>(i) * 0x9E3779B1ull + (i >> 8));
      const uint32_t in[2] = {reg, 0x3F800000u};
      uint32_t out[4];
      recipes::run_plain(id, in, out);
      for (int el = 0; el < e; ++el) {
        const uint32_t got = (el % 2) ? bits::hi16(out[el / 2]) : bits::lo16(out[el / 2]);
        if (got != recipes::reference_bits(id, reg, in[1], el)) {
          ++bad;
          uint64_t f = first.load();
          while (reg < f && !first.compare_exchange_weak(f, reg)) {
          }
          break;
        }
      }
    });
    VerifyResult r;
    r.checked = kSample;
    r.mismatches = bad;
    r.first_mismatch = bad ? first.load() : 0;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }

 private:
  DeviceInfo info_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace dql
