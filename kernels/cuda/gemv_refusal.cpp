// gemv_run's rules for a launch it takes (gemv.hpp). Host code, kept out of nvcc so the CPU tests
// check it where there is no GPU.
#include <string>

#include "kernels/cuda/gemv.hpp"

namespace dql::cuda {

std::string gemv_refusal(const GemvLaunch& L) {
  using gemv::Path;
  using quant::Layout;
  using quant::Scheme;
  // Built only for a sentence: gemv_run asks on every launch, the benchmarks' timed ones included.
  const auto m = [&] { return std::to_string(L.p.m); };
  const auto shape = [&] { return std::to_string(L.w.n) + "x" + std::to_string(L.w.k); };
  if (const char* name = gemv_misaligned(L))
    return std::string("the GEMV / GEMM kernels were given ") + name +
           " at an address that is not a multiple of 16 bytes; every device pointer of a launch must be "
           "16-byte aligned (as cudaMalloc's are)";
  if (L.p.path == Path::Cublas) return "the cuBLAS product is run by the backend, not by the GEMV launcher";
  const bool bf16 = L.p.dtype == recipes::OutType::BF16;
  if (L.cc < 75) return "the GEMV kernels need tensor cores (compute capability 7.5 or newer)";
  if (L.cc < 80 && (bf16 || L.p.path == Path::Online)) {
    return "bf16 and int8 tensor-core products need compute capability 8.0 or newer; use fp16 or the CPU "
           "twin";
  }
  if (L.p.m < 1 || L.p.m > 256)
    return m() + " rows of X: the GEMV takes 1 to 16 rows and the W4A16 GEMM up to 256";
  if (L.p.path == Path::Online) {
    if (!gemv::online_reads(L.w.layout, L.w.scheme, L.w.group))
      return "the online int8 path reads plain int8 weights in groups of 64 or 128";
    if (L.p.m > 16) return m() + " rows of X: the online int8 path takes 1 to 16";
    return {};
  }
  const bool ft =
      L.w.layout == Layout::Ft && (L.w.scheme == Scheme::Int4Sym || L.w.scheme == Scheme::Int8Sym);
  if (ft) {
    if (L.w.group != 64 && L.w.group != 128 && L.w.group != L.w.k)
      return "group size " + std::to_string(L.w.group) +
             " is not read by the mixed-GEMM layout's kernels: they take 64, 128 or one group per channel";
    if (L.w.n % 16 != 0 || L.w.k % 128 != 0)
      return "the mixed-GEMM layout's kernels need N a multiple of 16 and K a multiple of 128; got " +
             shape();
    if (L.p.m > 16 && L.w.scheme == Scheme::Int8Sym)
      return m() + " rows of X: the W8A16 kernel takes 1 to 16";
    return {};
  }
  const bool awq = L.w.layout == Layout::Awq && L.w.scheme == Scheme::Int4Asym;
  const bool nf4 = L.w.layout == Layout::Plain && L.w.scheme == Scheme::Nf4;
  if (!awq && !nf4) {
    return "no GEMV kernel reads this format: int4-sym and int8-sym in the mixed-GEMM layout, int4-asym in "
           "the AWQ format, NF4, or plain int8 on the online path";
  }
  if (L.p.path == Path::Naive)
    return "the naive-conversion variant reads the mixed-GEMM layout only (int4-sym or int8-sym)";
  if (bf16)
    return "the AWQ and NF4 kernels take fp16 X only: bf16 X is read by the mixed-GEMM layout's kernels";
  if (L.p.m > 16) return m() + " rows of X: the AWQ and NF4 kernels take 1 to 16";
  if (awq && (L.w.group < 1 || L.w.n % 8 != 0 || L.w.k % L.w.group != 0))
    return "the AWQ format needs N a multiple of 8 and K a multiple of the group size; got " + shape() +
           " with groups of " + std::to_string(L.w.group);
  return {};
}

}  // namespace dql::cuda
