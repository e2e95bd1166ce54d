// sass: the SASS the build embedded for the program's own kernels. Lists the kernels with their
// instruction counts, prints one kernel's listing with LOP3.LUT tables and PRMT selectors
// decoded, or a counts table with the figures per output element.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "app/common/bench_report.hpp"
#include "commands.hpp"
#include "kernels/sass/embedded.hpp"
#include "render.hpp"

namespace dql::cli {

namespace {

using sass::OpClass;

// The classes the listing marks and the list shows: the instructions the recipes are made of.
constexpr OpClass kShown[] = {OpClass::Lop3,  OpClass::Prmt,  OpClass::Hfma2,
                              OpClass::Hadd2, OpClass::Hmul2, OpClass::I2F};

bool marked(OpClass c) {
  for (auto s : kShown)
    if (s == c) return true;
  return false;
}

// "sm_90", "sm90" or "90" -> "sm_90"; empty when the text is none of those.
std::string normal_arch(const std::string& s) {
  std::string digits = s;
  if (digits.rfind("sm_", 0) == 0) {
    digits = digits.substr(3);
  } else if (digits.rfind("sm", 0) == 0) {
    digits = digits.substr(2);
  }
  if (digits.empty() || digits.size() > 3) return {};
  for (char c : digits)
    if (c < '0' || c > '9') return {};
  return "sm_" + digits;
}

nlohmann::json counts_json(const sass::Counts& c) {
  nlohmann::json j = nlohmann::json::object();
  for (int i = 0; i < sass::kClassCount; ++i) j[sass::class_key(static_cast<OpClass>(i))] = c.by_class[i];
  j["total"] = c.total;
  return j;
}

nlohmann::json kernel_json(const sass::Function& f) {
  nlohmann::json j = {{"name", f.name},
                      {"demangled", f.demangled},
                      {"mangled", f.mangled},
                      {"bench_kernel", f.bench},
                      {"instructions", sass::count(f.instrs).total},
                      {"counts", counts_json(sass::count(f.instrs))}};
  // The template arguments by the names the kernel's source gives them, in order.
  if (const auto named = sass::named_args(f.name); !named.empty()) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& a : named) params.push_back({{"name", a.name}, {"value", a.value}});
    j["template_parameters"] = params;
  }
  if (const auto pe = sass::per_element(f)) {
    nlohmann::json per = nlohmann::json::object();
    for (int i = 0; i < sass::kClassCount; ++i)
      per[sass::class_key(static_cast<OpClass>(i))] = pe->per(static_cast<OpClass>(i));
    per["total"] = pe->total();
    j["per_element"] = {{"elements", pe->elements},
                        {"loop", pe->loop},
                        {"first_address", f.instrs[pe->begin].address},
                        {"last_address", f.instrs[pe->end - 1].address},
                        {"counts", counts_json(pe->counts)},
                        {"per_element", per}};
  } else {
    j["per_element"] = nullptr;
  }
  return j;
}

nlohmann::json instr_json(const sass::Instr& in) {
  nlohmann::json j = {{"address", in.address},
                      {"guard", in.guard},
                      {"opcode", in.opcode},
                      {"operands", in.operands},
                      {"class", sass::class_key(in.cls)}};
  if (in.lop3) {
    j["lop3"] = {{"lut", in.lop3->lut},   {"lut_hex", fmt::format("0x{:02x}", in.lop3->lut)},
                 {"expr", in.lop3->expr}, {"a", in.lop3->a},
                 {"b", in.lop3->b},       {"c", in.lop3->c}};
  }
  if (in.prmt) {
    nlohmann::json p = {{"a", in.prmt->a}, {"b", in.prmt->b}, {"immediate", in.prmt->immediate}};
    if (in.prmt->immediate) {
      p["selector"] = in.prmt->sel;
      p["selector_hex"] = fmt::format("0x{:04x}", in.prmt->sel);
      nlohmann::json bytes = nlohmann::json::array();
      for (int i = 0; i < 4; ++i)
        bytes.push_back({{"source", in.prmt->source[i]}, {"sign", in.prmt->sign[i]}});
      p["bytes"] = bytes;  // destination byte 0 first
    }
    j["prmt"] = p;
  }
  const auto d = sass::decode_text(in);
  if (!d.empty()) j["decoded"] = d;
  return j;
}

std::string per_element_cell(const sass::Function& f) {
  const auto pe = sass::per_element(f);
  return pe ? fmt::format("{:.2f}", pe->total()) : "";
}

// Under a kernel's line: the saved run's rows that launched it (or, where the run lists no launches, the
// rows of its bench kernel), with their times; the SASS view's times by launch, in the terminal.
void print_times(const std::vector<const BenchRow*>& rows, const Style& st) {
  for (const BenchRow* r : rows) {
    fmt::print("    {}\n", st.dim(front::timed_row_text(*r)));
  }
}

// A line printed without the spaces its padding left at its end.
void print_line(std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  fmt::print("{}\n", line);
}

// The name column: as wide as the longest name listed (template arguments included), at least 44.
size_t name_width(const std::vector<const sass::Function*>& fns) {
  size_t w = 44;
  for (const auto* f : fns) w = std::max(w, f->name.size());
  return w;
}

// With `timed` (a saved run's rows), each kernel's line is followed by the rows that launched it.
void print_list(const std::vector<const sass::Function*>& fns, const Style& st,
                const std::vector<BenchRow>* timed = nullptr) {
  const size_t w = name_width(fns);
  fmt::print("{:<{}} {:>6}", "kernel", w, "instrs");
  for (auto c : kShown) fmt::print(" {:>6}", sass::class_name(c));
  fmt::print(" {:>8}  {}\n", "per elem", "bench kernel");
  for (const auto* f : fns) {
    const auto c = sass::count(f->instrs);
    std::string line = fmt::format("{:<{}} {:>6}", f->name, w, c.total);
    for (auto k : kShown) line += fmt::format(" {:>6}", c[k]);
    line += fmt::format(" {:>8}", per_element_cell(*f));
    if (!f->bench.empty()) line += "  " + st.dim(f->bench);
    print_line(std::move(line));  // a kernel without figures ends at its counts
    if (timed) print_times(front::rows_timing(*timed, *f), st);
  }
}

void print_counts(const std::vector<const sass::Function*>& fns) {
  const size_t w = name_width(fns);
  fmt::print("{:<{}} {:>6}", "kernel", w, "");
  for (int i = 0; i < sass::kClassCount; ++i) fmt::print(" {:>6}", sass::class_name(static_cast<OpClass>(i)));
  fmt::print(" {:>6}\n", "total");
  for (const auto* f : fns) {
    const auto c = sass::count(f->instrs);
    fmt::print("{:<{}} {:>6}", f->name, w, "all");
    for (int i = 0; i < sass::kClassCount; ++i) fmt::print(" {:>6}", c.by_class[i]);
    fmt::print(" {:>6}\n", c.total);
    if (const auto pe = sass::per_element(*f)) {
      fmt::print("{:<{}} {:>6}",
                 fmt::format("  per element ({} a pass, {})", pe->elements, pe->loop ? "loop" : "kernel"), w,
                 "/elem");
      for (int i = 0; i < sass::kClassCount; ++i) fmt::print(" {:>6.2f}", pe->per(static_cast<OpClass>(i)));
      fmt::print(" {:>6.2f}\n", pe->total());
    }
  }
}

void print_listing(const sass::Function& f, const std::string& arch, const Style& st) {
  const auto c = sass::count(f.instrs);
  fmt::print("{}  ({})\n{}\n", st.bold(f.name), arch, st.dim(f.demangled));
  if (const std::string params = sass::param_list(f.name); !params.empty())
    fmt::print("{}\n", st.dim("template parameters: " + params));
  std::string summary = fmt::format("{} instructions:", c.total);
  for (auto k : kShown) summary += fmt::format(" {} {}", c[k], sass::class_name(k));
  fmt::print("{}\n", summary);
  const auto pe = sass::per_element(f);
  if (pe) {
    fmt::print("per element: {:.2f} instructions ({} in the {} marked '|', over {} elements a thread)\n",
               pe->total(), pe->counts.total, pe->loop ? "loop" : "kernel up to its last EXIT", pe->elements);
  }
  fmt::print("\n");
  for (size_t i = 0; i < f.instrs.size(); ++i) {
    const auto& in = f.instrs[i];
    const bool in_pass = pe && i >= pe->begin && i < pe->end;
    const std::string text = in.text();
    const std::string decoded = sass::decode_text(in);
    const bool mark = marked(in.cls);
    std::string line = fmt::format("{} {}  {}  ", in_pass ? '|' : ' ',
                                   st.dim(fmt::format("{:04x}", in.address)), mark ? ">" : " ");
    line += mark ? st.bold(fmt::format("{:<52}", text)) : fmt::format("{:<52}", text);
    if (!decoded.empty()) line += "  " + st.good(decoded);
    print_line(std::move(line));
  }
}

// The architecture a saved run's GPU had ("9.0" -> "sm_90"); empty for the CPU twin's runs and where the
// file does not say.
std::string run_arch(const front::SavedRun& run) {
  const nlohmann::json& d = run.device;
  if (d.value("backend", "") != "cuda") return {};  // the CPU twin's run: its rows name bench kernels
  if (!d.contains("compute_capability") || !d["compute_capability"].is_string()) return {};
  std::string cc = d["compute_capability"].get<std::string>();
  cc.erase(std::remove(cc.begin(), cc.end(), '.'), cc.end());
  return normal_arch(cc);
}

// The signatures a saved run launched that the listing lacks, in the order the run launched them.
std::vector<std::string> launched_elsewhere(const front::SavedRun& run, const sass::Listing& listing) {
  std::vector<std::string> missing;
  for (const BenchRow& r : run.rows) {
    for (const cuda::KernelLaunch& l : r.launches) {
      if (l.library || std::find(missing.begin(), missing.end(), l.name) != missing.end()) continue;
      const bool found = std::any_of(listing.functions.begin(), listing.functions.end(),
                                     [&](const sass::Function& f) { return f.demangled == l.name; });
      if (!found) missing.push_back(l.name);
    }
  }
  return missing;
}

}  // namespace

void add_sass(CLI::App& app) {
  struct Opts {
    std::string kernel, arch, run;
    bool counts = false, json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd =
      app.add_subcommand("sass", "The SASS of the program's own kernels, LOP3 and PRMT immediates decoded");
  cmd->add_option("--kernel", o->kernel,
                  "Kernels whose name (or bench name) matches the pattern, e.g. 'dequant_plain*cutlass*' or "
                  "'dequant/nf4*'");
  cmd->add_option("--arch", o->arch, "The GPU architecture, e.g. sm_90 (default: sm_90 when embedded)");
  cmd->add_flag("--counts", o->counts,
                "Instruction counts per class and per output element instead of listings");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->add_option(
      "--run", o->run,
      "A saved run (bench --json, the timing view's Save JSON): only the kernels it launched, each "
      "with the rows that launched it and their times");
  cmd->callback([o] {
    if (sass::embedded().empty()) throw UserError(std::string(sass::unavailable_reason()));
    std::optional<front::SavedRun> run;
    if (!o->run.empty()) {
      try {
        run = front::load_bench_run(o->run);
      } catch (const Error& e) {
        throw UserError(e.what());
      }
    }
    // A run's kernels are those of its device's architecture.
    std::string arch = run && !run_arch(*run).empty() ? run_arch(*run) : sass::default_arch();
    if (!o->arch.empty()) {
      arch = normal_arch(o->arch);
      if (arch.empty()) {
        throw UserError(fmt::format("\"{}\" is not an architecture; give it as sm_90 (this build has {})",
                                    o->arch, sass::embedded_arch_list()));
      }
    }
    const sass::Listing* listing = sass::embedded_listing(arch);
    if (listing == nullptr) {
      throw UserError(
          fmt::format("this build has no SASS for {}; it has {}", arch, sass::embedded_arch_list()));
    }
    std::vector<const sass::Function*> fns;
    for (const auto& f : listing->functions) {
      if (run && front::rows_timing(run->rows, f).empty()) continue;
      if (o->kernel.empty() || sass::glob_match(o->kernel, f.name) ||
          (!f.bench.empty() && sass::glob_match(o->kernel, f.bench)) ||
          sass::glob_match(o->kernel, f.mangled)) {
        fns.push_back(&f);
      }
    }
    // A GPU's run lists what each row launched; the CPU twin's names the bench kernels it timed.
    const bool listed = run && std::any_of(run->rows.begin(), run->rows.end(),
                                           [](const BenchRow& r) { return !r.launches.empty(); });
    const std::vector<std::string> elsewhere =
        run ? launched_elsewhere(*run, *listing) : std::vector<std::string>{};
    // After what the listing holds: the run's kernels it lacks, as a refusal (status 2).
    const auto check_elsewhere = [&] {
      if (elsewhere.empty()) return;
      std::string names;
      for (const std::string& n : elsewhere) names += (names.empty() ? "" : "; ") + sass::short_name(n);
      throw UserError(fmt::format(
          "{} kernel{} that '{}' launched {} not in this build's {} listing (a run from another build: take "
          "it again with this one): {}",
          elsewhere.size(), elsewhere.size() == 1 ? "" : "s", o->run, elsewhere.size() == 1 ? "is" : "are",
          arch, names));
    };
    if (run && fns.empty() && o->kernel.empty()) {
      check_elsewhere();
      throw UserError(fmt::format(
          "'{}' launched none of this build's kernels (its rows are library calls or list no launches "
          "and time no bench kernel of the listing)",
          o->run));
    }
    if (fns.empty()) {
      throw UserError(fmt::format("no kernel {}matches \"{}\"; `dequant-lab sass` lists the {} kernels of {}",
                                  run ? (listed ? "that the run launched " : "that the run timed ") : "",
                                  o->kernel, listing->functions.size(), arch));
    }
    const bool listings = !o->kernel.empty() && !o->counts;
    if (o->json) {
      nlohmann::json archs = nlohmann::json::array();
      for (const auto& e : sass::embedded()) archs.push_back(e.arch);
      nlohmann::json kernels = nlohmann::json::array();
      for (const auto* f : fns) {
        auto j = kernel_json(*f);
        if (run) {
          nlohmann::json timed = nlohmann::json::array();
          for (const BenchRow* r : front::rows_timing(run->rows, *f)) {
            timed.push_back({{"kernel", r->kernel},
                             {"shape", r->shape},
                             {"median_us", r->stats.median_s * 1e6},
                             {"gbps", r->gbps},
                             {"pct_of_copy", r->pct_of_copy}});
          }
          j["timed"] = timed;
        }
        if (listings) {
          nlohmann::json l = nlohmann::json::array();
          for (const auto& in : f->instrs) l.push_back(instr_json(in));
          j["listing"] = l;
        }
        kernels.push_back(j);
      }
      nlohmann::json out = {{"arch", arch}, {"archs", archs}, {"kernels", kernels}};
      if (run) {
        out["run"] = {{"file", o->run}, {"device", run->device_line}, {"not_in_listing", elsewhere}};
      }
      fmt::print("{}\n", out.dump(2));
      check_elsewhere();
      return;
    }
    const Style st = terminal_style();
    if (listings) {
      for (size_t i = 0; i < fns.size(); ++i) {
        if (i) fmt::print("\n");
        print_listing(*fns[i], arch, st);
        if (run) print_times(front::rows_timing(run->rows, *fns[i]), st);
      }
      check_elsewhere();
      return;
    }
    fmt::print("SASS for {} (this build has {}), {} of {} kernels\n", arch, sass::embedded_arch_list(),
               fns.size(), listing->functions.size());
    if (run && listed) fmt::print("launched by the saved run {} ({})\n", o->run, run->device_line);
    if (run && !listed) {
      fmt::print(
          "timed by the saved run {} ({}), whose rows list no launches: each kernel of the bench kernels "
          "it timed (the launcher picks one by shape)\n",
          o->run, run->device_line);
    }
    fmt::print("\n");
    if (o->counts) {
      print_counts(fns);
    } else {
      print_list(fns, st, run ? &run->rows : nullptr);
      fmt::print("\n{}\n",
                 st.dim("per elem: instructions per output element of one pass (`--counts` for every "
                        "class); `--kernel NAME` prints a listing"));
    }
    check_elsewhere();
  });
}

}  // namespace dql::cli
