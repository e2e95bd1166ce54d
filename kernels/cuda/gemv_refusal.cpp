// gemv_run's rules for a launch it takes (gemv.hpp). Host code, kept out of nvcc so the CPU tests
// check it where there is no GPU.
#include <string>

#include "kernels/cuda/gemv.hpp"

namespace dql::cuda {

std::string gemv_refusal(const GemvLaunch& L) {
  using gemv::Path;
  using gemv::Refusal;
  // Built only for a sentence: gemv_run asks on every launch, the benchmarks' timed ones included.
  const auto m = [&] { return std::to_string(L.p.m); };
  const auto shape = [&] { return std::to_string(L.w.n) + "x" + std::to_string(L.w.k); };
  if (const char* name = gemv_misaligned(L))
    return std::string("the GEMV / GEMM kernels were given ") + name +
           " at an address that is not a multiple of 16 bytes; every device pointer of a launch must be "
           "16-byte aligned (as cudaMalloc's are)";
  const Refusal why =
      gemv::refusal(L.w.layout, L.w.scheme, L.w.group, L.w.n, L.w.k, L.p.path, L.p.dtype, L.p.m);
  if (why != Refusal::NotAKernel) {  // the device's own limits first
    if (L.cc < 75) return "the GEMV kernels need tensor cores (compute capability 7.5 or newer)";
    if (L.cc < 80 && (L.p.dtype == recipes::OutType::BF16 || L.p.path == Path::Online)) {
      return "bf16 and int8 tensor-core products need compute capability 8.0 or newer; use fp16 or the CPU "
             "twin";
    }
  }
  switch (why) {
    case Refusal::None: return {};
    case Refusal::NotAKernel: return "the cuBLAS product is run by the backend, not by the GEMV launcher";
    case Refusal::Rows: return m() + " rows of X: the GEMV takes 1 to 16 rows and the W4A16 GEMM up to 256";
    case Refusal::OnlineFormat: return "the online int8 path reads plain int8 weights in groups of 64 or 128";
    case Refusal::OnlineRows: return m() + " rows of X: the online int8 path takes 1 to 16";
    case Refusal::FtGroup:
      return "group size " + std::to_string(L.w.group) +
             " is not read by the mixed-GEMM layout's kernels: they take 64, 128 or one group per channel";
    case Refusal::FtShape:
      return "the mixed-GEMM layout's kernels need N a multiple of 16 and K a multiple of 128; got " +
             shape();
    case Refusal::W8Rows: return m() + " rows of X: the W8A16 kernel takes 1 to 16";
    case Refusal::NaiveLayout:
      return "the naive-conversion variant reads the mixed-GEMM layout only (int4-sym or int8-sym)";
    case Refusal::NoKernel:
      return "no GEMV kernel reads this format: int4-sym and int8-sym in the mixed-GEMM layout, int4-asym in "
             "the AWQ format, NF4, or plain int8 on the online path";
    case Refusal::Bf16X:
      return "the AWQ and NF4 kernels take fp16 X only: bf16 X is read by the mixed-GEMM layout's kernels";
    case Refusal::AwqNf4Rows: return m() + " rows of X: the AWQ and NF4 kernels take 1 to 16";
    case Refusal::AwqShape:
      return "the AWQ format needs N a multiple of 8 and K a multiple of the group size; got " + shape() +
             " with groups of " + std::to_string(L.w.group);
  }
  return {};
}

}  // namespace dql::cuda
