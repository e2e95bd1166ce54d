// The SASS parser and decoder, on a listing cuobjdump -sass printed for this project's own
// kernels (sm_90, tests/data/sass_sm90_excerpt.txt: the cutlass-int4 and naive-int4 plain dequant
// kernels with four units a thread, and the L2 flush kernel), and the sass command run as a user
// runs it.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "kernels/bits/lop3.hpp"
#include "kernels/bits/lop3_expr.hpp"
#include "kernels/bits/prmt.hpp"
#include "kernels/sass/embedded.hpp"
#include "kernels/sass/params.hpp"
#include "kernels/sass/sass.hpp"
#include "program.hpp"

using namespace dql;
using sass::OpClass;

namespace {

std::string fixture() {
  std::ifstream f(std::string(DQL_TEST_DATA) + "/sass_sm90_excerpt.txt");
  REQUIRE(f.good());
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const sass::Function& function_named(const sass::Listing& l, const char* name) {
  for (const auto& f : l.functions)
    if (f.name == name) return f;
  FAIL("no function " << name);
  return l.functions.front();
}

sass::Instr instr(const std::string& line) {
  const auto in = sass::parse_instr(line);
  REQUIRE(in.has_value());
  return *in;
}

using dql::test::Run;

Run run(const std::string& args) { return dql::test::run_program(DQL_PROGRAM, args, DQL_TEST_TMPDIR); }

}  // namespace

TEST_CASE("parse: kernels, architecture and names from cuobjdump's listing") {
  const auto listings = sass::parse(fixture());
  REQUIRE(listings.size() == 1);
  const auto& l = listings[0];
  CHECK(l.arch == "sm_90");
  REQUIRE(l.functions.size() == 3);
  const auto& cut = function_named(l, "dequant_plain_kernel<cutlass-int4-fp16, 4>");
  CHECK(cut.demangled ==
        "void dql::cuda::(anonymous namespace)::dequant_plain_kernel<(dql::recipes::RecipeId)5, 4>"
        "(dql::quant::DequantArgs, int)");
  CHECK(cut.mangled.rfind("_ZN3dql4cuda", 0) == 0);
  CHECK(cut.bench == "dequant/cutlass-int4-fp16");
  CHECK(function_named(l, "dequant_plain_kernel<naive-int4-fp16, 4>").bench == "dequant/naive-int4-fp16");
  CHECK(function_named(l, "flush_kernel").bench.empty());
  // Every instruction line was read, addresses 16 bytes apart from 0.
  for (const auto& f : l.functions) {
    REQUIRE(!f.instrs.empty());
    for (size_t i = 0; i < f.instrs.size(); ++i) CHECK(f.instrs[i].address == 16 * i);
  }
  CHECK(cut.instrs[0].text() == "LDC R1, c[0x0][0x28]");
}

TEST_CASE("parse_instr: guard, opcode, operands, and lines that are not instructions") {
  const auto st =
      instr("        /*0a10*/               @!P2 STG.E.EF.128 desc[UR8][R28.64], R12 ;   /* 0x0000 */");
  CHECK(st.address == 0xa10);
  CHECK(st.guard == "@!P2");
  CHECK(st.opcode == "STG.E.EF.128");
  CHECK(st.operands == std::vector<std::string>{"desc[UR8][R28.64]", "R12"});
  CHECK(st.cls == OpClass::Stg);
  CHECK(instr("/*15d0*/ NOP;").opcode == "NOP");
  CHECK(instr("/*0920*/ HFMA2.MMA R12, R12, R15, -72, -1032 ;").cls == OpClass::Hfma2);
  const auto mov = instr("/*04a0*/ HFMA2.MMA R17, -RZ, RZ, 0, 0 ;");  // the compiler's move of an immediate
  CHECK(mov.cls == OpClass::Other);
  CHECK(mov.move);
  CHECK(instr("/*0000*/ HADD2.F32 R3, -RZ, R2.H0_H0 ;").cls == OpClass::Hadd2);
  CHECK(instr("/*0000*/ I2F.F16 R5, R4 ;").cls == OpClass::I2F);
  CHECK(instr("/*0000*/ F2FP.BF16.F32.PACK_AB R0, R3, R2 ;").cls == OpClass::F2F);
  CHECK(instr("/*0000*/ IMAD.MOV.U32 R18, RZ, RZ, 0x64806408 ;").cls == OpClass::Imad);
  CHECK(instr("/*0000*/ SHFL.IDX PT, R3, R2, R0, 0x1f ;").cls == OpClass::Shfl);
  CHECK(instr("/*0000*/ LDS.128 R4, [R2] ;").cls == OpClass::Lds);
  CHECK(instr("/*0000*/ USHF.L.U32 UR4, UR4, 0x3, URZ ;").cls == OpClass::Shf);
  CHECK(instr("/*0000*/ PLOP3.LUT P0, PT, PT, PT, PT, 0x80, 0x0 ;").cls == OpClass::Other);
  CHECK_FALSE(sass::parse_instr("                                 /* 0x000fe20000000800 */").has_value());
  CHECK_FALSE(sass::parse_instr("\t.headerflags\t@\"EF_CUDA_SM90\"").has_value());
  CHECK_FALSE(sass::parse_instr("/*00x0*/ LDC R1 ;").has_value());
  CHECK_FALSE(sass::parse_instr("/*0010*/ LDC R1, c[0x0][0x28]").has_value());  // no ';'
  CHECK_FALSE(sass::parse_instr("").has_value());
  // Truncated or foreign text parses to what it holds, without failing.
  CHECK(sass::parse("code for sm_90\nFunction : x\n/*0000*/ EXIT ;\n/*0010*/ BRA")
            .at(0)
            .functions.at(0)
            .instrs.size() == 1);
  CHECK(sass::parse("no listing here\n/*0000*/ EXIT ;\n").empty());
}

TEST_CASE("LOP3.LUT: the lut byte and a smallest expression that parses back to it") {
  const auto in = instr("/*08f0*/ LOP3.LUT R12, R13, 0xfff0ff0f, R18, 0x6a, !PT ;");
  REQUIRE(in.lop3.has_value());
  CHECK(in.lop3->lut == 0x6a);
  CHECK(in.lop3->a == "R13");
  CHECK(in.lop3->b == "0xfff0ff0f");
  CHECK(in.lop3->c == "R18");
  CHECK(in.lop3->expr == bits::minimal_lop3_expr(0x6a));
  CHECK(std::get<uint8_t>(bits::parse_lop3_expr(in.lop3->expr)) == 0x6a);
  CHECK(sass::decode_text(in) == "0x6a: " + bits::minimal_lop3_expr(0x6a));
  // The predicate-output form: the lut is still the second-to-last operand.
  const auto p = instr("/*0000*/ LOP3.LUT P0, RZ, R20, 0x7, RZ, 0xc0, !PT ;");
  REQUIRE(p.lop3.has_value());
  CHECK(p.lop3->lut == 0xc0);
  CHECK(p.lop3->a == "R20");
  CHECK(instr("/*0000*/ ULOP3.LUT UR4, UR6, UR4, URZ, 0xfc, !UPT ;").lop3->lut == 0xfc);
  // Every LOP3.LUT of the fixture decodes, and its expression evaluates to its table.
  int seen = 0;
  const auto listings = sass::parse(fixture());
  for (const auto& f : listings.at(0).functions) {
    for (const auto& i : f.instrs) {
      if (i.cls != OpClass::Lop3) continue;
      REQUIRE(i.lop3.has_value());
      CHECK(std::get<uint8_t>(bits::parse_lop3_expr(i.lop3->expr)) == i.lop3->lut);
      CHECK((bits::lop3_any(bits::kLop3A, bits::kLop3B, bits::kLop3C, i.lop3->lut) & 0xFFu) == i.lop3->lut);
      ++seen;
    }
  }
  CHECK(seen >= 16);
}

TEST_CASE("PRMT: Rd, Ra, sel, Rb, and the bytes the selector picks agree with the engine's prmt") {
  const auto in = instr("/*08e0*/ PRMT R13, R17, 0x4040, RZ ;");
  REQUIRE(in.prmt.has_value());
  CHECK(in.prmt->immediate);
  CHECK(in.prmt->a == "R17");
  CHECK(in.prmt->b == "RZ");
  CHECK(in.prmt->sel == 0x4040);
  CHECK(sass::decode_text(in) == "0x4040: d = b4 b0 b4 b0");
  const auto sx = instr("/*0000*/ PRMT UR4, UR13, 0x9910, URZ ;");
  REQUIRE(sx.prmt.has_value());
  CHECK(sx.cls == OpClass::Prmt);
  CHECK(sass::decode_text(sx) == "0x9910: d = s(b1) s(b1) b1 b0");
  CHECK_FALSE(instr("/*0000*/ PRMT R4, R5, R6, R7 ;").prmt->immediate);  // a register selector
  // On the identity bytes a = 0x03020100, b = 0x07060504 each result byte names its source.
  for (const char* sel : {"0x5410", "0x7632", "0x5250", "0x5351", "0x9180", "0xb3a2", "0x4343", "0x7531"}) {
    const auto p = instr(std::string("/*0000*/ PRMT R1, R2, ") + sel + ", R3 ;");
    const uint32_t d = bits::soft_prmt(0x03020100u, 0x07060504u, p.prmt->sel);
    for (int i = 0; i < 4; ++i) {
      const uint32_t byte = (d >> (8 * i)) & 0xFFu;
      const uint32_t src = p.prmt->source[i];
      CHECK(byte == (p.prmt->sign[i] ? 0u : src));  // the identity bytes have clear sign bits
    }
  }
  const auto f4e = instr("/*0000*/ PRMT.F4E R1, R2, 0x1, R3 ;");
  REQUIRE(f4e.prmt.has_value());
  CHECK(f4e.prmt->mode == bits::PrmtMode::F4E);
  CHECK(f4e.prmt->source == std::array<uint8_t, 4>{1, 2, 3, 4});
}

TEST_CASE("counts and figures per element: cutlass-int4 against naive-int4 (sm_90)") {
  const auto l = sass::parse(fixture()).at(0);
  const auto& cut = function_named(l, "dequant_plain_kernel<cutlass-int4-fp16, 4>");
  const auto& naive = function_named(l, "dequant_plain_kernel<naive-int4-fp16, 4>");
  const auto all = sass::count(cut.instrs);
  int nops = 0;
  for (const auto& i : cut.instrs) nops += i.opcode == "NOP";
  CHECK(all.total == static_cast<int>(cut.instrs.size()) - nops);
  int sum = 0;
  for (int c : all.by_class) sum += c;
  CHECK(sum == all.total);

  const auto pc = sass::per_element(cut);
  const auto pn = sass::per_element(naive);
  REQUIRE(pc.has_value());
  REQUIRE(pn.has_value());
  CHECK(pc->loop);  // the loop over rows holds the stores
  CHECK(pc->elements == 32);
  CHECK(cut.instrs[pc->end - 1].opcode == "BRA");
  // Four words a thread, each: 4 prmt, 4 lop3 0x6a, 4 hfma2 and 4 hmul2 by the scale.
  CHECK(pc->counts[OpClass::Prmt] == 16);
  CHECK(pc->counts[OpClass::Lop3] == 16);
  CHECK(pc->counts[OpClass::Hfma2] == 16);
  CHECK(pc->counts[OpClass::Hmul2] == 16);
  CHECK(pc->counts[OpClass::Stg] == 4);
  CHECK(pc->counts[OpClass::I2F] == 0);
  CHECK(pc->per(OpClass::Lop3) == doctest::Approx(0.5));
  // The naive kernel converts each element with its own I2F.F16.
  CHECK(pn->loop);
  CHECK(pn->counts[OpClass::I2F] == 32);
  CHECK(pn->counts[OpClass::Lop3] == 0);
  CHECK(pn->total() > pc->total());
  // The flush kernel has no elements to speak of.
  CHECK_FALSE(sass::per_element(function_named(l, "flush_kernel")).has_value());
}

TEST_CASE("names: short names, bench names, elements per pass, glob") {
  CHECK(sass::short_name("void dql::cuda::(anonymous namespace)::quant_wide_kernel<(dql::quant::Scheme)3, 4>"
                         "(dql::quant::QuantArgs, unsigned int*, unsigned short*)") ==
        "quant_wide_kernel<nf4, 4>");
  CHECK(sass::short_name(
            "dql::cuda::(anonymous namespace)::dequant_awq_tiled_kernel(dql::quant::DequantArgs)") ==
        "dequant_awq_tiled_kernel");
  CHECK(sass::short_name(
            "void dql::cuda::(anonymous namespace)::ft_mma_kernel<4, 2, (dql::recipes::OutType)1, "
            "false, 1>(dql::cuda::(anonymous namespace)::FtArgs)") == "ft_mma_kernel<4, 2, bf16, false, 1>");
  CHECK(
      sass::short_name("void dql::cuda::(anonymous namespace)::dequant_ft_kernel<(dql::recipes::RecipeId)1, "
                       "(dql::cuda::(anonymous namespace)::FtForm)2, true>(dql::quant::DequantArgs, "
                       "dql::bits::FixedDivisor, dql::bits::FixedDivisor)") ==
      "dequant_ft_kernel<ft-int4-fp16, crossing, true>");
  CHECK(sass::bench_name("dequant_ft_kernel<ft-uint8-bf16, staged, true>") == "dequant/ft-uint8-bf16");
  CHECK(sass::bench_name("dequant_awq_kernel") == "dequant/awq-int4-fp16");
  CHECK(sass::bench_name("quant_segment_kernel<int8-sym>") == "quant/int8-sym");
  CHECK(sass::bench_name("permute_kernel<4, false, staged, true>") == "permute/int4-inv");
  CHECK(sass::bench_name("permute_kernel<8, true, crossing, true>") == "permute/int8-fwd");
  CHECK(sass::bench_name("verify_kernel<nf4-fp16>").empty());
  CHECK(sass::elements_per_pass("dequant_plain_kernel<nf4-fp16, 8>") == 64);
  CHECK(sass::elements_per_pass("dequant_ft_kernel<ft-int4-fp16, thread, false>") == 64);
  CHECK(sass::elements_per_pass("dequant_awq_tiled_kernel") == 128);
  CHECK(sass::elements_per_pass("flush_kernel") == 0);
  CHECK(sass::glob_match("dequant_plain*cutlass*", "dequant_plain_kernel<cutlass-int4-fp16, 4>"));
  CHECK(sass::glob_match("dequant/?f4*", "dequant/nf4-fp16"));
  CHECK_FALSE(sass::glob_match("dequant/ft*", "dequant/nf4-fp16"));
  CHECK(sass::glob_match("*", ""));
}

TEST_CASE("names: a short name fitted to a column") {
  const auto within = [](size_t n) { return [n](std::string_view s) { return s.size() <= n; }; };
  const std::string lane = "ft_lane_kernel<fp16, false, 16, false, true, true, false>";
  CHECK(sass::fit_name(lane, within(80)) == lane);
  CHECK(sass::fit_name(lane, within(lane.size())) == lane);
  CHECK(sass::fit_name(lane, within(lane.size() - 1)) == "ft_lane_kernel<fp16,0,16,0,1,1,0>");
  // The last arguments go, as few as fitting takes; leaving out a last "0" alone would make the name
  // longer, so the first step leaves out two.
  CHECK(sass::fit_name(lane, within(32)) == "ft_lane_kernel<fp16,0,16,0,1,..>");
  CHECK(sass::fit_name(lane, within(28)) == "ft_lane_kernel<fp16,0,16,..>");
  CHECK(sass::fit_name(lane, within(24)) == "ft_lane_kernel<fp16,..>");
  // Where nothing fits: the shortest form, which the column clips.
  CHECK(sass::fit_name(lane, within(10)) == "ft_lane_kernel<fp16,..>");
  // Nested arguments lose their spaces too; a name without arguments is as it is.
  CHECK(sass::fit_name("walk_kernel<Foo<1, 2>, true>", within(20)) == "walk_kernel<Foo<1,2>,1>");
  CHECK(sass::fit_name("stage_x_kernel", within(4)) == "stage_x_kernel");
  // Arguments are kept whole or left out whole.
  const std::string bulk = "ft_bulk_kernel<8, 4, fp16, false, 2, true, -1, true, 4, true>";
  CHECK(sass::fit_name(bulk, within(34)) == "ft_bulk_kernel<8,4,fp16,0,2,1,..>");
  CHECK(sass::fit_name(bulk, within(30)) == "ft_bulk_kernel<8,4,fp16,0,..>");
  // Arguments to keep stay, with ".." for each run left out around them.
  const size_t last[] = {9};
  CHECK(sass::fit_name(bulk, within(34), last) == "ft_bulk_kernel<8,4,fp16,0,2,..,1>");
  const size_t naive_and_last[] = {3, 9};
  CHECK(sass::fit_name(bulk, within(28), naive_and_last) == "ft_bulk_kernel<8,..,0,..,1>");
}

TEST_CASE("names: a list's names fitted to a column stay different") {
  const auto within = [](size_t n) { return [n](std::string_view s) { return s.size() <= n; }; };
  const std::vector<std::string> names = {"ft_bulk_kernel<8, 4, fp16, false, 2, true, -1, true, 4, false>",
                                          "ft_bulk_kernel<8, 4, fp16, false, 2, true, -1, true, 4, true>",
                                          "ft_bulk_kernel<8, 4, fp16, true, 2, true, -1, true, 4, true>",
                                          "stage_x_kernel"};
  // Each on its own, the first two come out alike ...
  CHECK(sass::fit_name(names[0], within(34)) == sass::fit_name(names[1], within(34)));
  // ... in a list, they keep the argument they differ in; the third, which did not collide, is as before.
  const auto fitted = sass::fit_names(names, within(34));
  REQUIRE(fitted.size() == 4);
  CHECK(fitted[0] == "ft_bulk_kernel<8,4,fp16,0,2,..,0>");
  CHECK(fitted[1] == "ft_bulk_kernel<8,4,fp16,0,2,..,1>");
  CHECK(fitted[2] == "ft_bulk_kernel<8,4,fp16,1,2,1,..>");
  CHECK(fitted[3] == "stage_x_kernel");
  // Where everything fits, nothing changes.
  CHECK(sass::fit_names(names, within(80)) == names);
}

TEST_CASE("template parameter names: read from a kernel source") {
  const std::string src = R"(
template <int N>
__device__ int helper(int x) { return x * N; }  // not a kernel
// template <int Z> __global__ void commented_kernel() in a comment
template <OutType T, bool NAIVE, int W, bool SLOTS = false,
          bool STAGED = (sizeof(int) > 2)>  // a comment between the list and the kernel
__global__ void __launch_bounds__(W * 32, 32 / W) lane_kernel(FtIo a, int n) {}
template <class Args, void (*Item)(const Args&, int64_t), Foo<1, 2> F /* nested */>
__global__ void items_kernel(Args a) {}
__global__ void plain_kernel(int n) {}
template <RecipeId Id>
struct NotAKernel {};
)";
  const auto ks = sass::template_params_in_source(src);
  REQUIRE(ks.size() == 2);  // not the one in a comment
  CHECK(ks[0].kernel == "lane_kernel");
  CHECK(ks[0].names == std::vector<std::string>{"T", "NAIVE", "W", "SLOTS", "STAGED"});
  CHECK(ks[1].kernel == "items_kernel");
  CHECK(ks[1].names == std::vector<std::string>{"Args", "Item", "F"});
}

TEST_CASE("template parameter names: every template kernel of the embedded listings has them") {
  CHECK(sass::param_list("ft_lane_kernel<fp16, false, 16, false, true, true, false>") ==
        "T = fp16, NAIVE = false, W = 16, SPREAD = false, SLOTS = true, UNMET = true, STAGED = false");
  CHECK(sass::with_param_names("dequant_ft_kernel<ft-int4-bf16, staged, true>") ==
        "dequant_ft_kernel<Id = ft-int4-bf16, Form = staged, Narrow = true>");
  CHECK(sass::with_param_names("io::hopper_kernel<fp16, true, 96>") ==
        "io::hopper_kernel<T = fp16, NAIVE = true, BN = 96>");
  // No template of the name, or not with as many parameters: nothing made up.
  CHECK(sass::param_list("ft_lane_kernel<fp16, false>").empty());
  CHECK(sass::param_list("no_such_kernel<1>").empty());
  CHECK(sass::param_list("flush_kernel").empty());
  if (sass::embedded().empty()) {
    MESSAGE("this build embedded no SASS: " << sass::unavailable_reason());
    return;
  }
  for (const auto& e : sass::embedded()) {
    const sass::Listing* l = sass::embedded_listing(e.arch);
    REQUIRE(l != nullptr);
    for (const auto& f : l->functions) {
      std::string_view base;
      if (sass::template_args(f.name, &base).empty()) continue;
      CAPTURE(e.arch);
      CAPTURE(f.name);
      CHECK_FALSE(sass::param_list(f.name).empty());
    }
  }
}

TEST_CASE("embedded SASS: each architecture's listing unpacks whole, under a quarter of its size packed") {
  if (sass::embedded().empty()) {
    MESSAGE("this build embedded no SASS: " << sass::unavailable_reason());
    return;
  }
  for (const auto& e : sass::embedded()) {
    CAPTURE(e.arch);
    const std::string text = sass::embedded_text(e);
    REQUIRE(text.size() == e.text_bytes);
    CHECK(text.rfind("code for " + std::string(e.arch) + "\n", 0) == 0);
    CHECK(text.find("Function : ") != std::string::npos);
    CHECK(e.packed.size() * 4 < e.text_bytes);
    // A stream cut short does not unpack: empty, not a partial listing.
    sass::EmbeddedArch cut = e;
    cut.packed = e.packed.substr(0, e.packed.size() / 2);
    CHECK(sass::embedded_text(cut).empty());
  }
}

TEST_CASE("the runs in docs/runs: every kernel they launched is a function of the embedded sm_90 listing") {
  // The SASS view times a kernel by the rows whose launches name its signature: the shipped runs' times show
  // only where this build's listing holds the very instances they launched (a kernel renamed or re-templated
  // since: take the runs again).
  const sass::Listing* listing = sass::embedded_listing("sm_90");
  if (listing == nullptr) {
    MESSAGE("this build embedded no sm_90 SASS: " << sass::unavailable_reason());
    return;
  }
  std::set<std::string> functions;
  for (const auto& f : listing->functions) functions.insert(f.demangled);
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(DQL_DOCS_RUNS))
    if (e.path().extension() == ".json") files.insert(e.path().string());
  // The H200's (2026-12-06) and the H100's (2026-12-07) GEMV and dequant runs.
  CHECK(files.size() == 4);
  int kernels = 0, calls = 0;
  for (const std::string& name : files) {
    std::ifstream in(name);
    REQUIRE(in.good());
    const auto run = nlohmann::json::parse(in);
    for (const auto& row : run["rows"]) {
      for (const auto& l : row["launches"]) {
        if (l.contains("library_call")) {
          ++calls;
          continue;
        }
        CAPTURE(name);
        CAPTURE(row["kernel"].get<std::string>() + " " + row["shape"].get<std::string>());
        CHECK(functions.count(l["signature"].get<std::string>()) == 1);
        ++kernels;
      }
    }
  }
  CHECK(kernels == 232);  // two GPUs' 84 rows each; cuBLAS's and the copy's calls are a library's
  CHECK(calls > 0);
}

TEST_CASE("sass --run: the kernels a saved run launched, each with its rows' times") {
  if (sass::embedded_listing("sm_90") == nullptr) {
    MESSAGE("this build embedded no sm_90 SASS: " << sass::unavailable_reason());
    return;
  }
  const std::string gemv = std::string(DQL_DOCS_RUNS) + "/h200-2026-12-06-gemv.json";
  const Run r = run("sass --run " + gemv);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("launched by the saved run " + gemv + " (NVIDIA H200, compute capability 9.0, 132 SMs") !=
        std::string::npos);
  // The one-row kernel of the goal shapes, the rows that launched it under it.
  const size_t lane = r.out.find("\nft_lane_kernel<fp16, false, 32, false, false, true, false> ");
  REQUIRE(lane != std::string::npos);
  const size_t next = r.out.find('\n', lane + 1);
  const std::string row =
      "    gemv/w4a16-ft-fp16 M=1 28672x8192 g128: 33.70 us, 3596.4 GB/s, 83.9% of copy\n";
  CHECK(r.out.compare(next + 1, row.size(), row) == 0);
  CHECK(r.out.find("dequant_plain_kernel") == std::string::npos);  // not launched by this run
  // The JSON: every kernel listed carries the rows that timed it.
  const Run j = run("sass --run " + gemv + " --json");
  REQUIRE(j.status == 0);
  const auto out = nlohmann::json::parse(j.out);
  CHECK(out["run"]["not_in_listing"].empty());
  REQUIRE_FALSE(out["kernels"].empty());
  for (const auto& k : out["kernels"]) CHECK_FALSE(k["timed"].empty());
  // A run from another build: what the listing has, then a sentence naming what it lacks, status 2.
  nlohmann::json other = nlohmann::json::parse(std::ifstream(gemv));
  other["rows"][1]["launches"][0]["signature"] = "void dql::cuda::renamed_kernel<3>(int)";
  const std::string other_path = std::string(DQL_TEST_TMPDIR) + "/sass-run-other.json";
  std::ofstream(other_path) << other.dump();
  const Run o = run("sass --run " + other_path);
  CHECK(o.status == 2);
  CHECK(o.out.find("\nact_quant_kernel ") != std::string::npos);
  CHECK(o.out.find("ft_lane_kernel<fp16, false, 32, false, false, true, false>") == std::string::npos);
  CHECK(o.err ==
        "dequant-lab: 1 kernel that '" + other_path +
            "' launched is not in this build's sm_90 listing (a run from another build: take it again "
            "with this one): renamed_kernel<3>\n");
  // The CPU twin's run lists no launches: the kernels of the bench kernels it timed, each with the row.
  const std::string cpu = std::string(DQL_TEST_TMPDIR) + "/sass-run-cpu.json";
  REQUIRE(
      run("bench --backend cpu --warm --kernel 'dequant/awq*' --shape 256x1024 --timeout 0.05 --json " + cpu)
          .status == 0);
  const Run c = run("sass --run " + cpu);
  REQUIRE(c.status == 0);
  CHECK(c.out.find("timed by the saved run " + cpu + " (CPU twin: ") != std::string::npos);
  const size_t awq = c.out.find("\ndequant_awq_kernel ");
  REQUIRE(awq != std::string::npos);
  const std::string timed = "    dequant/awq-int4-fp16 256x1024 g128: ";
  CHECK(c.out.compare(c.out.find('\n', awq + 1) + 1, timed.size(), timed) == 0);
  // Not a run: refused before anything is listed.
  const Run bad = run("sass --run " + std::string(DQL_DOCS_RUNS) + "/absent.json");
  CHECK(bad.status == 2);
  CHECK(bad.out.empty());
  CHECK(bad.err.find("cannot open") != std::string::npos);
}

TEST_CASE("sass command: the embedded listing, or a sentence saying there is none") {
  if (sass::embedded().empty()) {
    const Run r = run("sass");
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("SASS is not available in this build") != std::string::npos);
    MESSAGE("this build embedded no SASS: " << sass::unavailable_reason());
    return;
  }
  const std::string arch = sass::default_arch();
  const Run list = run("sass --json");
  REQUIRE(list.status == 0);
  const auto j = nlohmann::json::parse(list.out);
  CHECK(j["arch"] == arch);
  int dequant = 0;
  for (const auto& k : j["kernels"]) {
    if (k["bench_kernel"].get<std::string>().rfind("dequant/", 0) == 0) {
      ++dequant;
      CHECK(k["per_element"].is_object());
      CHECK(k["per_element"]["per_element"]["total"].get<double>() > 0);
    }
  }
  // plain (5 recipes), FT (4 x thread, staged or crossing x 32- or 64-bit index), AWQ (2)
  CHECK(dequant >= 31);

  // One kernel's listing: every LOP3.LUT carries its table, the magic constant is in the listing.
  const Run one = run("sass --kernel 'dequant_plain_kernel<cutlass-int4-fp16, 2>' --json");
  REQUIRE(one.status == 0);
  const auto k = nlohmann::json::parse(one.out)["kernels"].at(0);
  int lop3 = 0, prmt = 0;
  for (const auto& in : k["listing"]) {
    if (in["class"] == "lop3") {
      ++lop3;
      CHECK(in.contains("lop3"));
    }
    if (in["class"] == "prmt" && in["prmt"]["immediate"] == true) ++prmt;
  }
  CHECK(lop3 >= 8);  // two words a thread, 4 LOP3.LUT 0x6a each
  CHECK(prmt >= 8);
  CHECK(k["per_element"]["elements"] == 16);

  CHECK(k["template_parameters"] ==
        nlohmann::json::parse(
            R"([{"name": "Id", "value": "cutlass-int4-fp16"}, {"name": "kUnits", "value": "2"}])"));

  const Run text = run("sass --kernel 'dequant/cutlass-int4*' --arch " + arch);
  CHECK(text.status == 0);
  CHECK(text.out.find("template parameters: Id = cutlass-int4-fp16, kUnits = ") != std::string::npos);
  CHECK(text.out.find("0x6a: (a & b) ^ c") != std::string::npos);
  CHECK(text.out.find("0x4040: d = b4 b0 b4 b0") != std::string::npos);

  const Run counts = run("sass --kernel 'dequant/*' --counts");
  CHECK(counts.status == 0);
  CHECK(counts.out.find("per element") != std::string::npos);

  // Bad input: status 2 and one sentence.
  for (const char* args : {"sass --kernel 'no_such_kernel*'", "sass --arch sm_1", "sass --arch hopper"}) {
    const Run r = run(args);
    INFO(args);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find('\n') == r.err.size() - 1);
  }
}
