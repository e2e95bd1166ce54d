// A saved benchmark run for the GUI tests: what bench --json writes for one GPU row.
#pragma once

#include <nlohmann/json.hpp>

namespace dql::test {

// A GPU's run as bench --json writes it (one row, its launch), to show on a machine without a GPU.
inline nlohmann::json h200_run() {
  return {{"device",
           {{"backend", "cuda"},
            {"name", "NVIDIA H200"},
            {"compute_capability", "9.0"},
            {"sms", 132},
            {"copy_gbps", 4287.0}}},
          {"rows",
           {{{"kernel", "dequant/awq-int4-fp16"},
             {"shape", "8192x8192 g128"},
             {"samples", 1000},
             {"median_us", 39.21},
             {"noise", 0.012},
             {"min_us", 38.9},
             {"max_us", 41.0},
             {"q1_us", 39.0},
             {"q3_us", 39.47},
             {"gbps", 3852.7},
             {"elements_per_s", 1.7e12},
             {"pct_of_copy", 89.87},
             {"bytes", 151060480.0},
             {"cold", true},
             {"back_to_back", false},
             {"timed_out", false},
             {"backend", "cuda"},
             {"speedup", 1.01},
             {"baseline", "naive-int4-fp16"},
             {"launches",
              {{{"kernel", "dequant_awq_tiled_kernel"},
                {"signature", "void dequant_awq_tiled_kernel(DequantArgs, unsigned int)"},
                {"grid", {4096, 1, 1}},
                {"block", {256, 1, 1}},
                {"shared_bytes", 65536}}}}}}}};
}

}  // namespace dql::test
