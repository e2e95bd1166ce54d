// Benchmark results as files and comparisons, shared by the terminal's bench command and the
// desktop app's timing view: the JSON and CSV they write, and the A/B comparison of two JSON runs.
// Failures are dql::Error with a sentence naming the file and what was expected.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/backend/backend.hpp"
#include "kernels/bench/bench.hpp"
#include "kernels/bench/clocks.hpp"
#include "kernels/sass/sass.hpp"

namespace dql::front {

// "12.34 us", "1.234 ms", "1.234 s".
std::string format_duration(double us);
// An axis tick's time, no longer than it needs: "0", "0.5 us", "200 us", "1.5 ms", "2 s".
std::string format_tick(double us);

// The device header of a report: backend, name, compute capability, SMs, L2, memory, the copy
// bandwidth measured now, and the clocks where the driver reports them.
nlohmann::json bench_device_json(const DeviceInfo& d, double copy_gbps, const GpuClocks& clocks);
nlohmann::json bench_row_json(const BenchRow& r);
// The rows that time a kernel of the SASS listing: a GPU's rows list what they launched and count where
// they launched the function itself; rows that list nothing (the CPU twin's) count under the function's
// bench name (sass::Function::bench), whichever sibling of it the launcher would pick.
std::vector<const BenchRow*> rows_timing(const std::vector<BenchRow>& rows, const sass::Function& f);
// One such row in a line, as the SASS view and `sass --run` show it: "gemv/w4a16-ft-fp16 M=1 28672x8192
// g128: 33.70 us, 3596.4 GB/s, 83.9% of copy".
std::string timed_row_text(const BenchRow& r);
// One launch of a run in a line, the kernel by the SASS view's short name: "ft_lane_kernel<fp16, false, 32,
// false, false, true, false>: grid 131, block 1024, 110 KiB shared"; a library's call by its name, cuBLAS's
// as "cublasGemmEx (cuBLAS launches its own kernels)".
std::string launch_text(const cuda::KernelLaunch& l);
// {"kernel", "signature", "grid", "block", "shared_bytes"} and "cluster" where it has one; a library's
// call: {"library_call"}.
nlohmann::json launch_json(const cuda::KernelLaunch& l);
// {"device": ..., "rows": [...]}: what `bench --json` writes.
nlohmann::json bench_report_json(const nlohmann::json& device, const std::vector<BenchRow>& rows);
// The CSV `bench --csv` writes, header line included.
std::string bench_csv(const std::vector<BenchRow>& rows);

// Writes text to a file; a file that cannot be written is an Error saying so.
void write_report_file(const std::string& path, const std::string& text);
// Reads a report written by bench_report_json; an unreadable file or one without a "rows" array
// is an Error.
nlohmann::json load_bench_json(const std::string& path);

// A saved run read back for the views: the device it ran on and its rows as the timing view draws them
// (each row without its BenchCase: kernel, shape, bytes, the figures and the launches).
struct SavedRun {
  nlohmann::json device;    // the file's device header, {} where it has none
  std::string device_line;  // device_summary(device)
  double copy_gbps = 0;     // the copy bandwidth measured in that run; 0 where the file does not say
  std::vector<BenchRow> rows;
};
// A report's device header in one line, as DeviceInfo::summary says it of a live device: "NVIDIA H200,
// compute capability 9.0, 132 SMs, 140 GiB, driver 580.159.04", "CPU twin: NAME (2 threads)".
std::string device_summary(const nlohmann::json& device);
// The inverse of launch_json; an Error where an entry is neither form.
cuda::KernelLaunch launch_from_json(const nlohmann::json& j);
// Reads a run written by bench --json or the timing view (load_bench_json's checks, then every key the
// views read of the type they read it as; keys a file from an older build lacks take what the engine
// would have written: quartiles and extremes the median, bytes the GB/s times the median, no launches).
// An Error names the file, the row and the key.
SavedRun load_bench_run(const std::string& path);

// One (kernel, shape) present in both runs. ratio = A median / B median: above 1, B is faster.
struct CompareRow {
  std::string kernel, shape;
  double a_us = 0, b_us = 0, ratio = 0;
  double noise = 0;     // both runs' relative IQR together: the band within which they are SAME
  std::string verdict;  // SAME, FASTER (B faster) or SLOWER
  // Both files list the row's launches (files from before they did list none) and the kernels differ: A
  // and B timed other instances (another build, or a launcher that chose otherwise on another device).
  bool other_kernels = false;
  // A and B timed the row otherwise: one cold and one warm, or one back to back and one a run at a time
  // (timing_a / timing_b, as timing_name says them).
  bool other_timing = false;
  std::string timing_a, timing_b;
};
struct Comparison {
  std::string a_device, b_device;
  double a_copy_gbps = 0, b_copy_gbps = 0;  // each run's copy bandwidth (0: its file does not say)
  std::vector<CompareRow> rows;
  // The A/B a row bound by memory bandwidth on both devices would show: B's copy over A's (0: not known).
  double copy_ratio() const { return a_copy_gbps > 0 && b_copy_gbps > 0 ? b_copy_gbps / a_copy_gbps : 0; }
};
// "copy bandwidth: A 3054 GB/s, B 4287 GB/s (1.404x): a row bound by memory bandwidth on both would show
// about that A/B", or empty where a file does not say its copy bandwidth.
std::string copy_line(const Comparison& c);
// An Error when the two runs share no (kernel, shape).
Comparison compare_bench(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace dql::front
