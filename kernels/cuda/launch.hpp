// Thin launchers over the per-item CUDA kernels (the fast kernels are in fast.hpp). Arguments hold device
// pointers; each launcher checks the launch and, when `wait` is set, waits for the kernel, returning an empty
// string or what went wrong. Without `wait` the work is queued on the default stream (the benchmarks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/quant/quant.hpp"
#include "kernels/recipes/recipes.hpp"

namespace dql::cuda {

std::string launch_quant(const quant::QuantArgs& a, bool wait = true);
std::string launch_pack(const quant::PackArgs& a, bool wait = true);
std::string launch_pack_params(const quant::PackArgs& a, int64_t groups, bool wait = true);
// Every destination register of the recipe's steps into values[0 .. *count).
std::string launch_trace(recipes::RecipeId id, uint32_t reg, uint32_t absmax, uint32_t* values, int* count);
// All 2^32 input registers against the integer reference (absmax 1.0 for NF4):
// counts[0] = mismatching registers, counts[1] = the smallest of them.
std::string launch_verify(recipes::RecipeId id, unsigned long long* counts);
// Empties the L2 of other data by reading `chunks` 16-byte chunks of a zeroed buffer: the
// lines left behind are clean, so no write-back of earlier results lands in the next timing.
// Queued, not waited for.
std::string launch_l2_flush(const void* buffer, size_t chunks, uint32_t* sink);
// Holds the work queued on the default stream after hold() until release(), as nvbench's blocking
// kernel does: a benchmark queues its start event, the launches and the stop event while the
// stream is held, so that the time the host spends launching (a tensor map encoded, two launches
// with attributes) never shows between the events; without it the GPU, idle at the start event,
// would wait for the host's next launch inside the timed span (every warm sample, and a cold one
// whose launches take longer than the flush before it). The waiting kernel gives up after
// `timeout_s` (a launch that waits for the device itself would otherwise never return);
// timed_out() then says so, once the work behind it has finished.
class StreamHold {
 public:
  StreamHold();
  ~StreamHold();
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;
  // Empty, or why the waiting kernel could not be queued (or the flag not be made).
  std::string hold(double timeout_s);
  void release();
  bool timed_out() const;

 private:
  uint32_t* host_ = nullptr;    // [0]: released, [1]: timed out; pinned and mapped
  uint32_t* device_ = nullptr;  // the same words as the device sees them
};

// Shared memory a block must take (its dynamic shared memory, with `static_bytes` of static shared
// memory beside it) so that at most `blocks` of it fit on a multiprocessor of the current device:
// the smallest amount at which one more no longer fits. 0 where the device's figures cannot be read.
// Held to fewer blocks, some kernels run faster (notes/performance.md, v10 and g34).
size_t occupancy_cap_bytes(int blocks, size_t static_bytes);

// Fills n words with (random bits & and_mask) | or_mask, the same for the same seed.
std::string launch_fill(uint32_t* p, size_t n, uint64_t seed, uint32_t and_mask, uint32_t or_mask);

}  // namespace dql::cuda
