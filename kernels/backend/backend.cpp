#include "backend.hpp"

#include <fmt/format.h>

namespace dql {

std::string DeviceInfo::summary() const {
  if (backend == "cpu") return fmt::format("CPU twin: {} ({} threads)", name, sms);
  return fmt::format("{}, compute capability {}.{}, {} SMs, {:.0f} GiB, driver {}.{}", name, cc_major,
                     cc_minor, sms, memory_bytes / 1073741824.0, driver_version / 1000,
                     (driver_version % 1000) / 10);
}

void check_quant_shape(const QuantSpec& spec, int64_t n, int64_t k) {
  using quant::Layout;
  using quant::Scheme;
  const bool nf4 = spec.scheme == Scheme::Nf4;
  if (nf4) {
    const int b = spec.group;
    if (b < 32 || b > 4096 || (b & (b - 1)) != 0) {
      throw Error(fmt::format("NF4 blocksize {} is not supported: use a power of two from 32 to 4096", b));
    }
    if (k % b != 0) {
      throw Error(
          fmt::format("K = {} does not divide by the NF4 blocksize {}: blocks run along K, so K must be a "
                      "multiple of it",
                      k, b));
    }
    if (spec.layout != Layout::Plain)
      throw Error("NF4 comes in the bitsandbytes layout only: use --layout plain");
    return;
  }
  if (spec.group != k && spec.group != 32 && spec.group != 64 && spec.group != 128) {
    throw Error(
        fmt::format("group size {} is not supported: use 32, 64, 128, or 0 for one scale per output "
                    "channel",
                    spec.group));
  }
  if (k % spec.group != 0) {
    throw Error(
        fmt::format("K = {} does not divide by the group size {}: groups run along K", k, spec.group));
  }
  if (k % 8 != 0)
    throw Error(fmt::format("K = {} is not a multiple of 8: packed words hold 8 int4 or 4 int8 along K", k));
  if (spec.layout == Layout::Awq) {
    if (spec.scheme != Scheme::Int4Asym) {
      throw Error(
          "the AWQ format stores unsigned int4 with zero points: use --scheme int4-asym with --layout awq");
    }
    if (n % 8 != 0)
      throw Error(
          fmt::format("N = {} is not a multiple of 8: the AWQ format packs 8 output channels "
                      "per int32",
                      n));
  }
  if (spec.scheme == Scheme::Int4Asym && spec.layout != Layout::Awq) {
    throw Error("int4-asym is stored in the AWQ format: use --layout awq");
  }
  if (spec.layout == Layout::Ft) check_permute_shape(quant::scheme_bits(spec.scheme), n, k);
}

void check_permute_shape(int bits, int64_t n, int64_t k) {
  if (bits != 4 && bits != 8) throw Error(fmt::format("--bits {} is not supported: use 4 or 8", bits));
  if (n < 1 || k < 1)
    throw Error(fmt::format("the matrix is empty ({}x{}): N and K must be 1 or more", n, k));
  const int interleave = bits == 4 ? 4 : 2;
  if (k % 64 != 0) {
    throw Error(fmt::format(
        "K = {} is not a multiple of 64: the mixed-GEMM layout interleaves 64-row tiles of K", k));
  }
  if (n % interleave != 0) {
    throw Error(
        fmt::format("N = {} is not a multiple of {}: the int{} mixed-GEMM layout interleaves {} columns", n,
                    interleave, bits, interleave));
  }
}

recipes::RecipeId dequant_recipe_for(const QuantSpec& spec, recipes::OutType dtype) {
  for (recipes::RecipeId id : recipes_for(spec)) {
    if (recipes::recipe_out(id) == dtype) return id;
  }
  throw Error(
      fmt::format("this format dequantizes to fp16 only: use --dtype fp16 (bf16 is available for the "
                  "mixed-GEMM layout, --layout ft)"));
}

void check_gemv(const QuantizedMatrix& w, const GemvRequest& r) {
  const QuantSpec& s = w.spec;
  const auto rows = [&] {
    return Error(fmt::format(
        "M = {} rows of X is not supported: the GEMV takes 1 to 16 rows and the GEMM up to 256", r.m));
  };
  if (r.m < 1 || r.m > 256) throw rows();
  if (r.x.size() != static_cast<size_t>(r.m * w.k)) {
    throw Error(fmt::format("X holds {} values but the weight is [{}, {}]: X must be [M, {}]", r.x.size(),
                            w.n, w.k, w.k));
  }
  if (!r.bias.empty() && r.bias.size() != static_cast<size_t>(w.n)) {
    throw Error(fmt::format("the bias holds {} values: it must hold one per output channel, N = {}",
                            r.bias.size(), w.n));
  }
  if (r.epi.clamp && !(r.epi.lo <= r.epi.hi)) {
    throw Error(fmt::format("clamp range [{}, {}] is empty: give the lower bound first", r.epi.lo, r.epi.hi));
  }
  using gemv::Refusal;
  switch (gemv::refusal(s.layout, s.scheme, s.group, w.n, w.k, r.path, r.dtype, r.m)) {
    case Refusal::None: return;
    case Refusal::NotAKernel: (void)dequant_recipe_for(s, r.dtype); return;
    case Refusal::Rows: throw rows();
    case Refusal::OnlineFormat:
      throw Error(
          "the online int8 path reads plain int8 weights with group 64 or 128 "
          "(--scheme int8-sym --layout plain --group 64|128): activations are quantized per block of the "
          "same size");
    case Refusal::OnlineRows: throw Error("the online int8 path takes 1 to 16 rows of X");
    case Refusal::FtGroup:
      throw Error(fmt::format("group size {} is not supported by the {} kernels: use 64, 128 or per channel",
                              s.group, s.scheme == quant::Scheme::Int4Sym ? "W4A16" : "W8A16"));
    case Refusal::FtShape:
      throw Error(fmt::format(
          "the mixed-GEMM kernels need N a multiple of 16 and K a multiple of 128; got {}x{}", w.n, w.k));
    case Refusal::W8Rows: throw Error("the W8A16 kernel takes 1 to 16 rows of X");
    case Refusal::NaiveLayout:
      throw Error(
          "the naive-conversion variant runs on the mixed-GEMM layout (--layout ft), beside the fast one it "
          "is compared with");
    case Refusal::NoKernel:
      throw Error(
          "this format has no GEMV kernel: use the mixed-GEMM layout (--layout ft) for int4-sym / "
          "int8-sym, the AWQ format for int4-asym, NF4, or --path online for plain int8");
    case Refusal::Bf16X: throw Error("the AWQ and NF4 kernels take fp16 activations: use --dtype fp16");
    case Refusal::AwqNf4Rows:
      throw Error("beyond 16 rows of X the GEMM reads the mixed-GEMM layout (--layout ft, int4-sym)");
    case Refusal::AwqShape:
      throw Error(fmt::format(
          "the AWQ kernels need N a multiple of 8 and K a multiple of the group size; got {}x{} with groups "
          "of {}",
          w.n, w.k, s.group));
  }
}

std::vector<recipes::RecipeId> recipes_for(const QuantSpec& spec) {
  using quant::Layout;
  using quant::Scheme;
  using R = recipes::RecipeId;
  switch (spec.scheme) {
    case Scheme::Nf4: return {R::Nf4F16};
    case Scheme::Int4Asym: return {R::AwqInt4F16};
    case Scheme::Int8Sym:
      return spec.layout == Layout::Ft ? std::vector<R>{R::FtUint8F16, R::FtUint8Bf16}
                                       : std::vector<R>{R::CutlassInt8F16, R::NaiveInt8F16};
    case Scheme::Int4Sym:
      return spec.layout == Layout::Ft ? std::vector<R>{R::FtInt4F16, R::FtInt4Bf16}
                                       : std::vector<R>{R::CutlassInt4F16, R::NaiveInt4F16};
  }
  return {};
}

std::unique_ptr<Backend> make_backend(const std::string& choice, std::string* notice) {
  if (choice == "cpu") return make_cpu_backend();
  if (choice != "cuda" && choice != "auto") {
    throw Error(fmt::format("--backend '{}' is not known: use auto, cuda or cpu", choice));
  }
  std::string why;
  std::unique_ptr<Backend> gpu = make_cuda_backend(&why);
  if (gpu) return gpu;
  if (choice == "cuda")
    throw Error(fmt::format("--backend cuda cannot run: {}; use --backend cpu for the CPU twin", why));
  if (notice) *notice = fmt::format("{}: running on the CPU twin (bit-exact, slower)", why);
  return make_cpu_backend();
}

}  // namespace dql
