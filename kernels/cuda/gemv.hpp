// Launchers of the GEMV / GEMM kernels (gemv.cu). Arguments hold device pointers; with `wait`
// the launcher waits for the kernels, otherwise it only queues them (the benchmarks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/gemv/gemv_cpu.hpp"

namespace dql::cuda {

struct GemvLaunch {
  gemv::Weights w;  // device pointers
  gemv::Problem p;  // x and bias are device pointers
  uint16_t* y;      // [M, N]
  void* workspace;  // gemv_workspace_bytes(w, m), zero before the first call (see below)
  int sms;          // multiprocessors of the device
  int cc;           // compute capability, 10 * major + minor
  // The Hopper GEMM's rows of X a block (a multiple of 16 from 48 to 256); 0: gemv::hopper_rows'
  // choice. The tests set it to reach every block size on small matrices, `bench --gemm-rows` to try
  // the tiling on the user's device.
  int rows = 0;
  // The copy-engine ring where the walk of 2 to 32 rows would run (gemv::walk16_takes): the tests reach
  // the ring's cases on large matrices with it.
  bool no_walk = false;
  // The shared memory a block may opt in to on the device (cudaDevAttrMaxSharedMemoryPerBlockOptin,
  // cudaDeviceProp::sharedMemPerBlockOptin). The one-row kernel's other forms (gemv::lane_unmet,
  // gemv::lane_stages_scales) need more than a block has by default and are taken only within it: where 0,
  // the launch keeps the plain form (the same outputs, bit for bit).
  int64_t block_shared_most = 0;
};

// The kernels move operands 16 bytes at a time (cp.async, the copy engine, vector loads), so every
// pointer of a launch (weights, scales, zero points, absmax, X, bias, Y, workspace) must be 16-byte
// aligned, as cudaMalloc's are; gemv_run refuses a launch with one that is not. The name of the first
// such pointer, or null where all are (null pointers, for the operands a format lacks, count as
// aligned).
inline const char* gemv_misaligned(const GemvLaunch& L) {
  const struct {
    const void* p;
    const char* name;
  } ptrs[] = {{L.w.q, "the weight words"},
              {L.w.scales, "the scales"},
              {L.w.qzeros, "the zero points"},
              {L.w.absmax, "the NF4 absmax"},
              {L.p.x, "X"},
              {L.p.bias, "the bias"},
              {L.y, "Y"},
              {L.workspace, "the workspace"}};
  for (const auto& e : ptrs) {
    if (reinterpret_cast<std::uintptr_t>(e.p) % 16 != 0) return e.name;
  }
  return nullptr;
}

// Why gemv_run refuses L, or an empty string where it takes it: a pointer that is not 16-byte aligned
// (gemv_misaligned), a device without the tensor-core products asked for, or a format, activation
// type, row count or shape that none of the kernels reads (gemv::refusal, the rule the backend's
// check_gemv applies too, in the command's own words, before a request gets here); this guards the kernels
// from a launch made any other way (the benchmarks, the tests), which would otherwise run a kernel on
// operands it does not read. Host code: the CPU tests check it.
std::string gemv_refusal(const GemvLaunch& L);

size_t gemv_workspace_bytes(const gemv::Weights& w, int64_t m);
// Its first bytes, the partial sums and arrival counters, which the kernels leave zero for the next
// call; the rest is scratch they overwrite (X re-laid for the copy-engine stages, int8 activations
// of the online path and its slices' sums).
size_t gemv_workspace_zeroed_bytes(const gemv::Weights& w, int64_t m);

// Every path but cuBLAS (the backend calls cuBLAS itself and then gemv_epilogue).
std::string gemv_run(const GemvLaunch& a, bool wait = true);

// Whether the one-row W4A16 kernel's launch for L (one row of X, int4 on the ft layout, the fast path; a
// launch gemv_run accepts) takes that kernel's other form on the device: the unmet sums for fp16 X, the
// staged scales for bf16 X (gemv::lane_unmet, gemv::lane_stages_scales, and room on the device for the
// grid's blocks at once). The same outputs either way, bit for bit; false for every other launch. The
// launch takes its form from the same plan, so the two cannot differ.
bool gemv_lane_other_form(const GemvLaunch& L);

// y[M, N] = epilogue(y + bias) in place (after the cuBLAS product).
std::string gemv_epilogue(const GemvLaunch& a, bool wait = true);

}  // namespace dql::cuda
