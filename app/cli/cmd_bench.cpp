// bench: nvbench-style timing of the kernels, and comparison of two saved runs.
#include <fmt/format.h>
#include <fnmatch.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "backend_option.hpp"
#include "commands.hpp"
#include "kernels/bench/clocks.hpp"
#include "kernels/bench/engine.hpp"
#include "render.hpp"

namespace dql::cli {

namespace {

std::vector<std::pair<int64_t, int64_t>> parse_shapes(const std::string& text) {
  std::vector<std::pair<int64_t, int64_t>> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string one =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    out.push_back(take(front::parse_shape(one, "--shape")));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

void check_case(const BenchCase& c) {
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
      case BenchKind::Copy: break;
    }
  } catch (const Error& e) {
    throw UserError(fmt::format("{} at {}: {}", c.kernel_name(), c.shape_name(), e.what()));
  }
}

nlohmann::json row_json(const BenchRow& r) {
  nlohmann::json j = {{"kernel", r.kernel},
                      {"shape", r.shape},
                      {"samples", r.stats.samples},
                      {"median_us", r.stats.median_s * 1e6},
                      {"noise", r.stats.noise},
                      {"min_us", r.stats.min_s * 1e6},
                      {"max_us", r.stats.max_s * 1e6},
                      {"gbps", r.gbps},
                      {"elements_per_s", r.elements_per_s},
                      {"pct_of_copy", r.pct_of_copy},
                      {"bytes", r.c.bytes()},
                      {"cold", r.cold},
                      {"timed_out", r.timed_out},
                      {"backend", r.backend}};
  if (r.speedup) {
    j["speedup"] = *r.speedup;
    j["baseline"] = r.baseline;
  }
  return j;
}

std::string duration(double us) {
  if (us >= 1e6) return fmt::format("{:.3f} s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.3f} ms", us / 1e3);
  return fmt::format("{:.2f} us", us);
}

void compare(const std::string& a_path, const std::string& b_path) {
  const auto load = [](const std::string& p) {
    std::ifstream f(p);
    if (!f) throw UserError(fmt::format("cannot open '{}': give two JSON files written by bench --json", p));
    try {
      nlohmann::json j = nlohmann::json::parse(f);
      if (!j.contains("rows") || !j["rows"].is_array()) throw std::runtime_error("");
      return j;
    } catch (const std::exception&) {
      throw UserError(fmt::format("'{}' is not a file written by bench --json (no \"rows\" array)", p));
    }
  };
  const nlohmann::json a = load(a_path), b = load(b_path);
  fmt::print("A: {}\nB: {}\n", a.value("device", nlohmann::json::object()).value("name", "?"),
             b.value("device", nlohmann::json::object()).value("name", "?"));
  fmt::print("{:<26} {:<22} {:>12} {:>12} {:>8}  {}\n", "kernel", "shape", "A median", "B median", "A/B",
             "verdict");
  int matched = 0;
  for (const auto& ra : a["rows"]) {
    for (const auto& rb : b["rows"]) {
      if (ra.value("kernel", "") != rb.value("kernel", "") || ra.value("shape", "") != rb.value("shape", ""))
        continue;
      ++matched;
      const double ma = ra.value("median_us", 0.0), mb = rb.value("median_us", 0.0);
      const double ratio = mb > 0 ? ma / mb : 0;
      // The runs differ when the ratio is outside both runs' noise together.
      const double noise = ra.value("noise", 0.0) + rb.value("noise", 0.0);
      const char* verdict =
          std::fabs(std::log(ratio > 0 ? ratio : 1)) <= noise ? "SAME" : (ratio > 1 ? "FASTER" : "SLOWER");
      fmt::print("{:<26} {:<22} {:>12} {:>12} {:>7.3f}x  {}\n", ra.value("kernel", ""), ra.value("shape", ""),
                 duration(ma), duration(mb), ratio, verdict);
    }
  }
  if (matched == 0) throw UserError("the two files share no (kernel, shape) rows to compare");
  fmt::print("A/B > 1: B is faster; SAME when the difference is within the two runs' noise together\n");
}

}  // namespace

void add_bench(CLI::App& app) {
  struct Opts {
    std::string kernel = "*", shapes, json_path, csv_path, backend = "auto";
    int group = 128;
    bool cold = false, warm = false;
    std::vector<std::string> compare;
    double max_noise = 0.02, timeout = 8.0;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd =
      app.add_subcommand("bench", "Time the kernels: median, noise, GB/s and % of the copy bandwidth");
  cmd->add_option("--kernel", o->kernel,
                  "Which kernels, as a glob over names like dequant/awq-int4-fp16, quant/*, "
                  "permute/*")
      ->capture_default_str();
  cmd->add_option("--shape", o->shapes, "NxK[,NxK...] (default 4096x4096,8192x8192,8192x28672)");
  cmd->add_option("--group", o->group, "Group size of the integer formats")->capture_default_str();
  auto* c = cmd->add_flag("--cold", o->cold, "Flush the L2 before every sample (the default)");
  auto* w = cmd->add_flag("--warm", o->warm, "Keep the L2 warm between samples");
  c->excludes(w);
  cmd->add_option("--max-noise", o->max_noise, "Stop sampling once the relative IQR is below this")
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout, "Seconds of sampling per case at most")->capture_default_str();
  add_backend_option(cmd, o->backend);
  cmd->add_option("--json", o->json_path, "Write the results as JSON to this file");
  cmd->add_option("--csv", o->csv_path, "Write the results as CSV to this file");
  cmd->add_option("--compare", o->compare, "Compare two JSON files from earlier runs: A.json B.json")
      ->expected(2);
  cmd->callback([o] {
    if (!o->compare.empty()) {
      compare(o->compare[0], o->compare[1]);
      return;
    }
    if (o->group != 32 && o->group != 64 && o->group != 128) {
      throw UserError(fmt::format("--group {} is not supported: use 32, 64 or 128", o->group));
    }
    if (!(o->max_noise > 0) || !(o->timeout > 0))
      throw UserError("--max-noise and --timeout must be positive");
    std::vector<BenchCase> all = o->shapes.empty() ? default_bench_cases(o->group)
                                                   : bench_cases_for(parse_shapes(o->shapes), o->group);
    std::vector<BenchCase> cases;
    for (const BenchCase& bc : all) {
      if (fnmatch(o->kernel.c_str(), bc.kernel_name().c_str(), 0) == 0) cases.push_back(bc);
    }
    if (cases.empty()) {
      throw UserError(
          fmt::format("--kernel '{}' matches no kernel: names look like dequant/ft-int4-fp16, "
                      "quant/int4-sym, permute/int4-fwd",
                      o->kernel));
    }
    for (const BenchCase& bc : cases) check_case(bc);
    auto backend = open_backend(o->backend);
    BenchSettings s;
    s.cold = !o->warm;
    s.max_noise = o->max_noise;
    s.timeout_seconds = o->timeout;
    BenchControl control;
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    auto future = run_bench_async(*backend, cases, s, &control);
    while (future.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) {
      if (tty) fmt::print(stderr, "\rmeasuring {}/{} ...", control.done.load(), control.total.load());
    }
    if (tty) fmt::print(stderr, "\r{:40}\r", "");
    std::vector<BenchRow> rows;
    try {
      rows = future.get();
    } catch (const Error& e) {
      throw UserError(e.what());
    }
    const double copy = copy_bandwidth(*backend);
    const DeviceInfo& d = backend->info();
    const GpuClocks clocks = d.backend == "cuda" ? read_gpu_clocks() : GpuClocks{};
    const Style st = terminal_style();

    fmt::print("{}\n", st.bold(d.summary()));
    if (d.backend == "cuda") {
      fmt::print(
          "L2 {:.0f} MiB, memory {:.0f} GiB, device-to-device copy {:.0f} GB/s (read + write, measured "
          "now)\n",
          d.l2_bytes / 1048576.0, d.memory_bytes / 1073741824.0, copy);
      if (clocks.available) {
        fmt::print("clocks now: SM {} MHz (max {}), memory {} MHz (max {}), driver {}\n", clocks.sm_mhz,
                   clocks.sm_max_mhz, clocks.mem_mhz, clocks.mem_max_mhz, clocks.driver);
        if (!clocks.throttle.empty()) {
          fmt::print("{}\n",
                     st.bad("warning: clocks are held down (" + clocks.throttle + "): figures may be low"));
        }
      }
    } else {
      fmt::print("CPU time on {} threads; memory copy {:.1f} GB/s (read + write, measured now)\n", d.sms,
                 copy);
    }
    fmt::print(
        "median of the samples, L2 {} between samples; GB/s counts each byte read and written once\n\n",
        s.cold ? "flushed" : "warm");
    fmt::print("{:<26} {:<20} {:>7} {:>12} {:>7} {:>9} {:>7} {:>9}\n", "kernel", "shape", "samples", "median",
               "noise", "GB/s", "% copy", "speed-up");
    for (const BenchRow& r : rows) {
      const std::string speed = r.speedup ? fmt::format("{:.2f}x", *r.speedup) : "";
      fmt::print("{:<26} {:<20} {:>7} {:>12} {:>6.2f}% {:>9.1f} {:>6.1f}% {:>9}{}\n", r.kernel, r.shape,
                 r.stats.samples, duration(r.stats.median_s * 1e6), 100 * r.stats.noise, r.gbps,
                 r.pct_of_copy, speed, r.timed_out ? "  (timed out)" : "");
    }
    if (std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return r.speedup.has_value(); })) {
      fmt::print("speed-up: over the naive recipe of the same element width at the same shape\n");
    }
    nlohmann::json device = {{"backend", d.backend},
                             {"name", d.name},
                             {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                             {"sms", d.sms},
                             {"l2_bytes", d.l2_bytes},
                             {"memory_bytes", d.memory_bytes},
                             {"copy_gbps", copy}};
    if (clocks.available) {
      device["sm_clock_mhz"] = clocks.sm_mhz;
      device["memory_clock_mhz"] = clocks.mem_mhz;
      device["throttle"] = clocks.throttle;
      device["driver"] = clocks.driver;
    }
    if (!o->json_path.empty()) {
      nlohmann::json j = {{"device", device}, {"rows", nlohmann::json::array()}};
      for (const BenchRow& r : rows) j["rows"].push_back(row_json(r));
      std::ofstream f(o->json_path);
      if (!f)
        throw UserError(
            fmt::format("cannot write '{}': check the folder exists and is writable", o->json_path));
      f << j.dump(2) << "\n";
    }
    if (!o->csv_path.empty()) {
      std::ofstream f(o->csv_path);
      if (!f)
        throw UserError(
            fmt::format("cannot write '{}': check the folder exists and is writable", o->csv_path));
      f << "kernel,shape,samples,median_us,noise,min_us,max_us,gbps,pct_of_copy,speedup,baseline,cold,"
           "backend\n";
      for (const BenchRow& r : rows) {
        f << fmt::format("{},{},{},{:.4f},{:.5f},{:.4f},{:.4f},{:.2f},{:.2f},{},{},{},{}\n", r.kernel,
                         r.shape, r.stats.samples, r.stats.median_s * 1e6, r.stats.noise, r.stats.min_s * 1e6,
                         r.stats.max_s * 1e6, r.gbps, r.pct_of_copy,
                         r.speedup ? fmt::format("{:.4f}", *r.speedup) : "", r.baseline,
                         r.cold ? "cold" : "warm", r.backend);
      }
    }
  });
}

}  // namespace dql::cli
