#include "engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>

#include "kernels/backend/backend.hpp"
#include "kernels/gemv/split.hpp"

namespace dql {

namespace {

const char* scheme_short(quant::Scheme s) {
  switch (s) {
    case quant::Scheme::Int8Sym: return "int8-sym";
    case quant::Scheme::Int4Sym: return "int4-sym";
    case quant::Scheme::Int4Asym: return "int4-asym";
    case quant::Scheme::Nf4: return "nf4";
  }
  return "?";
}

// Bytes of a packed [N, K] matrix with its scales (zeros, absmax) in the case's format.
double packed_bytes(quant::Scheme scheme, int64_t n, int64_t k, int group) {
  const double elems = static_cast<double>(n) * static_cast<double>(k);
  const double groups = elems / group;
  double b = elems * quant::scheme_bits(scheme) / 8.0;
  switch (scheme) {
    case quant::Scheme::Nf4: b += groups * 4; break;         // fp32 absmax
    case quant::Scheme::Int4Asym: b += groups * 2.5; break;  // fp16 scale + a nibble of zero
    default: b += groups * 2; break;                         // fp16 scale
  }
  return b;
}

const char* dtype_short(recipes::OutType t) { return t == recipes::OutType::F16 ? "fp16" : "bf16"; }

std::string gemv_kernel_name(const BenchCase& c) {
  const char* family = c.m > 16 ? "gemm" : "gemv";
  const char* dt = dtype_short(c.dtype);
  if (c.path == gemv::Path::Cublas) return fmt::format("{}/cublas-{}", family, dt);
  if (c.path == gemv::Path::Online) return fmt::format("{}/w8a8-online-{}", family, dt);
  if (c.scheme == quant::Scheme::Nf4) return fmt::format("{}/nf4a16-{}", family, dt);
  const char* w = quant::scheme_bits(c.scheme) == 8 ? "w8a16" : "w4a16";
  const char* layout =
      c.layout == quant::Layout::Awq ? "awq" : (c.layout == quant::Layout::Ft ? "ft" : "plain");
  const char* naive = c.path == gemv::Path::Naive ? "-naive" : "";
  return fmt::format("{}/{}-{}{}-{}", family, w, layout, naive, dt);
}

}  // namespace

quant::Scheme scheme_of_recipe(recipes::RecipeId id) {
  switch (id) {
    case recipes::RecipeId::AwqInt4F16: return quant::Scheme::Int4Asym;
    case recipes::RecipeId::Nf4F16: return quant::Scheme::Nf4;
    default: return recipes::recipe_bits(id) == 8 ? quant::Scheme::Int8Sym : quant::Scheme::Int4Sym;
  }
}

quant::Layout layout_of_recipe(recipes::RecipeId id) {
  using R = recipes::RecipeId;
  switch (id) {
    case R::AwqInt4F16: return quant::Layout::Awq;
    case R::FtInt4F16:
    case R::FtInt4Bf16:
    case R::FtUint8F16:
    case R::FtUint8Bf16: return quant::Layout::Ft;
    default: return quant::Layout::Plain;
  }
}

std::string BenchCase::kernel_name() const {
  switch (kind) {
    case BenchKind::Copy: return "copy";
    case BenchKind::Dequant: return fmt::format("dequant/{}", recipes::spec_of(recipe).name);
    case BenchKind::Quant: return fmt::format("quant/{}", scheme_short(scheme));
    case BenchKind::Permute:
      return fmt::format("permute/int{}-{}", quant::scheme_bits(scheme), forward ? "fwd" : "inv");
    case BenchKind::Gemv: return gemv_kernel_name(*this);
  }
  return "?";
}

bool BenchCase::takes_gemm_rows() const {
  return kind == BenchKind::Gemv && layout == quant::Layout::Ft && scheme == quant::Scheme::Int4Sym &&
         (path == gemv::Path::Fast || path == gemv::Path::Naive) && gemv::wide_shape_fits(n, k, group) &&
         gemv::hopper_takes(m, n, k);
}

std::string gemm_rows_where() {
  return fmt::format(
      "from {} rows of X, and from {} where N is at least {}, or at least {} with K at least {}",
      gemv::kWideRows + 1, gemv::kHopperLargeFromRows, gemv::kHopperWideN, gemv::kHopperMidN,
      gemv::kHopperMidK);
}

bool BenchCase::takes_ring() const {
  return kind == BenchKind::Gemv && layout == quant::Layout::Ft && scheme == quant::Scheme::Int4Sym &&
         (path == gemv::Path::Fast || path == gemv::Path::Naive) && gemv::walk16_takes(90, m, n, k, group);
}

std::vector<BenchCase> with_ring_twins(const std::vector<BenchCase>& cases) {
  std::vector<BenchCase> out;
  for (const BenchCase& c : cases) {
    out.push_back(c);
    if (c.takes_ring()) {
      out.push_back(c);
      out.back().ring = true;
    }
  }
  return out;
}

std::string BenchCase::shape_name() const {
  if (kind == BenchKind::Copy) return fmt::format("{} MiB", copy_bytes >> 20);
  if (kind == BenchKind::Permute) return fmt::format("{}x{}", n, k);
  if (kind == BenchKind::Gemv) {
    if (path == gemv::Path::Cublas) return fmt::format("M={} {}x{}", m, n, k);
    const char* g = scheme == quant::Scheme::Nf4 ? "b" : "g";
    const char* form = ring ? " ring" : "";
    if (group == k) return fmt::format("M={} {}x{} per-ch{}", m, n, k, form);
    if (gemm_rows != 0) return fmt::format("M={} {}x{} {}{} rows {}", m, n, k, g, group, gemm_rows);
    return fmt::format("M={} {}x{} {}{}{}", m, n, k, g, group, form);
  }
  const bool nf4 = (kind == BenchKind::Dequant && recipe == recipes::RecipeId::Nf4F16) ||
                   (kind == BenchKind::Quant && scheme == quant::Scheme::Nf4);
  if (group == k) return fmt::format("{}x{} per-ch", n, k);
  return fmt::format("{}x{} {}{}", n, k, nf4 ? "b" : "g", group);
}

double BenchCase::elements() const {
  if (kind == BenchKind::Gemv)
    return static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return kind == BenchKind::Copy ? static_cast<double>(copy_bytes)
                                 : static_cast<double>(n) * static_cast<double>(k);
}

double BenchCase::bytes() const {
  const double elems = static_cast<double>(n) * static_cast<double>(k);
  switch (kind) {
    case BenchKind::Copy: return 2.0 * static_cast<double>(copy_bytes);
    case BenchKind::Dequant: return packed_bytes(scheme_of_recipe(recipe), n, k, group) + elems * 2.0;
    case BenchKind::Quant: return elems * 4.0 + packed_bytes(scheme, n, k, group);
    case BenchKind::Permute: return 2.0 * elems * quant::scheme_bits(scheme) / 8.0;
    case BenchKind::Gemv: {
      // The weight in its format (fp16 / bf16 for cuBLAS), X read and Y written once.
      const double w = path == gemv::Path::Cublas ? elems * 2.0 : packed_bytes(scheme, n, k, group);
      return w + 2.0 * static_cast<double>(m) * static_cast<double>(k + n);
    }
  }
  return 0;
}

BenchStats summarize(std::vector<double> v) {
  BenchStats s;
  s.samples = static_cast<int>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) {  // linear interpolation between order statistics
    const double pos = q * static_cast<double>(v.size() - 1);
    const size_t i = static_cast<size_t>(pos);
    const double f = pos - static_cast<double>(i);
    return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
  };
  s.median_s = at(0.5);
  s.q1_s = at(0.25);
  s.q3_s = at(0.75);
  s.noise = s.median_s > 0 ? (s.q3_s - s.q1_s) / s.median_s : 0;
  s.min_s = v.front();
  s.max_s = v.back();
  return s;
}

double BenchTarget::time_back_to_back(int runs) {
  double t = 0;
  for (int i = 0; i < runs; ++i) t += time_once(false);
  return t / runs;
}

std::string timing_name(bool cold, bool back_to_back) {
  return std::string(cold ? "cold" : "warm") + (back_to_back ? ", back to back" : "");
}

std::string timing_name(const BenchRow& r) { return timing_name(r.cold, r.runs_per_sample > 0); }

bool cold_back_to_back_on_cpu(const BenchSettings& s, const std::string& backend) {
  return s.back_to_back && s.cold && backend == "cpu";
}

int back_to_back_copies(double case_bytes, size_t l2_bytes) {
  if (!(case_bytes > 0)) return kMostCopies;
  const double others = std::ceil(3.0 * static_cast<double>(l2_bytes) / case_bytes);
  return static_cast<int>(std::clamp(others + 1, 2.0, static_cast<double>(kMostCopies)));
}

bool copies_fill_l2(const BenchRow& r, size_t l2_bytes) {
  return static_cast<double>(r.copies - 1) * r.bytes >= 3.0 * static_cast<double>(l2_bytes);
}

namespace {

// Runs a back-to-back sample queues: about s.span_seconds of them by the warm-up's last figure, at
// least 2, and few enough that the queue holds them (256 launches) while the stream is held. The
// warm-up goes round every copy at least once, so that the first samples find none in the L2 from
// its filling.
int runs_a_sample(BenchTarget& target, const BenchSettings& s) {
  double t = 0;
  const int spans = std::max({1, s.warmup, (target.copies() + 3) / 4});
  for (int i = 0; i < spans; ++i) t = target.time_back_to_back(4);
  const int launches = std::max<int>(1, static_cast<int>(target.launches().size()));
  const int most = std::max(2, 256 / launches);
  if (!(t > 0)) return most;
  return static_cast<int>(std::clamp(std::ceil(s.span_seconds / t), 2.0, static_cast<double>(most)));
}

}  // namespace

BenchRow measure(BenchTarget& target, const BenchCase& c, const BenchSettings& s,
                 const std::atomic<bool>* cancel) {
  int runs = 0;  // a back-to-back sample's runs
  if (s.back_to_back)
    runs = runs_a_sample(target, s);
  else
    for (int i = 0; i < s.warmup; ++i) target.time_once(s.cold);
  std::vector<double> samples;
  double total = 0;  // device time sampled, every run counted
  const auto start = std::chrono::steady_clock::now();
  bool timed_out = false;
  while (true) {
    if (cancel && cancel->load()) break;
    const double t = runs > 0 ? target.time_back_to_back(runs) : target.time_once(s.cold);
    samples.push_back(t);
    total += t * std::max(runs, 1);
    const int n = static_cast<int>(samples.size());
    if (n >= s.min_samples && total >= s.min_seconds) {
      // Checking the noise costs a sort: do it every few samples.
      if (n % 8 == 0 || n == s.min_samples) {
        if (summarize(samples).noise <= s.max_noise) break;
      }
    }
    if (n >= s.max_samples) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >=
        s.timeout_seconds) {
      timed_out = true;
      break;
    }
  }
  BenchRow r;
  r.c = c;
  r.kernel = c.kernel_name();
  r.shape = c.shape_name();
  r.cold = s.cold;
  r.runs_per_sample = runs;
  r.copies = target.copies();
  r.stats = summarize(samples);
  r.timed_out = timed_out;
  r.launches = target.launches();
  r.bytes = c.bytes();
  if (r.stats.median_s > 0) {
    r.gbps = r.bytes / r.stats.median_s / 1e9;
    r.elements_per_s = c.elements() / r.stats.median_s;
  }
  return r;
}

double copy_bandwidth(Backend& backend) {
  static std::mutex m;
  static std::map<const Backend*, double> cache;
  std::lock_guard<std::mutex> lock(m);
  auto it = cache.find(&backend);
  if (it != cache.end()) return it->second;
  BenchCase c;
  c.kind = BenchKind::Copy;
  // Large enough to stream from memory: at least 8x the L2, 1 GiB on a GPU.
  c.copy_bytes = backend.info().backend == "cuda" ? (int64_t{1} << 30) : (int64_t{256} << 20);
  auto target = backend.bench_target(c, 1);
  BenchSettings s;
  s.min_samples = 20;
  const BenchRow r = measure(*target, c, s, nullptr);
  cache[&backend] = r.gbps;
  return r.gbps;
}

std::optional<recipes::RecipeId> baseline_of(recipes::RecipeId id) {
  using R = recipes::RecipeId;
  if (id == R::NaiveInt4F16 || id == R::NaiveInt8F16 || id == R::Nf4F16) return std::nullopt;
  return recipes::recipe_bits(id) == 8 ? R::NaiveInt8F16 : R::NaiveInt4F16;
}

std::vector<BenchRow> run_bench(Backend& backend, const std::vector<BenchCase>& cases, const BenchSettings& s,
                                BenchControl* control) {
  if (cold_back_to_back_on_cpu(s, backend.info().backend)) {
    throw Error(
        "cold back-to-back runs take each their own copy of the buffers on a GPU, and this run's backend is "
        "the CPU twin: time back to back warm (the CPU twin's runs one after another), or cold without back "
        "to back");
  }
  if (control) {
    control->total = static_cast<int>(cases.size()) + 1;
    control->done = 0;
  }
  const double copy = copy_bandwidth(backend);
  if (control) control->done = 1;
  std::vector<BenchRow> rows;
  for (const BenchCase& c : cases) {
    if (control && control->cancel.load()) break;
    const int copies = s.back_to_back && s.cold ? back_to_back_copies(c.bytes(), backend.info().l2_bytes) : 1;
    auto target = backend.bench_target(c, copies);
    BenchRow r = measure(*target, c, s, control ? &control->cancel : nullptr);
    r.backend = backend.info().backend;
    r.pct_of_copy = copy > 0 ? 100.0 * r.gbps / copy : 0;
    rows.push_back(std::move(r));
    if (control) ++control->done;
  }
  for (BenchRow& r : rows) {
    if (r.c.kind != BenchKind::Gemv || r.c.path == gemv::Path::Cublas) continue;
    for (const BenchRow& b : rows) {
      if (b.c.kind == BenchKind::Gemv && b.c.path == gemv::Path::Cublas && b.c.m == r.c.m && b.c.n == r.c.n &&
          b.c.k == r.c.k && b.c.dtype == r.c.dtype && r.stats.median_s > 0) {
        r.speedup = b.stats.median_s / r.stats.median_s;
        r.baseline = b.kernel;
      }
    }
  }
  for (BenchRow& r : rows) {
    if (r.c.kind != BenchKind::Dequant) continue;
    const auto base = baseline_of(r.c.recipe);
    if (!base) continue;
    for (const BenchRow& b : rows) {
      if (b.c.kind == BenchKind::Dequant && b.c.recipe == *base && b.c.n == r.c.n && b.c.k == r.c.k &&
          b.c.group == r.c.group && r.stats.median_s > 0) {
        r.speedup = b.stats.median_s / r.stats.median_s;
        r.baseline = recipes::spec_of(*base).name;
      }
    }
  }
  return rows;
}

std::future<std::vector<BenchRow>> run_bench_async(Backend& backend, std::vector<BenchCase> cases,
                                                   BenchSettings s, BenchControl* control) {
  return std::async(std::launch::async, [&backend, cases = std::move(cases), s, control] {
    return run_bench(backend, cases, s, control);
  });
}

namespace {

// The rows of X of the GEMV cases: those asked for, else 1 and 16.
std::vector<int64_t> gemv_rows(const std::vector<int64_t>& ms) {
  return ms.empty() ? std::vector<int64_t>{1, 16} : ms;
}

}  // namespace

std::vector<BenchCase> default_bench_cases(int group, const std::vector<int64_t>& ms,
                                           const std::vector<recipes::OutType>& dtypes) {
  std::vector<BenchCase> cases =
      bench_cases_for({{4096, 4096}, {8192, 8192}, {8192, 28672}}, group, ms, dtypes);
  for (BenchCase& c : gemv_bench_cases({{28672, 8192}}, gemv_rows(ms), group, dtypes)) cases.push_back(c);
  if (ms.empty()) {
    for (BenchCase& c : gemv_bench_cases({{8192, 8192}}, {64, 256}, group, dtypes)) cases.push_back(c);
  }
  return cases;
}

std::vector<BenchCase> gemv_bench_cases(const std::vector<std::pair<int64_t, int64_t>>& shapes,
                                        const std::vector<int64_t>& ms, int group,
                                        const std::vector<recipes::OutType>& dtypes) {
  using quant::Layout;
  using quant::Scheme;
  struct Variant {
    gemv::Path path;
    Scheme scheme;
    Layout layout;
    int group;  // 0: the bench's group size; -1: one scale per output channel
  };
  const Variant variants[] = {
      {gemv::Path::Cublas, Scheme::Int4Sym, Layout::Ft, 0},
      {gemv::Path::Fast, Scheme::Int4Sym, Layout::Ft, 0},
      {gemv::Path::Naive, Scheme::Int4Sym, Layout::Ft, 0},
      {gemv::Path::Fast, Scheme::Int8Sym, Layout::Ft, -1},
      {gemv::Path::Naive, Scheme::Int8Sym, Layout::Ft, -1},
      {gemv::Path::Fast, Scheme::Int4Asym, Layout::Awq, 0},
      {gemv::Path::Fast, Scheme::Nf4, Layout::Plain, 64},
      {gemv::Path::Online, Scheme::Int8Sym, Layout::Plain, 0},
  };
  std::vector<BenchCase> cases;
  for (const auto& [n, k] : shapes) {
    for (const recipes::OutType t : dtypes) {
      for (int64_t m : ms) {
        for (const Variant& v : variants) {
          if (m > 16 && v.path != gemv::Path::Cublas &&
              !(v.layout == Layout::Ft && v.scheme == Scheme::Int4Sym)) {
            continue;  // beyond the GEMV's 16 rows: the tensor-core W4A16 GEMM and its baselines
          }
          // bf16 X: the mixed-GEMM layout's kernels and cuBLAS (the AWQ, NF4 and online paths take fp16).
          if (t == recipes::OutType::BF16 && v.path != gemv::Path::Cublas && v.layout != Layout::Ft) continue;
          BenchCase c;
          c.kind = BenchKind::Gemv;
          c.n = n, c.k = k, c.m = m;
          c.dtype = t;
          c.path = v.path;
          c.scheme = v.scheme;
          c.layout = v.layout;
          c.group = v.group == 0 ? group : (v.group < 0 ? static_cast<int>(k) : v.group);
          if (v.path == gemv::Path::Online && c.group > 128) c.group = 128;
          cases.push_back(c);
        }
      }
    }
  }
  return cases;
}

void check_bench_case(const BenchCase& c) {
  try {
    switch (c.kind) {
      case BenchKind::Dequant:
        check_quant_shape(QuantSpec{scheme_of_recipe(c.recipe), layout_of_recipe(c.recipe), c.group}, c.n,
                          c.k);
        break;
      case BenchKind::Quant:
        check_quant_shape(QuantSpec{c.scheme, quant::Layout::Plain, c.group}, c.n, c.k);
        break;
      case BenchKind::Permute: check_permute_shape(quant::scheme_bits(c.scheme), c.n, c.k); break;
      case BenchKind::Gemv: {
        const QuantSpec spec{c.scheme, c.layout, c.group};
        check_quant_shape(spec, c.n, c.k);
        QuantizedMatrix w{spec, c.n, c.k, {}, {}, {}, {}};
        GemvRequest r;
        r.path = c.path, r.dtype = c.dtype, r.m = c.m;
        r.x.resize(static_cast<size_t>(c.m * c.k));
        check_gemv(w, r);
        break;
      }
      case BenchKind::Copy: break;
    }
  } catch (const Error& e) {
    throw Error(fmt::format("{} at {}: {}", c.kernel_name(), c.shape_name(), e.what()));
  }
}

std::vector<BenchCase> bench_cases_for(const std::vector<std::pair<int64_t, int64_t>>& shapes, int group,
                                       const std::vector<int64_t>& ms,
                                       const std::vector<recipes::OutType>& dtypes) {
  std::vector<BenchCase> cases;
  for (const auto& [n, k] : shapes) {
    for (const recipes::RecipeInfo& info : recipes::all_recipes()) {
      BenchCase c;
      c.kind = BenchKind::Dequant;
      c.n = n, c.k = k;
      c.recipe = info.spec->id;
      c.group = info.spec->id == recipes::RecipeId::Nf4F16 ? 64 : group;
      cases.push_back(c);
    }
    for (quant::Scheme sc : {quant::Scheme::Int8Sym, quant::Scheme::Int4Sym, quant::Scheme::Nf4}) {
      BenchCase c;
      c.kind = BenchKind::Quant;
      c.n = n, c.k = k;
      c.scheme = sc;
      c.group = sc == quant::Scheme::Int8Sym ? static_cast<int>(k) : (sc == quant::Scheme::Nf4 ? 64 : group);
      cases.push_back(c);
    }
    for (quant::Scheme sc : {quant::Scheme::Int8Sym, quant::Scheme::Int4Sym}) {
      for (bool fwd : {true, false}) {
        BenchCase c;
        c.kind = BenchKind::Permute;
        c.n = n, c.k = k;
        c.scheme = sc;
        c.forward = fwd;
        cases.push_back(c);
      }
    }
  }
  for (BenchCase& c : gemv_bench_cases(shapes, gemv_rows(ms), group, dtypes)) cases.push_back(c);
  return cases;
}

}  // namespace dql
