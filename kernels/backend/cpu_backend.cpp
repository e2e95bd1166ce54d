// The CPU twin: the same per-item functions the CUDA kernels run, over every item, on every core.
#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "backend.hpp"
#include "host_steps.hpp"
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
    const quant::QuantArgs qa{spec.scheme, n,         k,           spec.group, w.as<float>(),
                              codes.data(), scales.data(), zeros.data(), q.absmax.data()};
    parallel_items(quant::quant_items(qa), [&](int64_t i) { quant::quant_group(qa, i); });
    if (spec.scheme != quant::Scheme::Nf4) check_scales(spec, scales, n, k);

    std::vector<uint32_t> plain(qword_count(spec, n, k));
    if (spec.scheme != quant::Scheme::Nf4) q.scales.resize(groups);
    if (spec.layout == quant::Layout::Awq) q.qzeros.resize(groups / 8);
    const quant::PackArgs pa{spec.scheme, spec.layout,   n,           k,        spec.group, codes.data(),
                             scales.data(), zeros.data(), plain.data(), q.scales.data(), q.qzeros.data()};
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
    const quant::DequantArgs da{q.spec.scheme,   q.spec.layout,   recipe,          q.n,       q.k,
                                q.spec.group,    q.qwords.data(), q.scales.data(), q.qzeros.data(),
                                q.absmax.data(), out.data()};
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
