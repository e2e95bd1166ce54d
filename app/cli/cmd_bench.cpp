// bench: nvbench-style timing of the kernels, and comparison of two saved runs.
#include <fmt/format.h>
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "app/common/bench_report.hpp"
#include "app/common/parse.hpp"
#include "backend_option.hpp"
#include "commands.hpp"
#include "kernels/bench/clocks.hpp"
#include "kernels/bench/engine.hpp"
#include "kernels/gemv/split.hpp"
#include "render.hpp"

namespace dql::cli {

namespace {

void check_case(const BenchCase& c) {
  try {
    check_bench_case(c);
  } catch (const Error& e) {
    throw UserError(e.what());
  }
}

void compare(const std::string& a_path, const std::string& b_path) {
  front::Comparison c;
  try {
    c = front::compare_bench(front::load_bench_json(a_path), front::load_bench_json(b_path));
  } catch (const Error& e) {
    throw UserError(e.what());
  }
  fmt::print("A: {}\nB: {}\n", c.a_device, c.b_device);
  fmt::print("{:<26} {:<22} {:>12} {:>12} {:>8} {:>7}  {}\n", "kernel", "shape", "A median", "B median",
             "A/B", "noise", "verdict");
  bool other = false, timing = false;
  for (const front::CompareRow& r : c.rows) {
    fmt::print("{:<26} {:<22} {:>12} {:>12} {:>7.3f}x {:>6.1f}%  {}{}{}\n", r.kernel, r.shape,
               front::format_duration(r.a_us), front::format_duration(r.b_us), r.ratio, 100 * r.noise,
               r.verdict, r.other_kernels ? " *" : "", r.other_timing ? " +" : "");
    other = other || r.other_kernels;
    timing = timing || r.other_timing;
  }
  fmt::print(
      "A/B > 1: B is faster; noise: the two runs' relative IQRs added, the band within which a row is "
      "SAME\n");
  if (const std::string copy = front::copy_line(c); !copy.empty()) fmt::print("{}\n", copy);
  if (other) {
    fmt::print(
        "*: A and B launched other kernels for the row (another build, or the launcher chose otherwise on "
        "the other device): their \"launches\" say which\n");
  }
  if (timing) {
    fmt::print("+: A and B timed the row otherwise, so the ratio is not the kernels' alone:\n");
    for (const front::CompareRow& r : c.rows)
      if (r.other_timing) fmt::print("   {} {}: A {}, B {}\n", r.kernel, r.shape, r.timing_a, r.timing_b);
  }
}

// The table under a run's header, and with `launches` what each row launched: a run's rows and a saved
// run's alike. `l2_bytes` (0 where not known) tells cold back-to-back rows whose copies fall short of it.
void print_rows(const std::vector<BenchRow>& rows, bool launches, size_t l2_bytes) {
  const std::string timing = rows.empty() ? "cold" : timing_name(rows.front());
  const bool alike =
      std::all_of(rows.begin(), rows.end(), [&](const BenchRow& r) { return timing_name(r) == timing; });
  const bool b2b =
      std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return r.runs_per_sample > 0; });
  if (!alike) {
    fmt::print("median of the samples, each row timed as it says; ");
  } else if (b2b) {
    fmt::print(
        "median of the samples; a sample times runs queued back to back, as one span over its runs "
        "(the row's \"runs\"), {}; ",
        rows.front().cold ? "each run on its own copy of the buffers (\"copies\"), the L2 holding none of it"
                          : "the same buffers every run, L2 warm");
  } else {
    fmt::print("median of the samples, L2 {} between samples; ", rows.front().cold ? "flushed" : "warm");
  }
  fmt::print("GB/s counts each byte read and written once\n\n");
  fmt::print("{:<26} {:<20} {:>7} {:>12} {:>7} {:>9} {:>7} {:>9}\n", "kernel", "shape", "samples", "median",
             "noise", "GB/s", "% copy", "speed-up");
  bool short_copies = false;
  for (const BenchRow& r : rows) {
    const std::string speed = r.speedup ? fmt::format("{:.2f}x", *r.speedup) : "";
    std::string note = alike ? "" : "  " + timing_name(r);
    if (r.runs_per_sample > 0) {
      note += fmt::format("  runs {}", r.runs_per_sample);
      if (r.cold) note += fmt::format(", copies {}", r.copies);
      if (r.cold && l2_bytes > 0 && !copies_fill_l2(r, l2_bytes)) {
        note += " (!)";
        short_copies = true;
      }
    }
    fmt::print("{:<26} {:<20} {:>7} {:>12} {:>6.2f}% {:>9.1f} {:>6.1f}% {:>9}{}{}\n", r.kernel, r.shape,
               r.stats.samples, front::format_duration(r.stats.median_s * 1e6), 100 * r.stats.noise, r.gbps,
               r.pct_of_copy, speed, r.timed_out ? "  (timed out)" : "", note);
  }
  if (short_copies) {
    fmt::print(
        "(!): the row's {} copies move less than three times the L2 between two runs on one copy "
        "(a case this small would need more): part of its data may still be in the L2\n",
        kMostCopies);
  }
  if (std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return r.speedup.has_value(); })) {
    fmt::print(
        "speed-up: dequant rows over the naive recipe of the same element width at the same shape; gemv / "
        "gemm rows over cuBLAS at the same M and shape, measured in the same run\n");
  }
  if (launches) {
    fmt::print("\nwhat each row launched (one run; the kernels as the SASS view names them):\n");
    for (const BenchRow& r : rows) {
      fmt::print("{} {}\n", r.kernel, r.shape);
      if (r.launches.empty())
        fmt::print("  {}\n", r.backend == "cpu" ? "the CPU twin (no kernels)" : "nothing listed");
      for (const cuda::KernelLaunch& l : r.launches) fmt::print("  {}\n", front::launch_text(l));
    }
  }
}

// --show: a saved run's header and table, as the run printed them (the clocks' maxima and the throttle's
// cause are not in the file).
void show(const std::string& path, bool launches, const std::string& csv_path) {
  front::SavedRun run;
  try {
    run = front::load_bench_run(path);
  } catch (const Error& e) {
    throw UserError(e.what());
  }
  const Style st = terminal_style();
  fmt::print("a saved run: {}\n{}\n", path, st.bold(run.device_line));
  const nlohmann::json& d = run.device;
  const auto number = [&](const char* key) {
    return d.contains(key) && d[key].is_number() ? d[key].get<double>() : 0.0;
  };
  const bool gpu = !(d.contains("backend") && d["backend"] == "cpu");
  if (gpu && number("l2_bytes") > 0) fmt::print("L2 {:.0f} MiB, ", number("l2_bytes") / 1048576.0);
  fmt::print("{} copy {:.0f} GB/s (read + write, measured in that run)\n",
             gpu ? "device-to-device" : "memory", run.copy_gbps);
  if (number("sm_clock_mhz") > 0)
    fmt::print("clocks then: SM {:.0f} MHz, memory {:.0f} MHz\n", number("sm_clock_mhz"),
               number("memory_clock_mhz"));
  if (d.contains("throttle") && d["throttle"].is_string() && !d["throttle"].get<std::string>().empty())
    fmt::print("{}\n", st.bad("warning: clocks were held down (" + d["throttle"].get<std::string>() +
                              ") in that run"));
  print_rows(run.rows, launches, static_cast<size_t>(number("l2_bytes")));
  try {
    if (!csv_path.empty()) front::write_report_file(csv_path, front::bench_csv(run.rows));
  } catch (const Error& e) {
    throw UserError(e.what());
  }
}

// --gemm-rows: the rows of X a block of the Hopper GEMM, set on the cases that run it there
// (BenchCase::takes_gemm_rows).
void set_gemm_rows(std::vector<BenchCase>& cases, int rows) {
  if (!gemv::hopper_rows_exist(rows)) {
    throw UserError(fmt::format("--gemm-rows {} is not supported: use a multiple of {} from {} to {}", rows,
                                gemv::kHopperRowStep, gemv::kHopperLeastRows, gemv::kHopperLoneRows));
  }
  bool any = false;
  for (BenchCase& c : cases) {
    if (c.takes_gemm_rows()) {
      c.gemm_rows = rows;
      any = true;
    }
  }
  if (!any) {
    throw UserError(fmt::format(
        "--gemm-rows applies to the gemm/w4a16-ft cases (int4, N a multiple of 128, group 64 or 128) {}, and "
        "none is selected: add --kernel 'gemm/*', --batch with such a size and such a --shape",
        gemm_rows_where()));
  }
}

// --ring: each case the walk of 2 to 32 rows runs (BenchCase::takes_ring) is timed a second time, right
// after it, on the copy-engine ring the walk replaced.
std::vector<BenchCase> add_ring(const std::vector<BenchCase>& cases) {
  std::vector<BenchCase> out = with_ring_twins(cases);
  if (out.size() == cases.size()) {
    throw UserError(
        "--ring applies to the w4a16-ft cases the walk runs (gemv/ up to 16 rows, gemm/ from 17): int4, 2 to "
        "32 rows of X (3 to 32 below 2^25 weights), N and K multiples of 128, group 64 or a multiple of 128 "
        "that divides K, at least 2^24 weights; none is selected: add --kernel 'gem?/w4a16-ft*', --batch 2 "
        "to 32 and such a --shape");
  }
  return out;
}

// --dtype: the GEMV / GEMM cases' activations and outputs, fp16, bf16 or both, in the order named.
std::vector<recipes::OutType> parse_dtypes(const std::string& text) {
  std::vector<recipes::OutType> out;
  for (const std::string& name : front::split_commas(text)) {
    const std::optional<recipes::OutType> t = front::out_type_named(name);
    if (!t) {
      throw UserError(
          fmt::format("--dtype '{}': '{}' is not supported: use fp16, bf16 or fp16,bf16", text, name));
    }
    if (std::find(out.begin(), out.end(), *t) != out.end())
      throw UserError(fmt::format("--dtype '{}' names {} twice: use fp16, bf16 or fp16,bf16", text, name));
    out.push_back(*t);
  }
  return out;
}

// A path that write_report_file can write, or UserError naming the option.
void check_report_path(const std::string& path, const char* option) {
  if (path.empty()) {
    return;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  const fs::path folder = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (fs::is_directory(p, ec)) {
    throw UserError(
        fmt::format("{} '{}' is a folder: give a file name to write the results to", option, path));
  }
  if (!fs::is_directory(folder, ec) || access(folder.c_str(), W_OK) != 0) {
    throw UserError(fmt::format("{} '{}': the folder '{}' does not exist or is not writable", option, path,
                                folder.string()));
  }
}

}  // namespace

void add_bench(CLI::App& app) {
  struct Opts {
    std::string kernel = "*", shapes, batch, json_path, csv_path, backend = "auto", dtype = "fp16", show;
    int group = 128, gemm_rows = 0;
    bool cold = false, warm = false, ring = false, launches = false, back_to_back = false;
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
  cmd->add_option("--batch", o->batch,
                  "M[,M...]: rows of X of the gemv / gemm cases, 1 to 256 (default 1,16; the default set "
                  "adds 64,256 at 8192x8192)");
  cmd->add_option("--dtype", o->dtype,
                  "fp16, bf16 or fp16,bf16: X and Y of the gemv / gemm cases (bf16: cuBLAS and the "
                  "mixed-GEMM layout's int4 and int8 kernels)")
      ->capture_default_str();
  cmd->add_option(
      "--gemm-rows", o->gemm_rows,
      fmt::format(
          "Rows of X a block of the Hopper GEMM (compute capability 9.0), a multiple of {} from {} to {}, "
          "for the gemm/w4a16-ft cases {} (default: the launcher's choice)",
          gemv::kHopperRowStep, gemv::kHopperLeastRows, gemv::kHopperLoneRows, gemm_rows_where()));
  cmd->add_flag(
      "--ring", o->ring,
      "Time each w4a16-ft case of 2 to 32 rows (gemv/, gemm/ from 17) a second time on the copy-engine "
      "ring that the walk replaced (compute capability 9.0), its shape marked 'ring'");
  cmd->add_flag("--launches", o->launches,
                "Below the table, the kernels each row launched: the instance (as the SASS view names it), "
                "grid, block and shared memory (the JSON and CSV always carry them)");
  auto* c = cmd->add_flag("--cold", o->cold, "Flush the L2 before every sample (the default)");
  auto* w = cmd->add_flag("--warm", o->warm, "Keep the L2 warm between samples");
  c->excludes(w);
  cmd->add_flag("--back-to-back", o->back_to_back,
                "Time runs queued back to back, a sample's span over its runs (nvbench's batch time): what a "
                "kernel takes among others in a stream, without one launch's own latency. With --cold (the "
                "default) each run takes its own copy of the buffers, the L2 holding none of it; with --warm "
                "the same buffers (GPU only when cold)");
  cmd->add_option("--max-noise", o->max_noise, "Stop sampling once the relative IQR is below this")
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout, "Seconds of sampling per case at most")->capture_default_str();
  add_backend_option(cmd, o->backend);
  cmd->add_option("--json", o->json_path, "Write the results as JSON to this file");
  cmd->add_option("--csv", o->csv_path, "Write the results as CSV to this file");
  cmd->add_option("--compare", o->compare, "Compare two JSON files from earlier runs: A.json B.json")
      ->expected(2);
  cmd->add_option("--show", o->show,
                  "Print a saved run (a JSON file from bench --json or the timing view, from any machine) as "
                  "the run printed it; with --launches, what each row launched; with --csv, write it as CSV");
  cmd->callback([o, cmd] {
    if (!o->show.empty()) {
      // Reading a file times nothing: an option of a run would be silently dropped.
      for (const CLI::Option* opt : cmd->get_options()) {
        const std::string name = opt->get_name();
        if (opt->count() > 0 && name != "--show" && name != "--launches" && name != "--csv") {
          throw UserError(fmt::format(
              "--show prints a saved run and times nothing: leave out {} (--launches and --csv go with it)",
              name));
        }
      }
      check_report_path(o->csv_path, "--csv");
      show(o->show, o->launches, o->csv_path);
      return;
    }
    if (!o->compare.empty()) {
      // Reading two files times nothing: an option of a run would be silently dropped.
      for (const CLI::Option* opt : cmd->get_options()) {
        if (opt->count() > 0 && opt->get_name() != "--compare") {
          throw UserError(fmt::format(
              "--compare reads two earlier runs and times nothing: leave out {} (it applies to a run)",
              opt->get_name()));
        }
      }
      compare(o->compare[0], o->compare[1]);
      return;
    }
    // The files' places are checked before the timing, not after it.
    check_report_path(o->json_path, "--json");
    check_report_path(o->csv_path, "--csv");
    if (o->group != 32 && o->group != 64 && o->group != 128) {
      throw UserError(fmt::format("--group {} is not supported: use 32, 64 or 128", o->group));
    }
    if (!(o->max_noise > 0) || !(o->timeout > 0))
      throw UserError("--max-noise and --timeout must be positive");
    const std::vector<int64_t> ms =
        o->batch.empty() ? std::vector<int64_t>{} : take(front::parse_int_list(o->batch, "--batch", 1, 256));
    const std::vector<recipes::OutType> dtypes = parse_dtypes(o->dtype);
    std::vector<BenchCase> all =
        o->shapes.empty()
            ? default_bench_cases(o->group, ms, dtypes)
            : bench_cases_for(take(front::parse_shape_list(o->shapes, "--shape")), o->group, ms, dtypes);
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
    if (o->gemm_rows != 0) set_gemm_rows(cases, o->gemm_rows);
    if (o->ring) cases = add_ring(cases);
    auto backend = open_backend(o->backend);
    // The walk, the ring and the Hopper GEMM run on compute capability 9.0 GPUs only.
    const bool hopper = backend->info().backend == "cuda" && backend->info().cc() == 90;
    if (o->ring && !hopper) {
      throw UserError(
          fmt::format("--ring times the copy-engine ring beside the walk, both of which run on compute "
                      "capability 9.0 GPUs; this run's backend is {} ({})",
                      backend->info().backend, backend->info().name));
    }
    if (o->gemm_rows != 0 && !hopper) {
      throw UserError(
          fmt::format("--gemm-rows sets the blocks of the Hopper GEMM, which runs on compute capability "
                      "9.0 GPUs; this run's backend is {} ({})",
                      backend->info().backend, backend->info().name));
    }
    BenchSettings s;
    s.cold = !o->warm;
    s.back_to_back = o->back_to_back;
    if (cold_back_to_back_on_cpu(s, backend->info().backend)) {
      throw UserError(
          "--back-to-back with --cold takes each run on its own copy of the buffers on a GPU, and this run's "
          "backend is the CPU twin: add --warm (its runs one after another) or leave out --back-to-back");
    }
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
    print_rows(rows, o->launches, d.backend == "cuda" ? d.l2_bytes : 0);
    try {
      const nlohmann::json device = front::bench_device_json(d, copy, clocks);
      if (!o->json_path.empty())
        front::write_report_file(o->json_path, front::bench_report_json(device, rows).dump(2) + "\n");
      if (!o->csv_path.empty()) front::write_report_file(o->csv_path, front::bench_csv(rows));
    } catch (const Error& e) {
      throw UserError(e.what());
    }
  });
}

}  // namespace dql::cli
