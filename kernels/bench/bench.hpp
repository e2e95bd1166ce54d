// The timing engine: nvbench-style measurement of one kernel launch at a time, or of launches
// queued back to back.
//
// A BenchTarget (made by a backend for one case: the kernel, its shape, inputs filled with
// random data) times single runs, or runs back to back; the engine warms it up, takes samples
// until the stopping rule is met (minimum samples and time, noise under the limit, or a timeout),
// and reports the median, the relative interquartile range as noise, min, max, and throughput
// against the device-to-device copy bandwidth measured by the same engine on the same device.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda/launch_log.hpp"
#include "kernels/gemv/gemv.hpp"
#include "kernels/quant/quant.hpp"
#include "kernels/recipes/recipes.hpp"

namespace dql {

enum class BenchKind : uint8_t { Copy, Dequant, Quant, Permute, Gemv };

// One thing to time.
struct BenchCase {
  BenchKind kind = BenchKind::Dequant;
  int64_t n = 0, k = 0;
  int group = 128;                                           // G, or the NF4 blocksize
  recipes::RecipeId recipe = recipes::RecipeId::AwqInt4F16;  // dequant
  quant::Scheme scheme = quant::Scheme::Int4Sym;             // quant, permute (bits)
  bool forward = true;                                       // permute
  int64_t copy_bytes = 0;                                    // copy
  // gemv / gemm: Y[M, N] = X[M, K] W^T with W in `layout` / `scheme` / `group`.
  int64_t m = 1;
  gemv::Path path = gemv::Path::Fast;
  quant::Layout layout = quant::Layout::Ft;
  recipes::OutType dtype = recipes::OutType::F16;
  int gemm_rows = 0;  // the Hopper GEMM's rows of X a block (cuda::GemvLaunch::rows), 0 for the
                      // launcher's choice: the tiling an expert may try on their own device
  bool ring = false;  // the copy-engine ring where the walk of 2 to 32 rows would run
                      // (cuda::GemvLaunch::no_walk): what the walk buys, measured in the same run

  // e.g. "dequant/awq-int4-fp16", "quant/int4-sym", "permute/int4-fwd", "gemv/w4a16-ft-fp16",
  // "gemv/w4a16-ft-naive-fp16", "gemm/w4a16-ft-fp16" (M > 16), "gemv/cublas-fp16"
  std::string kernel_name() const;
  std::string shape_name() const;  // e.g. "8192x8192 g128", "M=1 28672x8192 g128"
  // Whether gemm_rows applies: a case the Hopper GEMM runs on compute capability 9.0 (int4 in the
  // mixed-GEMM layout, fast or naive, whole 128-channel tiles, groups of whole 64-row tiles, the rows
  // of X gemm_rows_where names).
  bool takes_gemm_rows() const;
  // Whether ring applies: a case the walk of 2 to 32 rows runs on compute capability 9.0 (int4 in the
  // mixed-GEMM layout, fast or naive, gemv::walk16_takes).
  bool takes_ring() const;
  double bytes() const;  // every input byte read once plus every output byte written once
  double elements() const;
};

// The cases with, right after each one that takes_ring(), its twin on the copy-engine ring (ring set): the
// list unchanged where none does (bench --ring, the timing view's ring switch).
std::vector<BenchCase> with_ring_twins(const std::vector<BenchCase>& cases);

// The format a recipe reads in a dequant case.
quant::Scheme scheme_of_recipe(recipes::RecipeId id);
quant::Layout layout_of_recipe(recipes::RecipeId id);

// Times single runs of one case on one backend.
class BenchTarget {
 public:
  virtual ~BenchTarget() = default;
  // One run, in seconds of device (or CPU) time; `cold` empties the L2 (or the CPU caches) first.
  virtual double time_once(bool cold) = 0;
  // The kernels (and library calls) one run launches, in order, as the target's first run noted them;
  // empty for the CPU twin.
  virtual std::vector<cuda::KernelLaunch> launches() const { return {}; }
  // `runs` runs queued back to back and timed as one span: the span's seconds over `runs`. Each run
  // takes the next of the target's copies of its buffers (copies()), in turn. The CPU twin has no
  // launches to queue: it sums that many warm single runs.
  virtual double time_back_to_back(int runs);
  // The copies of the case's buffers that back-to-back runs take in turn (the backend's bench_target).
  virtual int copies() const { return 1; }
};

struct BenchSettings {
  bool cold = true;  // L2 flushed before every sample
  // Each sample times runs queued back to back, as one span over the runs (nvbench's batch time):
  // what a kernel takes where launches follow one another (a model's layers, a graph of a decode
  // step), without the launch and events that a sample of one run carries. Cold: each run reads and
  // writes its own copy of the case's buffers, enough copies that the L2 holds none of a run's data
  // when it starts (back_to_back_copies); warm: the same buffers every run.
  bool back_to_back = false;
  double span_seconds = 200e-6;  // a back-to-back sample's device time, about
  int warmup = 3;                // runs before sampling
  int min_samples = 25;
  int max_samples = 1000;
  double min_seconds = 0.2;      // of sampled time
  double max_noise = 0.02;       // relative IQR to stop at
  double timeout_seconds = 8.0;  // wall time for one case, flushes included
};

struct BenchStats {
  int samples = 0;
  double median_s = 0, noise = 0, min_s = 0, max_s = 0;
  double q1_s = 0, q3_s = 0;  // first and third quartiles: noise = (q3 - q1) / median
};
BenchStats summarize(std::vector<double> seconds);

// The rows of X from which the Hopper GEMM runs (gemv::hopper_takes), as a phrase for messages:
// "from 65 rows of X, and from 33 where ...".
std::string gemm_rows_where();

struct BenchRow {
  BenchCase c;  // the case timed; a row read back from a saved run (front::load_bench_run) has none and
                // carries what the views read: kernel, shape, bytes and the figures
  std::string kernel, shape, backend;
  double bytes = 0;  // every byte read and written once (BenchCase::bytes)
  bool cold = true;
  BenchStats stats;
  double gbps = 0, elements_per_s = 0;
  double pct_of_copy = 0;         // gbps over the measured copy bandwidth, in percent
  std::optional<double> speedup;  // over the matching baseline, when there is one
  std::string baseline;
  bool timed_out = false;
  std::vector<cuda::KernelLaunch> launches;  // what one run launched (BenchTarget::launches)
  int runs_per_sample = 0;                   // back to back: the runs each sample timed; 0: one run a sample
  int copies = 1;                            // back to back: the copies of the buffers the runs took in turn
};

// How a row was timed: "cold", "warm", "cold, back to back" or "warm, back to back".
std::string timing_name(bool cold, bool back_to_back);
std::string timing_name(const BenchRow& r);

// Progress and cancellation, shared with whoever started the run (the GUI's timing panel).
struct BenchControl {
  std::atomic<bool> cancel{false};
  std::atomic<int> done{0};
  std::atomic<int> total{0};
};

}  // namespace dql
