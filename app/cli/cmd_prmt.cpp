// prmt: which byte of {b, a} lands in each destination byte, and the result.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kernels/bits/prmt.hpp"
#include "render.hpp"

namespace dql::cli {

namespace {

struct ModeName {
  const char* name;
  bits::PrmtMode mode;
};
constexpr ModeName kModes[] = {{"generic", bits::PrmtMode::Generic}, {"f4e", bits::PrmtMode::F4E},
                               {"b4e", bits::PrmtMode::B4E},         {"rc8", bits::PrmtMode::RC8},
                               {"ecl", bits::PrmtMode::ECL},         {"ecr", bits::PrmtMode::ECR},
                               {"rc16", bits::PrmtMode::RC16}};

}  // namespace

void add_prmt(CLI::App& app) {
  struct Opts {
    std::string a, b, sel, mode = "generic";
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("prmt", "Byte selection of prmt.b32 over {b, a}");
  cmd->add_option("--a", o->a, "Operand a in hex (bytes b0..b3)")->required();
  cmd->add_option("--b", o->b, "Operand b in hex (bytes b4..b7)")->required();
  cmd->add_option("--sel", o->sel, "Selector c in hex, e.g. 0x5250")->required();
  cmd->add_option("--mode", o->mode, "generic (default), f4e, b4e, rc8, ecl, ecr or rc16");
  cmd->add_flag("--json", o->json, "Print JSON with the result and each byte's source");
  cmd->callback([o] {
    const ModeName* m = nullptr;
    for (const auto& k : kModes) {
      if (o->mode == k.name) m = &k;
    }
    if (!m) {
      throw UserError(
          fmt::format("'{}' is not a prmt mode: use generic, f4e, b4e, rc8, ecl, ecr or rc16", o->mode));
    }
    const uint32_t a = take(front::parse_hex(o->a, "--a"));
    const uint32_t b = take(front::parse_hex(o->b, "--b"));
    const uint32_t sel = take(front::parse_hex(o->sel, "--sel"));
    const bool generic = m->mode == bits::PrmtMode::Generic;
    if (generic && sel > 0xFFFFu) {
      throw UserError(fmt::format(
          "selector {} is out of range: generic mode reads four nibbles, 0x0000 to 0xffff", hex32(sel)));
    }
    if (!generic && sel > 3u) {
      throw UserError(fmt::format("selector {} is out of range: mode {} reads only c[1:0], so give 0 to 3",
                                  hex32(sel), m->name));
    }
    const uint32_t d = bits::prmt(a, b, sel, m->mode);
    const uint64_t pool = (static_cast<uint64_t>(b) << 32) | a;
    const auto byte_of = [&](uint32_t i) { return static_cast<uint32_t>(pool >> (8 * i)) & 0xFFu; };

    struct Pick {
      uint32_t src;
      bool sign;
    };
    Pick picks[4];
    for (uint32_t i = 0; i < 4; ++i) {
      if (generic) {
        const uint32_t s = (sel >> (4 * i)) & 0xFu;
        picks[i] = Pick{s & 7u, (s & 8u) != 0};
      } else {
        picks[i] = Pick{bits::prmt_mode_source(m->mode, i, sel & 3u), false};
      }
    }

    if (o->json) {
      nlohmann::json bytes = nlohmann::json::array();
      for (uint32_t i = 0; i < 4; ++i) {
        bytes.push_back({{"dst", i},
                         {"src", picks[i].src},
                         {"sign_replicate", picks[i].sign},
                         {"value", fmt::format("0x{:02x}", (d >> (8 * i)) & 0xFFu)}});
      }
      nlohmann::json j = {{"a", hex32(a)},   {"b", hex32(b)},      {"sel", hex32(sel)},
                          {"mode", m->name}, {"result", hex32(d)}, {"bytes", bytes}};
      fmt::print("{}\n", j.dump(2));
      return;
    }
    const Style st = terminal_style();
    fmt::print("source bytes {{b, a}}:\n  ");
    for (int i = 7; i >= 0; --i) fmt::print("  b{} ", i);
    fmt::print("\n  ");
    for (int i = 7; i >= 0; --i)
      fmt::print("  {} ", st.nibble(i, fmt::format("{:02x}", byte_of(static_cast<uint32_t>(i)))));
    fmt::print("\n\nselector {} ({} mode):\n", hex32(sel), m->name);
    for (int i = 3; i >= 0; --i) {
      const Pick& p = picks[i];
      const uint32_t v = byte_of(p.src);
      const std::string why = generic ? fmt::format("selector nibble {} = 0x{:x}", i, (sel >> (4 * i)) & 0xFu)
                                      : fmt::format("{} with c[1:0] = {}", m->name, sel & 3u);
      if (p.sign) {
        fmt::print("  d.b{} <- sign of b{} ({:02x} has msb {}, so {:02x})   {}\n", i, p.src, v, v >> 7,
                   (v & 0x80u) ? 0xFFu : 0x00u, st.dim(why));
      } else {
        fmt::print("  d.b{} <- b{} ({:02x})   {}\n", i, p.src, v, st.dim(why));
      }
    }
    fmt::print("\n  d = ");
    for (int i = 3; i >= 0; --i) {
      fmt::print("{}",
                 st.nibble(static_cast<int>(picks[i].src), fmt::format("{:02x}", (d >> (8 * i)) & 0xFFu)));
    }
    fmt::print("  = {}\n", st.bold(hex32(d)));
  });
}

}  // namespace dql::cli
