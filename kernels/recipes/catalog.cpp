#include "catalog.hpp"

#include <cstring>
#include <string>

namespace dql::recipes {

namespace {

// The NF4 code book as published (bitsandbytes), in double precision; the reference rounds
// these to fp32 itself instead of trusting the recipe's constants.
constexpr double kNf4Published[16] = {-1.0,
                                      -0.6961928009986877,
                                      -0.5250730514526367,
                                      -0.39491748809814453,
                                      -0.28444138169288635,
                                      -0.18477343022823334,
                                      -0.09105003625154495,
                                      0.0,
                                      0.07958029955625534,
                                      0.16093020141124725,
                                      0.24611230194568634,
                                      0.33791524171829224,
                                      0.44070982933044434,
                                      0.5626170039176941,
                                      0.7229568362236023,
                                      1.0};

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t half_bits(_Float16 h) {
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

}  // namespace

const std::vector<RecipeInfo>& all_recipes() {
  static const std::vector<RecipeInfo> list = {
      {&kSpecs[0], "int4 (unsigned 0..15) -> fp16 with the 0x6400 magic: 4 lop3, 1 shift, 2 sub, 2 fma",
       "AWQ (llm-awq dequantize_s4_to_fp16x2)", "8 unsigned nibbles, order e0 e2 e4 e6 e1 e3 e5 e7"},
      {&kSpecs[1], "int4 (stored +8) -> fp16: the same 9 instructions, bias folded into 1032 and -72",
       "FasterTransformer / TensorRT-LLM interleaved converter",
       "8 nibbles holding value + 8, order e0 e2 e4 e6 e1 e3 e5 e7"},
      {&kSpecs[2], "int8 (stored +128) -> fp16: 2 prmt with 0x64646464, 2 sub of 1152",
       "FasterTransformer / TensorRT-LLM interleaved converter",
       "4 bytes holding value + 128, order e0 e2 e1 e3"},
      {&kSpecs[3], "int8 (stored +128) -> bf16 through fp32: 0x4B000000 magic, sub 2^23+128, pack 0x7632",
       "FasterTransformer / TensorRT-LLM interleaved converter",
       "4 bytes holding value + 128, order e0 e2 e1 e3"},
      {&kSpecs[4], "int4 (stored +8) -> bf16: 0x4300 magic, a shift per pair, fma(x, 1, -136)",
       "FasterTransformer / TensorRT-LLM interleaved converter",
       "8 nibbles holding value + 8, order e0 e2 e4 e6 e1 e3 e5 e7"},
      {&kSpecs[5], "signed int4 -> fp16 in natural order: prmt 0x4040.., lop3 0x6a XOR-bias, hfma2",
       "CUTLASS NumericArrayConverter<half_t, int4b_t>", "8 two's-complement nibbles, e0 in nibble 0"},
      {&kSpecs[6], "signed int8 -> fp16: prmt sign extension 0x9180/0xb3a2, lop3 0x6a with 1536, sub",
       "CUTLASS NumericArrayConverter<half_t, int8_t>", "4 two's-complement bytes, e0 in byte 0"},
      {&kSpecs[7], "NF4 -> fp16: code book lookup, times the fp32 absmax, rounded to fp16",
       "bitsandbytes kDequantizeBlockwise (NF4)",
       "8 NF4 codes, byte j = code(e2j) << 4 | code(e2j+1); --absmax for the block scale"},
      {&kSpecs[8], "signed int4 -> fp16 the plain way: shift, arithmetic shift, cvt per element",
       "the baseline the tricks replace", "8 two's-complement nibbles, e0 in nibble 0"},
      {&kSpecs[9], "signed int8 -> fp16 the plain way: shift, arithmetic shift, cvt per element",
       "the baseline the tricks replace", "4 two's-complement bytes, e0 in byte 0"},
  };
  return list;
}

const RecipeInfo* find_recipe(std::string_view name) {
  for (const RecipeInfo& r : all_recipes()) {
    if (name == r.spec->name) return &r;
  }
  return nullptr;
}

const RecipeInfo& info_of(RecipeId id) { return all_recipes()[static_cast<size_t>(id)]; }

std::string recipe_names() {
  std::string s;
  for (const RecipeInfo& r : all_recipes()) {
    if (!s.empty()) s += ", ";
    s += r.spec->name;
  }
  return s;
}

Trace trace_recipe(RecipeId id, const Inputs& in) {
  const uint32_t regs[2] = {in.reg, in.absmax};
  Exec<Tracer> x;
  Trace t;
  t.outputs.resize(static_cast<size_t>(spec_of(id).out_regs));
  run_recipe(id, x, regs, t.outputs.data());
  t.steps = std::move(x.rec.steps);
  return t;
}

std::vector<uint32_t> run_recipe_plain(RecipeId id, const Inputs& in) {
  const uint32_t regs[2] = {in.reg, in.absmax};
  std::vector<uint32_t> out(static_cast<size_t>(spec_of(id).out_regs));
  run_plain(id, regs, out.data());
  return out;
}

uint32_t stored_field(const RecipeSpec& spec, uint32_t reg, int e) {
  for (int i = 0; i < spec.elems; ++i) {
    if (spec.order[i] == e) return (reg >> (spec.bits * i)) & ((1u << spec.bits) - 1u);
  }
  return 0;
}

std::vector<Expected> reference_outputs(const RecipeSpec& spec, const Inputs& in) {
  std::vector<Expected> out;
  const int64_t half_range = int64_t{1} << (spec.bits - 1);
  for (int e = 0; e < spec.elems; ++e) {
    const int64_t raw = stored_field(spec, in.reg, e);
    if (spec.encoding == Encoding::Nf4Code) {
      // bitsandbytes: the fp32 code value times the fp32 absmax, in fp32, then to fp16.
      const float code = static_cast<float>(kNf4Published[raw]);
      const float product = static_cast<float>(static_cast<double>(code) * bits_float(in.absmax));
      const _Float16 h = static_cast<_Float16>(product);
      out.push_back(Expected{static_cast<double>(h), half_bits(h)});
      continue;
    }
    int64_t v = raw;
    if (spec.encoding == Encoding::Biased) v = raw - half_range;
    if (spec.encoding == Encoding::TwosComp && raw >= half_range) v = raw - 2 * half_range;
    uint32_t bits;
    if (spec.out == OutType::F16) {
      bits = half_bits(static_cast<_Float16>(static_cast<float>(v)));
    } else {
      bits = float_bits(static_cast<float>(v)) >> 16;  // small integers: the low half is zero
    }
    out.push_back(Expected{static_cast<double>(v), bits});
  }
  return out;
}

uint32_t output_bits(const std::vector<uint32_t>& regs, int e) {
  const uint32_t r = regs[static_cast<size_t>(e / 2)];
  return (e % 2) ? bits::hi16(r) : bits::lo16(r);
}

double output_value(const RecipeSpec& spec, const std::vector<uint32_t>& regs, int e) {
  return bits::to_double(output_bits(regs, e), spec.out == OutType::F16 ? bits::kF16 : bits::kBF16);
}

}  // namespace dql::recipes
