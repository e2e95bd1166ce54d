// Running benchmark cases: the stopping rule, statistics, throughput, and a run off the calling
// thread with progress and cancel.
#pragma once

#include <future>

#include "bench.hpp"

namespace dql {

class Backend;

// Samples one target until the stopping rule holds. `cancel` may stop it early.
BenchRow measure(BenchTarget& target, const BenchCase& c, const BenchSettings& s,
                 const std::atomic<bool>* cancel);

// The copies of a case's buffers that its cold back-to-back runs take in turn: between two runs on one
// copy the others move at least three times the L2's bytes, so that none of a run's data is still
// there when it starts; at least 2, and at most kMostCopies (cases under about 300 KB on a 50 MB L2
// fall short of the three times, and say so: copies_fill_l2).
inline constexpr int kMostCopies = 512;
int back_to_back_copies(double case_bytes, size_t l2_bytes);
// Whether a back-to-back row's copies move at least three times the L2 between two runs on one copy.
bool copies_fill_l2(const BenchRow& r, size_t l2_bytes);

// The device-to-device copy bandwidth (bytes read + written per second) of a backend, measured
// once per backend per process and cached.
double copy_bandwidth(Backend& backend);

// Cold back-to-back runs take each their own copy of the buffers, which only a GPU backend makes: true
// where `s` asks the CPU twin for them (run_bench refuses it; the front ends say so first, in their terms).
bool cold_back_to_back_on_cpu(const BenchSettings& s, const std::string& backend);

// Every case in turn; fills throughput, % of copy bandwidth and the speed-up over each row's
// baseline (a naive recipe at the same shape) where one was measured in the same run. Throws Error
// for settings the backend cannot time (cold back-to-back runs on the CPU twin).
std::vector<BenchRow> run_bench(Backend& backend, const std::vector<BenchCase>& cases, const BenchSettings& s,
                                BenchControl* control = nullptr);

// The same on a thread of its own, for front ends that must keep drawing.
std::future<std::vector<BenchRow>> run_bench_async(Backend& backend, std::vector<BenchCase> cases,
                                                   BenchSettings s, BenchControl* control);

// The cases `bench` runs when none are named: every dequant recipe at 4096x4096, 8192x8192 and
// 8192x28672, quant (int8, int4 per group, NF4) and permute at the same shapes.
// Their GEMV cases take M = 1 and 16 at those shapes and at 28672x8192, and the GEMM M = 64 and
// 256 at 8192x8192; `ms`, when given, replaces all of these rows of X. `dtypes`: the GEMV cases'
// activations and outputs (gemv_bench_cases).
std::vector<BenchCase> default_bench_cases(int group = 128, const std::vector<int64_t>& ms = {},
                                           const std::vector<recipes::OutType>& dtypes = {
                                               recipes::OutType::F16});
// GEMV / GEMM cases: for each [N, K] shape, M and activation type, cuBLAS (the baseline), the W4A16
// kernel (fast and naive conversion), W8A16 per channel (fast and naive), and with fp16 the AWQ
// format, NF4 and the online int8 path too (bf16 X reads the mixed-GEMM layout only). Beyond M = 16
// only the W4A16 GEMM and cuBLAS.
std::vector<BenchCase> gemv_bench_cases(const std::vector<std::pair<int64_t, int64_t>>& shapes,
                                        const std::vector<int64_t>& ms, int group = 128,
                                        const std::vector<recipes::OutType>& dtypes = {
                                            recipes::OutType::F16});
// Every kind at each shape; the GEMV cases with M = 1 and 16 unless `ms` names others.
std::vector<BenchCase> bench_cases_for(const std::vector<std::pair<int64_t, int64_t>>& shapes, int group,
                                       const std::vector<int64_t>& ms = {},
                                       const std::vector<recipes::OutType>& dtypes = {recipes::OutType::F16});

// The checks the case's kernel makes before it runs (shape, group, format, rows of X), as one Error
// naming the case: "dequant/ft-int4-fp16 at 64x100 g128: K = 100 does not divide ...".
void check_bench_case(const BenchCase& c);

// The naive recipe a fast one is compared with (same element width), if any.
std::optional<recipes::RecipeId> baseline_of(recipes::RecipeId id);

}  // namespace dql
