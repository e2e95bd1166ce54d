// The desktop app's model and settings, without a window: state tokens, retrace, provenance,
// opening a step in its view, settings files, and the exact decimal expansion the float view shows.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "app/gui/model.hpp"
#include "app/gui/settings.hpp"
#include "app/gui/widgets.hpp"
#include "kernels/recipes/catalog.hpp"
#include "saved_run.hpp"

using dql::gui::Model;
using dql::gui::ViewId;
namespace recipes = dql::recipes;

namespace {
std::string fmt_token(int step) {
  return "dql:ft-uint8-fp16:0x80ff017f:step=" + std::to_string(step) + ":view=prmt";
}

Model fresh() {
  Model m;
  m.cpu = dql::make_cpu_backend();
  m.retrace();
  return m;
}
}  // namespace

TEST_CASE("retrace: the trace, the reference outputs and the step range") {
  Model m = fresh();
  REQUIRE(m.trace.steps.size() > 5);
  CHECK(m.trace.steps[0].value == 0x76543210u);
  CHECK(m.expected.size() == 8);
  // AWQ unsigned int4: element e of 0x76543210 read through the order 0 2 4 6 1 3 5 7.
  for (int e = 0; e < 8; ++e) CHECK(recipes::output_bits(m.trace.outputs, e) == m.expected[e].bits);
  m.step = 1000;
  m.retrace();
  CHECK(m.step == static_cast<int>(m.trace.steps.size()) - 1);
  const uint64_t r = m.revision;
  m.input.reg = 0x01234567u;
  m.retrace();
  CHECK(m.revision == r + 1);
  CHECK(m.trace.steps[0].value == 0x01234567u);
  CHECK(m.gpu_values.empty());  // no active CUDA backend in this model
}

TEST_CASE("provenance: each destination bit is coloured by the element that reaches it") {
  Model m = fresh();
  // Step 0 is the input register: nibble i holds element order[i].
  const auto& spec = *recipes::info_of(m.recipe).spec;
  for (int b = 0; b < 32; ++b) CHECK(m.bit_source[0][b] == spec.order[b / 4]);
  // The first lop3 (h0 = (src & 0x000f000f) | 0x64006400): bits 0-3 come from nibble 0 (e0),
  // bits 16-19 from nibble 4 (e1), the magic exponent bits from no element.
  int lop = -1;
  for (size_t s = 0; s < m.trace.steps.size(); ++s) {
    if (m.trace.steps[s].kind == recipes::OpKind::Lop3) {
      lop = static_cast<int>(s);
      break;
    }
  }
  REQUIRE(lop > 0);
  CHECK(m.bit_source[lop][0] == 0);
  CHECK(m.bit_source[lop][3] == 0);
  CHECK(m.bit_source[lop][16] == 1);
  CHECK(m.bit_source[lop][10] == Model::kNoSource);
  CHECK(m.bit_source[lop][26] == Model::kNoSource);
}

TEST_CASE("state token round trip") {
  Model m = fresh();
  CHECK(m.token() == "dql:awq-int4-fp16:0x76543210:step=0");
  std::string why;
  REQUIRE(m.restore("dql:ft-int4-fp16:0xdeadbeef:step=5", &why));
  CHECK(m.recipe == recipes::RecipeId::FtInt4F16);
  CHECK(m.input.reg == 0xDEADBEEFu);
  CHECK(m.step == 5);
  CHECK(m.trace.steps[0].value == 0xDEADBEEFu);
  CHECK(m.token() == "dql:ft-int4-fp16:0xdeadbeef:step=5");
  REQUIRE(m.restore(" dql:cutlass-int8-fp16:0x80ff017f:step=2:view=lop3\n", &why));
  CHECK(m.view == ViewId::Lop3);
  CHECK(m.token() == "dql:cutlass-int8-fp16:0x80ff017f:step=2:view=lop3");
  Model other = fresh();
  REQUIRE(other.restore(m.token(), &why));
  CHECK(other.token() == m.token());
  CHECK(other.trace.outputs == m.trace.outputs);
}

TEST_CASE("malformed state tokens are refused with a sentence and change nothing") {
  Model m = fresh();
  std::string why;
  REQUIRE(m.restore("dql:awq-int4-fp16:0x11112222:step=3", &why));
  const std::string before = m.token();
  const char* bad[] = {
      "",
      "hello",
      "dql:awq-int4-fp16:0x76543210",            // no step
      "dql:nope-int4:0x76543210:step=1",         // unknown recipe
      "dql:awq-int4-fp16:0xZZ:step=1",           // bad hex
      "dql:awq-int4-fp16:0x123456789:step=1",    // nine digits
      "dql:awq-int4-fp16:0x76543210:step=-1",    // negative
      "dql:awq-int4-fp16:0x76543210:step=9999",  // past the end
      "dql:awq-int4-fp16:0x76543210:step=2x",    // trailing junk
      "dql:awq-int4-fp16:0x76543210:step=1:view=nowhere",
      "dql:awq-int4-fp16:0x76543210:step=1:zoom=2",
      "dql:awq-int4-fp16:0x76543210:step=1:absmax=0x3f000000",  // absmax on a recipe without it
      "dql:nf4-fp16:0x76543210:step=1:absmax=0x7fc00000",       // NaN
      "dql:nf4-fp16:0x76543210:step=1:absmax=0x7f800000",       // infinite
      "dql:nf4-fp16:0x76543210:step=1:absmax=0xbf800000",       // negative
  };
  for (const char* t : bad) {
    CAPTURE(t);
    why.clear();
    CHECK_FALSE(m.restore(t, &why));
    CHECK(!why.empty());
    CHECK(m.token() == before);
  }
  CHECK_FALSE(m.restore("dql:nf4-fp16:0x76543210:step=1:absmax=0x7fc00000", &why));
  CHECK(why.find("finite fp32 value >= 0") != std::string::npos);
  CHECK(m.restore("dql:nf4-fp16:0x76543210:step=1:absmax=0x3f000000", &why));  // 0.5 is taken
  CHECK(m.restore(before, &why));
  CHECK_FALSE(m.restore("dql:awq-int4-fp16:0x76543210:step=9999", &why));
  CHECK(why.find("past the end") != std::string::npos);
  // A step too long for any integer is out of range, and the range is said.
  CHECK_FALSE(m.restore("dql:awq-int4-fp16:0x76543210:step=99999999999999999999", &why));
  CHECK(why ==
        "the state token's step '99999999999999999999' is out of range: awq-int4-fp16 has steps 0 to 9");
  CHECK_FALSE(m.restore("dql:awq-int4-fp16:0x76543210:step=-1", &why));
  CHECK(why == "the state token's step '-1' is out of range: awq-int4-fp16 has steps 0 to 9");
  CHECK_FALSE(m.restore("dql:awq-int4-fp16:0x76543210:step=2x", &why));
  CHECK(why == "the state token's step '2x' is not a whole number: awq-int4-fp16 has steps 0 to 9");
  CHECK(m.token() == before);
  CHECK_FALSE(m.restore("dql:nope:0x1:step=1", &why));
  CHECK(why.find("awq-int4-fp16") != std::string::npos);  // lists what is accepted
}

TEST_CASE("open_step_in_view: a lop3 step opens the LOP3 view on its operands, a prmt step the PRMT view") {
  Model m = fresh();
  int lop = -1;
  for (size_t s = 0; s < m.trace.steps.size(); ++s) {
    if (m.trace.steps[s].kind == recipes::OpKind::Lop3) lop = static_cast<int>(s);
  }
  REQUIRE(lop >= 0);
  const auto& s = m.trace.steps[lop];
  m.lop3_lut = 0;
  m.open_step_in_view(lop);
  CHECK(m.view == ViewId::Lop3);
  CHECK(m.step == lop);
  CHECK(m.lop3_lut == s.imm);
  CHECK(m.lop3_a == s.srcs[0].value);
  CHECK(m.lop3_c == s.srcs[2].value);
  CHECK(dql::bits::soft_lop3(m.lop3_a, m.lop3_b, m.lop3_c, m.lop3_lut) == s.value);

  std::string why;
  REQUIRE(m.restore("dql:ft-uint8-fp16:0x80ff017f:step=0", &why));
  int pr = -1;
  for (size_t i = 0; i < m.trace.steps.size(); ++i) {
    if (m.trace.steps[i].kind == recipes::OpKind::Prmt) pr = static_cast<int>(i);
  }
  REQUIRE(pr >= 0);
  m.open_step_in_view(pr);
  CHECK(m.view == ViewId::Prmt);
  CHECK(dql::bits::soft_prmt(m.prmt_a, m.prmt_b, m.prmt_sel) == m.trace.steps[pr].value);
  // A token naming the view on such a step opens it on the step's operands.
  Model t = fresh();
  REQUIRE(t.restore(fmt_token(pr), &why));
  CHECK(t.view == ViewId::Prmt);
  CHECK(t.prmt_sel == (m.trace.steps[pr].imm & 0xFFFFu));
  CHECK(t.prmt_a == m.trace.steps[pr].srcs[0].value);
  // Other kinds leave the view alone.
  m.view = ViewId::Stepper;
  m.open_step_in_view(0);
  CHECK(m.view == ViewId::Stepper);
}

TEST_CASE("settings: defaults, round trip, corrupt file reported") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dql-gui-settings-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::string problem;
  dql::gui::Settings s = dql::gui::load_settings(dir.string(), &problem);
  CHECK(problem.empty());
  CHECK(s.view == "stepper");
  s.width = 1234;
  s.view = "prmt";
  s.state = "dql:awq-int4-fp16:0x76543210:step=5";
  REQUIRE(dql::gui::save_settings(dir.string(), s, &problem));
  CHECK_FALSE(fs::exists(dir / "settings.json.tmp"));
  const dql::gui::Settings back = dql::gui::load_settings(dir.string(), &problem);
  CHECK(problem.empty());
  CHECK(back.width == 1234);
  CHECK(back.view == "prmt");
  CHECK(back.state == s.state);
  { std::ofstream(dir / "settings.json") << "{ \"width\": 12"; }
  const dql::gui::Settings corrupt = dql::gui::load_settings(dir.string(), &problem);
  CHECK(problem.find("not valid JSON") != std::string::npos);
  CHECK(corrupt.width == dql::gui::Settings{}.width);
  { std::ofstream(dir / "settings.json") << "{ \"width\": \"wide\" }"; }
  problem.clear();
  dql::gui::load_settings(dir.string(), &problem);
  CHECK(problem.find("wrong type") != std::string::npos);
  // The text size: what the View menu reaches is kept; beyond it the file is refused, not clamped.
  { std::ofstream(dir / "settings.json") << "{ \"font_scale\": 3.0 }"; }
  problem.clear();
  CHECK(dql::gui::load_settings(dir.string(), &problem).font_scale == 3.0f);
  CHECK(problem.empty());
  { std::ofstream(dir / "settings.json") << "{ \"font_scale\": 3.5, \"width\": 1234 }"; }
  const dql::gui::Settings large = dql::gui::load_settings(dir.string(), &problem);
  CHECK(problem.find("text scale 3.5 outside 0.6 .. 3") != std::string::npos);
  CHECK(large.font_scale == 1.0f);
  CHECK(large.width == dql::gui::Settings{}.width);
  fs::remove_all(dir);
}

TEST_CASE(
    "saved run: shown as the results with its device, and a file that cannot be shown changes nothing") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dql-gui-saved-run-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string good = (dir / "h200.json").string(), empty = (dir / "empty.json").string(),
                    bad = (dir / "bad.json").string();
  const nlohmann::json run = dql::test::h200_run();
  std::ofstream(good) << run.dump();
  std::ofstream(empty)
      << nlohmann::json{{"device", {{"name", "NVIDIA H200"}}}, {"rows", nlohmann::json::array()}}.dump();
  nlohmann::json wrong = run;
  wrong["rows"][0]["bytes"] = "many";
  std::ofstream(bad) << wrong.dump();
  Model m = fresh();
  std::string why;
  REQUIRE(m.open_saved_run(good, &why));
  REQUIRE(m.bench_rows.size() == 1);
  CHECK(m.bench_rows[0].kernel == "dequant/awq-int4-fp16");
  CHECK(m.bench_rows[0].bytes == 151060480.0);
  CHECK(m.bench_rows[0].launches.at(0).shared_bytes == 65536);
  CHECK(m.bench_source() == good + " (NVIDIA H200, compute capability 9.0, 132 SMs)");
  CHECK(m.bench_file == good);  // the timing view's field shows it
  CHECK(m.bench_copy_gbps == 4287.0);
  CHECK(m.bench_device["name"] == "NVIDIA H200");
  // Refused: the sentence, and the results, their source and device as they were.
  CHECK_FALSE(m.open_saved_run(bad, &why));
  CHECK(why == "'" + bad + "' row 0: \"bytes\" is not a number, 0 or more, as bench --json writes it");
  CHECK_FALSE(m.open_saved_run(empty, &why));
  CHECK(why == "'" + empty + "' holds no rows: save a run that timed at least one kernel");
  CHECK_FALSE(m.open_saved_run((dir / "absent.json").string(), &why));
  CHECK(why.find("cannot open") != std::string::npos);
  REQUIRE(m.bench_rows.size() == 1);
  CHECK(m.bench_rows[0].kernel == "dequant/awq-int4-fp16");
  CHECK(m.bench_source() == good + " (NVIDIA H200, compute capability 9.0, 132 SMs)");
  CHECK(m.bench_file == good);
  CHECK(m.bench_copy_gbps == 4287.0);
  fs::remove_all(dir);
}

TEST_CASE("bit rows narrow to the room there is, down to a digit's width") {
  using dql::gui::bit_row_scale;
  CHECK(bit_row_scale(1000.0f, 1200.0f, 0.6f) == 1.0f);  // fits: drawn as wanted, never wider
  CHECK(bit_row_scale(1000.0f, 800.0f, 0.6f) == 0.8f);   // narrower, to the room
  CHECK(bit_row_scale(1000.0f, 300.0f, 0.6f) == 0.6f);   // not below a digit's width: the view scrolls
  CHECK(bit_row_scale(1000.0f, 300.0f, 1.25f) == 1.0f);  // a cell already narrower than a digit stays
  CHECK(bit_row_scale(1000.0f, -50.0f, 0.6f) == 0.6f);   // no room left on the line at all
}

TEST_CASE("an axis takes as many 1-2-5 ticks as its labels leave room for") {
  using dql::gui::fitting_ticks;
  using dql::gui::nice_step;
  CHECK(nice_step(37.0, 5) == 10.0);
  CHECK(nice_step(37.0, 3) == 20.0);
  CHECK(nice_step(37.0, 1) == 50.0);
  CHECK(nice_step(0.0042, 4) == doctest::Approx(0.002));
  const auto sixty = [](double) { return 60.0f; };
  // Wide: the five steps asked for (0, 10, .., 40 us: 250 pixels apart).
  CHECK(fitting_ticks(37.0, 5, 1000.0f, 10.0f, 0.0f, sixty).step == 10.0);
  // Narrower: 0 .. 40 in tens would put 60-pixel labels 50 apart; in twenties they are 100 apart.
  CHECK(fitting_ticks(37.0, 5, 200.0f, 10.0f, 0.0f, sixty).step == 20.0);
  // The last label pushed left to end at the axis's end: 0, 20, 40 fit with a gap of 10 exactly, not 11,
  // and then only the ends are labelled; with room past the end they fit again.
  CHECK(fitting_ticks(37.0, 5, 200.0f, 11.0f, 0.0f, sixty).step == 50.0);
  CHECK(fitting_ticks(37.0, 5, 200.0f, 11.0f, 30.0f, sixty).step == 20.0);
  // Labels of different widths: the widest pair decides.
  const auto wide_end = [](double v) { return v >= 40.0 ? 120.0f : 40.0f; };
  CHECK(fitting_ticks(37.0, 5, 360.0f, 10.0f, 60.0f, wide_end).step == 10.0);
  CHECK(fitting_ticks(37.0, 5, 300.0f, 10.0f, 60.0f, wide_end).step == 20.0);
  CHECK(fitting_ticks(37.0, 5, 300.0f, 10.0f, 60.0f, sixty).step == 10.0);  // 60 wide all: fits at 300
  // Nothing fits: the coarsest step, one label at each end.
  CHECK(fitting_ticks(37.0, 5, 10.0f, 10.0f, 0.0f, sixty).step == 50.0);
  // The axis ends at the first tick at or past the top: 0 .. 40 in four steps of 10, 0 .. 50 in one.
  CHECK(fitting_ticks(37.0, 5, 1000.0f, 10.0f, 0.0f, sixty).steps == 4);
  CHECK(fitting_ticks(37.0, 5, 10.0f, 10.0f, 0.0f, sixty).steps == 1);
  CHECK(fitting_ticks(40.0, 5, 1000.0f, 10.0f, 0.0f, sixty).steps == 4);  // a top on a tick ends there
}

TEST_CASE("exact decimal expansion of float patterns") {
  using dql::gui::exact_decimal;
  namespace bits = dql::bits;
  CHECK(exact_decimal(0x6400, bits::kF16) == "1024");
  CHECK(exact_decimal(0x3C00, bits::kF16) == "1");
  CHECK(exact_decimal(0xBC00, bits::kF16) == "-1");
  CHECK(exact_decimal(0x0001, bits::kF16) == "0.000000059604644775390625");  // 2^-24
  CHECK(exact_decimal(0x3DCCCCCDu, bits::kF32) == "0.100000001490116119384765625");
  CHECK(exact_decimal(0x7F7FFFFFu, bits::kF32) == "340282346638528859811704183484516925440");
  CHECK(exact_decimal(0x7C00, bits::kF16) == "inf");
  CHECK(exact_decimal(0x7E00, bits::kF16) == "nan");
  CHECK(exact_decimal(0x8000, bits::kF16) == "-0");
  CHECK(dql::gui::number_text(0.1) == "0.1");
}

TEST_CASE("script: items in order, and an item that is not key=value or a key no view takes is refused") {
  using dql::gui::parse_script;
  using dql::gui::ScriptItem;
  std::vector<ScriptItem> items;
  std::string why;
  REQUIRE(parse_script("timing.run=1;timing.tab=sweep;app.svg=a=b.svg;", &items, &why));
  REQUIRE(items.size() == 3);
  CHECK(items[0].key == "timing.run");
  CHECK(items[1].value == "sweep");
  CHECK(items[2].key == "app.svg");
  CHECK(items[2].value == "a=b.svg");  // the first '=' ends the key
  CHECK(parse_script("", &items, &why));
  CHECK(items.empty());
  // Spaces around items, keys and values are layout; spaces inside a value are kept.
  REQUIRE(parse_script(" sass.filter = ft_lane ; sass.kernel=ft_lane_kernel<fp16, true*;  ", &items, &why));
  REQUIRE(items.size() == 2);
  CHECK(items[0].key == "sass.filter");
  CHECK(items[0].value == "ft_lane");
  CHECK(items[1].key == "sass.kernel");
  CHECK(items[1].value == "ft_lane_kernel<fp16, true*");
  CHECK(parse_script(" ; ", &items, &why));
  CHECK(items.empty());

  CHECK_FALSE(parse_script("stepper.hex=0x1;timing.run", &items, &why));
  CHECK(why ==
        "'timing.run' is not key=value; items are separated by ';', e.g. timing.run=1;timing.tab=sweep");
  CHECK_FALSE(parse_script("timing.rn=1", &items, &why));
  CHECK(why.rfind("'timing.rn' is not a script key; the keys are app.svg, app.view-png, ", 0) == 0);
  // The views' own markers of a run under way are not the user's to give.
  CHECK_FALSE(parse_script("timing.running=1", &items, &why));
}

TEST_CASE("script: a key of another view than the one shown is named with the --view that opens it") {
  using dql::gui::script_view_problem;
  CHECK(script_view_problem("timing.run", ViewId::Stepper) ==
        "'timing.run' is a key of the timing view, and the app shows the stepper view: open it with --view "
        "timing");
  CHECK(script_view_problem("timing.run", ViewId::Timing).empty());
  CHECK(script_view_problem("app.svg", ViewId::Sass).empty());
  CHECK(script_view_problem("lop3.a", ViewId::Lop3).empty());
}

TEST_CASE("script: kScriptKeys is every key the views read, and no other") {
  // Every string literal of the views' sources shaped like a script key ("timing.tab"), less the
  // markers the views push for themselves while a run is under way.
  const std::regex literal("\"((app|stepper|float|lop3|prmt|layouts|quant|timing|sass)\\.[a-z-]+)\"");
  std::set<std::string> read;
  for (const auto& e : std::filesystem::recursive_directory_iterator(DQL_GUI_SOURCES)) {
    if (e.path().extension() != ".cpp") continue;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("#include", 0) == 0) continue;
      for (std::sregex_iterator it(line.begin(), line.end(), literal), end; it != end; ++it)
        read.insert((*it)[1].str());
    }
  }
  CHECK(read.erase("timing.running") == 1);
  CHECK(read.erase("quant.running") == 1);
  const std::set<std::string> registered(std::begin(dql::gui::kScriptKeys), std::end(dql::gui::kScriptKeys));
  CHECK(read == registered);
}
