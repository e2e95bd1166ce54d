// Launchers of the fast kernels (fast.cu). Arguments hold device pointers; with `wait` the
// launcher waits for the kernel, otherwise it only queues it (the benchmarks).
#pragma once

#include <cstddef>
#include <string>

#include "kernels/quant/quant.hpp"

namespace dql::cuda {

// Any recipe over its layout (plain, FT or AWQ), the same values as quant::dequant_word.
std::string fast_dequant(const quant::DequantArgs& a, bool wait = true);

// What picks the kernel and its blocks for wide groups: the device's compute capability
// (10 * major + minor), its multiprocessors and its L2 size, as the caller already knows them.
struct QuantDevice {
  int cc;
  int sms;
  size_t l2_bytes;
};

// int8-sym, int4-sym or nf4 straight into plain packed words and scales ([N, K / G]) or
// absmax (a.absmax): the same values as quant::quant_group followed by quant::pack_word.
std::string fast_quant_plain(const quant::QuantArgs& a, uint32_t* qwords, uint16_t* scales,
                             const QuantDevice& d, bool wait = true);

// Plain packed <-> the mixed-GEMM layout, the same words as quant::ft_forward_word / ft_inverse_word.
std::string fast_permute(const quant::PermuteArgs& a, bool forward, bool wait = true);

}  // namespace dql::cuda
