// Every recipe against its integer reference, and the traces the explainer shows.
#include <doctest/doctest.h>

#include <map>

#include "kernels/recipes/catalog.hpp"
#include "support.hpp"

using namespace dql::recipes;
using dql::test::random_u32;

namespace {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// A positive fp32 absmax: mostly ordinary scales, sometimes tiny (fp16 subnormal results)
// or huge (fp16 overflow to inf).
uint32_t random_absmax() {
  const uint32_t r = random_u32();
  const uint32_t m = random_u32() & 0x7FFFFFu;
  uint32_t e;
  switch (r % 8u) {
    case 0: e = 127u - 20u + (random_u32() % 8u); break;  // ~1e-6: subnormal fp16
    case 1: e = 127u + 14u + (random_u32() % 4u); break;  // ~16384..: overflow
    default: e = 127u - 8u + (random_u32() % 10u); break;
  }
  return (e << 23) | m;
}

void check_register(const RecipeSpec& spec, const Inputs& in) {
  const std::vector<uint32_t> out = run_recipe_plain(spec.id, in);
  const std::vector<Expected> want = reference_outputs(spec, in);
  for (int e = 0; e < spec.elems; ++e) {
    if (output_bits(out, e) != want[static_cast<size_t>(e)].bits) {
      FAIL(spec.name, ": input ", hex(in.reg), " absmax ", hex(in.absmax), " element ", e, " gave ",
           hex(output_bits(out, e)), ", reference ", hex(want[static_cast<size_t>(e)].bits));
    }
  }
}

std::map<std::string, int> mnemonic_counts(const Trace& t) {
  std::map<std::string, int> n;
  for (const auto& s : t.steps) {
    if (s.kind != OpKind::Input) ++n[s.mnemonic];
  }
  return n;
}

}  // namespace

TEST_CASE("every recipe: every value in every element position") {
  for (const RecipeInfo& info : all_recipes()) {
    const RecipeSpec& spec = *info.spec;
    CAPTURE(spec.name);
    const uint32_t levels = 1u << spec.bits;
    for (int pos = 0; pos < spec.elems; ++pos) {
      for (uint32_t v = 0; v < levels; ++v) {
        for (int rep = 0; rep < 8; ++rep) {
          const uint32_t field_mask = (levels - 1u) << (spec.bits * pos);
          Inputs in;
          in.reg = (rep == 0 ? 0u : random_u32() & ~field_mask) | (v << (spec.bits * pos));
          if (spec.has_absmax && rep > 0) in.absmax = random_absmax();
          check_register(spec, in);
        }
      }
    }
  }
}

TEST_CASE("every recipe: a million random registers") {
  for (const RecipeInfo& info : all_recipes()) {
    const RecipeSpec& spec = *info.spec;
    CAPTURE(spec.name);
    for (int i = 0; i < 1000000; ++i) {
      Inputs in;
      in.reg = random_u32();
      if (spec.has_absmax) in.absmax = random_absmax();
      check_register(spec, in);
    }
  }
}

TEST_CASE("the reference reads the documented register orders") {
  const RecipeSpec& awq = *find_recipe("awq-int4-fp16")->spec;
  // nibble i holds element order[i]: AWQ packs e0 e2 e4 e6 e1 e3 e5 e7
  CHECK(stored_field(awq, 0x76543210u, 1) == 4u);
  CHECK(stored_field(awq, 0x76543210u, 2) == 1u);
  const RecipeSpec& nf4 = *find_recipe("nf4-fp16")->spec;
  CHECK(stored_field(nf4, 0x000000ABu, 0) == 0xAu);  // first element in the high nibble
  CHECK(stored_field(nf4, 0x000000ABu, 1) == 0xBu);
  const RecipeSpec& ft8 = *find_recipe("ft-uint8-fp16")->spec;
  CHECK(stored_field(ft8, 0x44332211u, 1) == 0x33u);  // bytes hold e0 e2 e1 e3
}

TEST_CASE("the documented examples") {
  const auto values = [](const char* name, uint32_t reg) {
    const RecipeInfo* r = find_recipe(name);
    REQUIRE(r != nullptr);
    const auto out = run_recipe_plain(r->spec->id, Inputs{reg});
    std::vector<double> v;
    for (int e = 0; e < r->spec->elems; ++e) v.push_back(output_value(*r->spec, out, e));
    return v;
  };
  CHECK(values("awq-int4-fp16", 0x76543210u) == std::vector<double>{0, 4, 1, 5, 2, 6, 3, 7});
  CHECK(values("ft-int4-fp16", 0x76543210u) == std::vector<double>{-8, -4, -7, -3, -6, -2, -5, -1});
  CHECK(values("ft-int4-bf16", 0x76543210u) == std::vector<double>{-8, -4, -7, -3, -6, -2, -5, -1});
  CHECK(values("cutlass-int4-fp16", 0x76543210u) == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(values("cutlass-int4-fp16", 0x89ABCDEFu) == std::vector<double>{-1, -2, -3, -4, -5, -6, -7, -8});
  CHECK(values("ft-uint8-fp16", 0x03020100u) == std::vector<double>{-128, -126, -127, -125});
  CHECK(values("ft-uint8-bf16", 0x03020100u) == std::vector<double>{-128, -126, -127, -125});
  CHECK(values("cutlass-int8-fp16", 0x80FF7F01u) == std::vector<double>{1, 127, -1, -128});
  CHECK(values("naive-int8-fp16", 0x80FF7F01u) == std::vector<double>{1, 127, -1, -128});
  CHECK(values("nf4-fp16", 0x0000F07Fu) == std::vector<double>{0, 1, 1, -1, -1, -1, -1, -1});
}

TEST_CASE("traces: the instruction mix each recipe is known for, and the same outputs as the fast path") {
  const std::map<std::string, std::map<std::string, int>> mix = {
      {"awq-int4-fp16", {{"shr.u32", 1}, {"lop3.b32", 4}, {"sub.rn.f16x2", 2}, {"fma.rn.f16x2", 2}}},
      {"ft-int4-fp16", {{"shr.u32", 1}, {"lop3.b32", 4}, {"sub.rn.f16x2", 2}, {"fma.rn.f16x2", 2}}},
      {"ft-uint8-fp16", {{"prmt.b32", 2}, {"sub.rn.f16x2", 2}}},
      {"ft-uint8-bf16", {{"prmt.b32", 6}, {"sub.rn.f32", 4}}},
      {"ft-int4-bf16", {{"shr.u32", 3}, {"lop3.b32", 4}, {"fma.rn.bf16x2", 4}}},
      {"cutlass-int4-fp16", {{"prmt.b32", 4}, {"lop3.b32", 4}, {"fma.rn.f16x2", 4}}},
      {"cutlass-int8-fp16", {{"prmt.b32", 2}, {"lop3.b32", 2}, {"sub.rn.f16x2", 2}}},
      {"nf4-fp16", {{"bfe.u32", 8}, {"ld.const.f32", 8}, {"mul.rn.f32", 8}, {"cvt.rn.f16x2.f32", 4}}},
      {"naive-int4-fp16", {{"shl.b32", 7}, {"shr.s32", 8}, {"cvt.rn.f16.s32", 8}, {"mov.b32", 4}}},
      {"naive-int8-fp16", {{"shl.b32", 3}, {"shr.s32", 4}, {"cvt.rn.f16.s32", 4}, {"mov.b32", 2}}},
  };
  for (const RecipeInfo& info : all_recipes()) {
    const RecipeSpec& spec = *info.spec;
    CAPTURE(spec.name);
    REQUIRE(mix.count(spec.name) == 1);
    for (int i = 0; i < 20000; ++i) {
      Inputs in;
      in.reg = random_u32();
      if (spec.has_absmax) in.absmax = random_absmax();
      const Trace t = trace_recipe(spec.id, in);
      REQUIRE(t.outputs == run_recipe_plain(spec.id, in));
      if (i == 0) {
        CHECK(mnemonic_counts(t) == mix.at(spec.name));
        for (const auto& s : t.steps) {
          CHECK(!s.meaning.empty());
          CHECK(s.ptx.rfind(s.kind == OpKind::Input ? "//" : s.mnemonic, 0) == 0);
        }
      }
    }
  }
}

TEST_CASE("the AWQ trace, step by step") {
  const Trace t = trace_recipe(RecipeId::AwqInt4F16, Inputs{0x76543210u});
  REQUIRE(t.steps.size() == 10);
  CHECK(t.steps[0].ptx == "// src = 0x76543210");
  CHECK(t.steps[1].ptx == "shr.u32 top, src, 8");
  CHECK(t.steps[1].value == 0x00765432u);
  CHECK(t.steps[2].ptx == "lop3.b32 h0, src, 0x000f000f, 0x64006400, 0xea");
  CHECK(t.steps[2].value == 0x64046400u);  // {1028, 1024}
  CHECK(t.steps[2].imm == 0xEAu);
  CHECK(t.steps[3].value == 0x64506410u);  // {1024 + 16*5, 1024 + 16*1}
  CHECK(t.steps[6].ptx == "sub.rn.f16x2 h0, h0, 0x64006400");
  CHECK(t.steps[6].value == 0x44000000u);  // {4, 0}
  CHECK(t.steps[7].ptx == "fma.rn.f16x2 h1, h1, 0x2c002c00, 0xd400d400");
  CHECK(t.steps[7].value == 0x45003C00u);  // {5, 1}
  const Trace ft8 = trace_recipe(RecipeId::FtUint8F16, Inputs{0x03020100u});
  CHECK(ft8.steps[1].ptx == "prmt.b32 h0, src, 0x64646464, 0x5250");
  CHECK(ft8.steps[1].imm == 0x5250u);
  const Trace naive = trace_recipe(RecipeId::NaiveInt8F16, Inputs{0x03020100u});
  CHECK(naive.steps.back().ptx == "mov.b32 h1, {e2, e3}");
  const Trace nf4 = trace_recipe(RecipeId::Nf4F16, Inputs{0x0000F07Fu});
  CHECK(nf4.steps[3].ptx == "ld.const.f32 v0, nf4[c0]");
}
