// The layouts, quantize and timing views in the running app under Xvfb: the layouts view draws the
// tile map with the shader's colour ramp and agrees with the permute kernel, the quantize view
// refuses bad shapes with a sentence, and a scripted benchmark ends with its results on disk.
// Linked into the GUI app test program (its main skips everything where Xvfb is missing).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gui_support.hpp"
#include "saved_run.hpp"

namespace {

std::string tmp(const std::string& name) { return std::string(DQL_TEST_TMPDIR) + "/views-" + name; }

struct Outcome {
  int status = -1;
  std::string output;
  dql::test::Image picture;
};

// A scripted screenshot of one view (the app prints the error it shows and its state on stderr).
Outcome screenshot(const std::string& view, const std::string& script) {
  const std::string png = tmp(view + ".png");
  std::remove(png.c_str());
  const dql::test::GuiRun r = dql::test::run_under_xvfb(
      DQL_PROGRAM,
      "--screenshot " + png + " --size 1600x1000 --view " + view + " --script \"" + script + "\"",
      "1600x1000x24", tmp("log.txt"));
  return Outcome{r.status, r.output, dql::test::load_png(png)};
}

// How many rows, from the first to the last, hold colour `rgb` left of x = `width` from row `from` down (0
// where none does): the height of text drawn in that colour.
int rows_holding(const dql::test::Image& im, uint32_t rgb, int from, int width) {
  int top = -1, bottom = -1;
  for (int y = from; y < im.h; ++y) {
    for (int x = 0; x < width; ++x) {
      if (im.at(x, y) != rgb) continue;
      if (top < 0) top = y;
      bottom = y;
      break;
    }
  }
  return top < 0 ? 0 : bottom - top + 1;
}

// A screenshot of a 1280x800 window (a projector's size) with the app's other arguments `args`, kept as
// `name`.png.
Outcome shot_1280(const std::string& name, const std::string& args) {
  const std::string png = tmp(name + ".png");
  std::remove(png.c_str());
  const dql::test::GuiRun r = dql::test::run_under_xvfb(
      DQL_PROGRAM, "--screenshot " + png + " --size 1280x800 " + args, "1280x800x24", tmp("log.txt"));
  return Outcome{r.status, r.output, dql::test::load_png(png)};
}

// Pixels of colour `rgb` in rows [from, to).
size_t pixels_of(const dql::test::Image& im, uint32_t rgb, int from, int to) {
  size_t n = 0;
  for (int y = from; y < to; ++y) {
    for (int x = 0; x < im.w; ++x) n += im.at(x, y) == rgb ? 1 : 0;
  }
  return n;
}

// A scripted benchmark in the timing view, its results saved to `json` (removed first).
Outcome timed_run(const std::string& script, const std::string& json) {
  std::remove(json.c_str());
  return screenshot("timing", script + ";timing.run=1;timing.save-json=" + json);
}

// The report a timed run saved.
nlohmann::json saved_report(const std::string& json) {
  std::ifstream f(json);
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

// The ends of the heatmap shader's ramp (shaders/heatmap.frag) and the palette's "good" green.
constexpr uint32_t kRampLow = 0x440154, kRampHigh = 0xFDE725, kGood = 0x5AC86E;

// Each script is refused with its sentence before anything is timed (no results file is written).
struct Refusal {
  std::string script, sentence;
};
void check_refused_before_timing(const std::vector<Refusal>& cases, const std::string& json) {
  for (const Refusal& c : cases) {
    CAPTURE(c.script);
    const Outcome o = timed_run(c.script, json);
    INFO(o.output);
    CHECK(o.status == 0);
    CHECK(o.output.find(c.sentence) != std::string::npos);
    CHECK_FALSE(std::ifstream(json).good());
  }
}

}  // namespace

TEST_CASE("layouts view: the tile map drawn with the shader's ramp, and the permute kernel agrees") {
  for (const char* bits : {"4", "8"}) {
    CAPTURE(bits);
    const Outcome o = screenshot("layouts", std::string("layouts.bits=") + bits + ";layouts.tab=tile");
    INFO(o.output);
    REQUIRE(o.status == 0);
    REQUIRE(o.picture.w == 1600);
    CHECK(o.output.find("the app shows") == std::string::npos);  // no error
    // Coloured by word: word 0 and word 31 of the tile take the two ends of the ramp.
    CHECK(o.picture.has(kRampLow));
    CHECK(o.picture.has(kRampHigh));
    CHECK(o.picture.has(kGood));  // "Picture matches the permute kernel ..."
  }
}

TEST_CASE("quantize view: shapes the scheme cannot take are refused with a sentence") {
  const Outcome good = screenshot("quant", "quant.scheme=nf4;quant.shape=128x512");
  INFO(good.output);
  REQUIRE(good.status == 0);
  CHECK(good.output.find("the app shows") == std::string::npos);
  CHECK(good.picture.has(kRampLow));  // the error map, at its low end somewhere

  const Outcome bad = screenshot("quant", "quant.scheme=int4-sym;quant.group=128;quant.shape=256x100");
  INFO(bad.output);
  CHECK(bad.status == 0);
  CHECK(bad.output.find("K = 100 does not divide by the group size 128") != std::string::npos);

  const Outcome big = screenshot("quant", "quant.shape=400000x400000");
  INFO(big.output);
  CHECK(big.status == 0);
  CHECK(big.output.find("choose a smaller shape") != std::string::npos);

  const Outcome shape = screenshot("quant", "quant.shape=12x");
  INFO(shape.output);
  CHECK(shape.output.find("NxK") != std::string::npos);
}

TEST_CASE(
    "timing view: back-to-back runs, warm on the CPU twin, and cold there refused with the settings kept") {
  const std::string json = tmp("bench-b2b.json");
  const Outcome o = timed_run(
      "timing.kernels=dequant/awq-int4-fp16;timing.shapes=64x128;timing.warm=1;timing.back-to-back=1;"
      "timing.timeout=0.1",
      json);
  INFO(o.output);
  REQUIRE(o.status == 0);
  const nlohmann::json j = saved_report(json);
  REQUIRE(j["rows"].size() == 1);
  CHECK(j["rows"][0]["back_to_back"] == true);
  CHECK(j["rows"][0]["cold"] == false);
  CHECK(j["rows"][0]["runs_per_sample"].get<int>() >= 2);
  // Cold back to back on the CPU twin: the sentence, and nothing timed; a value the key does not take.
  const std::string one = "timing.kernels=dequant/awq-int4-fp16;timing.shapes=64x128;timing.timeout=0.1;";
  check_refused_before_timing(
      {{one + "timing.back-to-back=1",
        "cold back-to-back runs take each their own copy of the buffers on a GPU, and this view times on the "
        "CPU twin: choose warm (its runs one after another) or untick back to back; nothing was started"}},
      tmp("bench-b2b-cold.json"));
  const Outcome bad = screenshot("timing", one + "timing.back-to-back=yes");
  INFO(bad.output);
  CHECK(bad.status == 0);
  CHECK(bad.output.find("timing.back-to-back 'yes' is not a choice it offers: give 0 or 1; the setting is "
                        "kept") != std::string::npos);
}

TEST_CASE("timing view: the GEMV rows at the rows of X asked for, and a list it refuses") {
  const std::string json = tmp("bench-batch.json");
  const Outcome o = timed_run(
      "timing.kernels=gemv/w4a16-ft-fp16,gemm/w4a16-ft-fp16;timing.shapes=64x512;timing.batch=3,40;"
      "timing.warm=1;timing.timeout=0.1",
      json);
  INFO(o.output);
  REQUIRE(o.status == 0);
  const nlohmann::json j = saved_report(json);
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["rows"][0]["kernel"] == "gemv/w4a16-ft-fp16");
  CHECK(j["rows"][0]["shape"].get<std::string>().rfind("M=3 64x512", 0) == 0);
  CHECK(j["rows"][1]["kernel"] == "gemm/w4a16-ft-fp16");
  CHECK(j["rows"][1]["shape"].get<std::string>().rfind("M=40 64x512", 0) == 0);

  // A list the run would refuse is refused as the script gives it and the field keeps its value: the run
  // after it times the one case of the value before.
  const auto refused_then_kept = [](const std::string& script, const std::string& sentence,
                                    const std::string& timed_shape) {
    const std::string kept_json = tmp("bench-kept.json");
    const Outcome bad = timed_run(script + ";timing.warm=1;timing.timeout=0.1", kept_json);
    INFO(bad.output);
    CHECK(bad.status == 0);
    CHECK(bad.output.find(sentence + "; the setting is kept") != std::string::npos);
    const nlohmann::json kept = saved_report(kept_json);
    REQUIRE(kept["rows"].size() == 1);
    CHECK(kept["rows"][0]["shape"].get<std::string>().rfind(timed_shape, 0) == 0);
  };
  refused_then_kept(
      "timing.kernels=gemv/w4a16-ft-fp16;timing.shapes=64x512;timing.batch=3;timing.batch=1,300",
      "rows of X '1,300': 300 is out of range; each number must be from 1 to 256", "M=3 64x512");
  refused_then_kept(
      "timing.kernels=dequant/awq-int4-fp16;timing.shapes=64x128;timing.shapes=64x128,12x",
      "each shape '12x' is not a shape: write NxK with positive integers, e.g. 4096x4096 (shapes "
      "are separated by commas, e.g. 1024x4096,4096x4096)",
      "64x128");

  // A shape a kernel does not take is refused as bench refuses it, before anything is timed; saving
  // with nothing run says so (it used to wait for results for ever).
  const Outcome shape =
      screenshot("timing", "timing.kernels=dequant/awq-int4-fp16;timing.shapes=64x100;timing.run=1");
  INFO(shape.output);
  CHECK(shape.status == 0);
  CHECK(shape.output.find(
            "dequant/awq-int4-fp16 at 64x100 g128: K = 100 does not divide by the group size 128") !=
        std::string::npos);
  // Saving onto a folder says that a file path is needed.
  const std::string dir = tmp("a-folder");
  std::filesystem::create_directories(dir);
  const Outcome folder =
      screenshot("timing",
                 "timing.kernels=dequant/awq-int4-fp16;timing.shapes=64x128;timing.warm=1;timing.timeout=0.1;"
                 "timing.run=1;timing.save-json=" +
                     dir);
  INFO(folder.output);
  CHECK(folder.status == 0);
  CHECK(folder.output.find("the app shows: '" + dir +
                           "' is a folder: give the path of a file to write the results to") !=
        std::string::npos);
  // A list of shapes longer than any fixed field: the last one (after 300 spaces) is timed too.
  const std::string long_json = tmp("bench-long.json");
  const Outcome longer = timed_run("timing.kernels=dequant/awq-int4-fp16;timing.shapes=64x128," +
                                       std::string(300, ' ') + "128x256;timing.warm=1;timing.timeout=0.1",
                                   long_json);
  INFO(longer.output);
  REQUIRE(longer.status == 0);
  const nlohmann::json lj = saved_report(long_json);
  REQUIRE(lj["rows"].size() == 2);
  CHECK(lj["rows"][1]["shape"].get<std::string>().rfind("128x256", 0) == 0);
  const Outcome nothing = screenshot("timing", "timing.save-json=" + tmp("none.json"));
  CHECK(nothing.status == 0);
  CHECK(nothing.output.find("no results to save") != std::string::npos);
}

TEST_CASE("status bar: a sentence wider than the window wraps onto more lines") {
  // The sentence quotes the 300-character shape it refuses: far wider than the 1600-pixel window.
  const Outcome o = screenshot("timing", "timing.shapes=" + std::string(300, 'q'));
  INFO(o.output);
  REQUIRE(o.status == 0);
  REQUIRE(o.picture.ok());
  CHECK(o.output.find("the setting is kept") != std::string::npos);
  // The rows holding the error's colour (palette::kBad, 240 70 70) in the bottom fifth of the window. One
  // line of text is about 13 pixels tall at the default size; the sentence takes three.
  const int rows = rows_holding(o.picture, 0xF04646, o.picture.h * 4 / 5, o.picture.w);
  CHECK(rows > 31);
}

TEST_CASE("--text-scale: the text drawn larger") {
  // The status bar's backend line in the default text colour (white): its glyphs' height in the bottom 60
  // rows.
  const auto text_height = [](const dql::test::Image& im) {
    return rows_holding(im, 0xFFFFFF, im.h - 60, im.w / 3);
  };
  const Outcome normal = shot_1280("scale-1", "--view float --text-scale 1");
  const Outcome large = shot_1280("scale-2", "--view float --text-scale 2");
  INFO(normal.output << large.output);
  CHECK(normal.status == 0);
  CHECK(large.status == 0);
  REQUIRE(normal.picture.ok());
  REQUIRE(large.picture.ok());
  const int h1 = text_height(normal.picture), h2 = text_height(large.picture);
  INFO("glyph heights " << h1 << " and " << h2);
  CHECK(h1 > 5);
  CHECK(h2 > h1 * 8 / 5);
}

TEST_CASE("--text-scale 2: the stepper's 32 input bits fit a 1280-pixel window") {
  // Input 0x7654321f: element e0's nibble (bits 3..0, the row's right end) all ones, filled with e0's
  // colour (palette::element(0), 230 85 85). At twice the text size the row at its normal cell width
  // is wider than the view and its right end lay past the window's edge.
  const Outcome o =
      shot_1280("stepper-large", "--view stepper --text-scale 2 --script \"stepper.hex=0x7654321f\"");
  INFO(o.output);
  REQUIRE(o.status == 0);
  REQUIRE(o.picture.ok());
  // The input row is in the top 40% of the window; four cells of about 20x45 pixels less their digits hold
  // the colour (about 1600 pixels; the "e0" text in the table below adds a few dozen).
  CHECK(pixels_of(o.picture, 0xE65555, 0, o.picture.h * 2 / 5) > 1000);
}

TEST_CASE("--text-scale 1.5: the SASS view's kernels and listing in sight under its legend") {
  // At 1.5x the legend reached the window's edge and the note after it wrapped one letter a line, pushing
  // the kernel table and the listing below the window. LOP3 counts and LOP3 lines are drawn in
  // palette::element(1) (240 150 60).
  const Outcome o =
      shot_1280("sass-large", "--view sass --text-scale 1.5 --script \"sass.kernel=dequant/awq-int4-fp16\"");
  INFO(o.output);
  REQUIRE(o.status == 0);
  if (o.output.find("SASS is not available in this build") != std::string::npos) {
    MESSAGE("skipped: this build has no SASS listing (no cuobjdump when it was built)");
    return;
  }
  REQUIRE(o.picture.ok());
  CHECK(pixels_of(o.picture, 0xF0963C, o.picture.h / 2, o.picture.h) > 200);
}

TEST_CASE("--text-scale 3: the list of views only as wide as its titles") {
  // The selected view's row in the list is filled with the style's header colour (34 60 95). The list was
  // 9 em wide whatever its titles: at 3x a third of a 1280-pixel window (its fill ran to x = 401); it now
  // takes its longest title ("Quantize") and a scroll bar (the fill ends near x = 292).
  const Outcome o = shot_1280("views-large", "--view lop3 --text-scale 3");
  INFO(o.output);
  REQUIRE(o.status == 0);
  REQUIRE(o.picture.ok());
  constexpr uint32_t kSelected = 0x223C5F;
  int rows = 0, right = 0;
  for (int y = 0; y < o.picture.h; ++y) {
    if (o.picture.at(40, y) != kSelected) continue;
    ++rows;
    // The fill's right end: the last pixel of its colour before a gap wider than any glyph of the title.
    int last = 40;
    for (int x = 40; x < o.picture.w && x - last <= 40; ++x) {
      if (o.picture.at(x, y) == kSelected) last = x;
    }
    right = std::max(right, last);
  }
  CHECK(rows > 40);         // the selected row (1.6 em at 48-pixel text) was found
  CHECK(right > 200);       // as wide as "LOP3" and "Quantize" at least
  CHECK(right < 1280 / 4);  // and no wider than a quarter of the window
}

TEST_CASE("layouts view: a screenshot outlines only the element pinned, not one under the server's pointer") {
  // The outline colour (palette::kHighlight, 255 220 80) marks the hovered or pinned element in both maps.
  constexpr uint32_t kHighlight = 0xFFDC50;
  const Outcome plain = screenshot("layouts", "layouts.tab=tile");
  INFO(plain.output);
  REQUIRE(plain.picture.ok());
  CHECK_FALSE(plain.picture.has(kHighlight));
  const Outcome pinned = screenshot("layouts", "layouts.tab=tile;layouts.element=3,55");
  INFO(pinned.output);
  REQUIRE(pinned.picture.ok());
  CHECK(pinned.picture.has(kHighlight));
}

TEST_CASE("timing view: kernels picked by a pattern, as bench --kernel takes them") {
  const std::string json = tmp("bench-select.json");
  const Outcome o = timed_run(
      "timing.select=gemm/w4a16-ft-*;timing.shapes=128x512;timing.batch=72;timing.warm=1;timing.timeout=0.1",
      json);
  INFO(o.output);
  REQUIRE(o.status == 0);
  const nlohmann::json j = saved_report(json);
  REQUIRE(j["rows"].size() == 4);  // fp16 and bf16 X
  CHECK(j["rows"][0]["kernel"] == "gemm/w4a16-ft-fp16");
  CHECK(j["rows"][1]["kernel"] == "gemm/w4a16-ft-naive-fp16");
  CHECK(j["rows"][2]["kernel"] == "gemm/w4a16-ft-bf16");
  CHECK(j["rows"][3]["kernel"] == "gemm/w4a16-ft-naive-bf16");

  // bf16 X: the GEMV kernels of the mixed-GEMM layout are offered and picked by the same patterns.
  const Outcome bf16 = timed_run(
      "timing.select=gemv/*ft-bf16;timing.shapes=64x512;timing.batch=2;timing.warm=1;timing.timeout=0.1",
      json);
  INFO(bf16.output);
  REQUIRE(bf16.status == 0);
  const nlohmann::json b = saved_report(json);
  REQUIRE(b["rows"].size() == 2);
  CHECK(b["rows"][0]["kernel"] == "gemv/w4a16-ft-bf16");
  CHECK(b["rows"][1]["kernel"] == "gemv/w8a16-ft-bf16");

  // A pattern that matches nothing leaves the choice as it was, with a sentence.
  const Outcome none = timed_run(
      "timing.kernels=dequant/ft-int4-fp16;timing.select=gemv/*-fp8;timing.shapes=64x512;timing.warm=1;"
      "timing.timeout=0.1",
      json);
  INFO(none.output);
  REQUIRE(none.status == 0);
  CHECK(none.output.find("'gemv/*-fp8' matches no kernel: names look like dequant/ft-int4-fp16") !=
        std::string::npos);
  const nlohmann::json kept = saved_report(json);
  REQUIRE(kept["rows"].size() == 1);
  CHECK(kept["rows"][0]["kernel"] == "dequant/ft-int4-fp16");
}

TEST_CASE("timing view: GEMM rows a block, refused with a sentence where it cannot apply") {
  // As bench --gemm-rows: a size the Hopper GEMM lacks, no case it runs, or a backend without it
  // (these tests run on the CPU twin), each refused before anything is timed.
  const std::string gemm = "timing.kernels=gemm/w4a16-ft-fp16;timing.batch=72;timing.timeout=0.1;";
  const std::string gemm40 = "timing.kernels=gemm/w4a16-ft-fp16;timing.batch=40;timing.timeout=0.1;";
  check_refused_before_timing(
      {{gemm + "timing.shapes=128x512;timing.gemm-rows=100",
        "GEMM rows a block 100 is not supported: use a multiple of 16 from 48 to 256, or 0 for the "
        "launcher's choice"},
       {gemm + "timing.shapes=64x512;timing.gemm-rows=64", "and none is chosen"},
       {gemm + "timing.shapes=128x512;timing.gemm-rows=64",
        "which runs on compute capability 9.0 GPUs, and this view times on CPU twin"},
       // 33-64 rows: large matrices only.
       {gemm40 + "timing.shapes=4096x4096;timing.gemm-rows=64",
        "from 33 where N is at least 8192, or at least 4096 with K at least 8192, and none is chosen"},
       {gemm40 + "timing.shapes=8192x2048;timing.gemm-rows=64",
        "which runs on compute capability 9.0 GPUs, and this view times on CPU twin"}},
      tmp("bench-gemm-rows.json"));
}

TEST_CASE("timing view: the ring beside the walk, refused with a sentence where it cannot apply") {
  // As bench --ring: no case the walk runs, or a backend without the walk (these tests run on the CPU
  // twin), each refused before anything is timed.
  const std::string ring_on = "timing.timeout=0.1;timing.ring=1;";
  const std::string ring = "timing.kernels=gemv/w4a16-ft-fp16;" + ring_on;
  const std::string gemm_ring = "timing.kernels=gemm/w4a16-ft-fp16;" + ring_on;
  check_refused_before_timing(
      {{ring + "timing.shapes=64x512;timing.batch=16", "and none is chosen"},
       {ring + "timing.shapes=4096x4096;timing.batch=1", "and none is chosen"},
       {ring + "timing.shapes=4096x4096;timing.batch=16",
        "two forms that run on compute capability 9.0 GPUs, and this view times on CPU twin"},
       // 17 to 32 rows: the walk's two token tiles (gemm/ names); from 33 rows the walk does not run.
       {gemm_ring + "timing.shapes=4096x4096;timing.batch=24",
        "two forms that run on compute capability 9.0 GPUs, and this view times on CPU twin"},
       {gemm_ring + "timing.shapes=4096x4096;timing.batch=33", "and none is chosen"}},
      tmp("bench-ring.json"));
}

TEST_CASE(
    "timing view: a saved run shown in place of the results, saved again unchanged, a bad file refused") {
  const nlohmann::json gpu = dql::test::h200_run();
  const std::string in = tmp("saved-in.json"), out = tmp("saved-out.json");
  std::ofstream(in) << gpu.dump(2);
  std::remove(out.c_str());
  const Outcome o = screenshot("timing", "timing.open=" + in + ";timing.tab=medians;timing.save-json=" + out);
  INFO(o.output);
  REQUIRE(o.status == 0);
  CHECK(o.output.find("the app shows") == std::string::npos);
  CHECK(o.picture.has(0xFFDC50));  // the line naming the saved run, in the highlight colour
  CHECK(o.picture.has(0xE65555));  // its row's bar, in element hue 0
  // Saved again from the view: the same device and rows, launches included (times to the last bits of a
  // double: the view keeps them in seconds).
  const nlohmann::json again = saved_report(out);
  CHECK(again["device"] == gpu["device"]);
  REQUIRE(again["rows"].size() == 1);
  for (const auto& [key, value] : gpu["rows"][0].items()) {
    CAPTURE(key);
    REQUIRE(again["rows"][0].contains(key));
    if (value.is_number_float())
      CHECK(again["rows"][0][key].get<double>() == doctest::Approx(value.get<double>()).epsilon(1e-12));
    else
      CHECK(again["rows"][0][key] == value);
  }
  CHECK(again["rows"][0].size() == gpu["rows"][0].size());
  // A file that is not a run: the sentence, and nothing shown or saved.
  std::ofstream(tmp("not-a-run.json"))
      << R"({"rows": [{"kernel": "k", "shape": "s", "median_us": 1, "cold": 1}]})";
  std::remove(out.c_str());
  const Outcome bad =
      screenshot("timing", "timing.open=" + tmp("not-a-run.json") + ";timing.save-json=" + out);
  INFO(bad.output);
  CHECK(bad.status == 0);
  CHECK(bad.output.find("the app shows: '" + tmp("not-a-run.json") +
                        "' row 0: \"cold\" is not true or false, as bench --json writes it") !=
        std::string::npos);
  CHECK_FALSE(std::ifstream(out).good());
}

TEST_CASE("timing view: a saved run compared (A/B) with the results shown, and no results to compare with") {
  // B: the H200's run shown; A: the same row 10% slower, from a build that launched another kernel.
  const nlohmann::json b = dql::test::h200_run();
  nlohmann::json a = b;
  a["device"]["name"] = "NVIDIA H200 (an older build)";
  a["rows"][0]["median_us"] = 43.13;
  a["rows"][0]["launches"][0]["signature"] = "void dequant_awq_kernel(DequantArgs)";
  a["rows"][0]["launches"][0]["kernel"] = "dequant_awq_kernel";
  std::ofstream(tmp("compare-a.json")) << a.dump(2);
  std::ofstream(tmp("compare-b.json")) << b.dump(2);
  const Outcome o = screenshot(
      "timing", "timing.open=" + tmp("compare-b.json") + ";timing.compare=" + tmp("compare-a.json"));
  INFO(o.output);
  REQUIRE(o.status == 0);
  CHECK(o.output.find("the app shows") == std::string::npos);
  CHECK(o.picture.has(kGood));  // B FASTER, in the palette's green: the comparison's tab is in front
  const Outcome before = screenshot("timing", "timing.open=" + tmp("compare-b.json") + ";timing.tab=compare");
  REQUIRE(before.status == 0);
  CHECK_FALSE(before.picture.has(kGood));  // the same tab before the comparison: no verdict
  // Nothing to compare with yet: a sentence, not a wait.
  const Outcome none = screenshot("timing", "timing.compare=" + tmp("compare-a.json"));
  CHECK(none.status == 0);
  CHECK(
      none.output.find("there are no results to compare with a saved run: Run first, or open a saved run") !=
      std::string::npos);
  // A file that shares no row with the results: the comparison's own sentence.
  nlohmann::json other = b;
  other["rows"][0]["shape"] = "4096x4096 g128";
  std::ofstream(tmp("compare-other.json")) << other.dump(2);
  const Outcome apart = screenshot(
      "timing", "timing.open=" + tmp("compare-b.json") + ";timing.compare=" + tmp("compare-other.json"));
  CHECK(apart.status == 0);
  CHECK(apart.output.find("the two files share no (kernel, shape) rows to compare") != std::string::npos);
}

TEST_CASE("timing view: a scripted benchmark runs in the background and its results are saved") {
  const std::string json = tmp("bench.json");
  const Outcome o = timed_run(
      "timing.kernels=dequant/awq-int4-fp16,dequant/naive-int4-fp16;timing.shapes=64x128;timing.warm=1;"
      "timing.timeout=0.2;timing.tab=medians",
      json);
  INFO(o.output);
  REQUIRE(o.status == 0);
  CHECK(o.output.find("the app shows") == std::string::npos);
  const nlohmann::json j = saved_report(json);
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["device"]["backend"].is_string());
  for (const auto& r : j["rows"]) {
    CHECK(r["q1_us"].get<double>() <= r["median_us"].get<double>());
    CHECK(r["median_us"].get<double>() <= r["q3_us"].get<double>());
    CHECK(r["samples"].get<int>() >= 1);
    CHECK(r["cold"] == false);
  }
  CHECK(j["rows"][0]["kernel"] == "dequant/awq-int4-fp16");
  CHECK(j["rows"][0]["baseline"] == "naive-int4-fp16");  // the speed-up over the naive recipe
  CHECK(o.picture.has(0xE65555));                        // the first kernel's bar, in element hue 0
}
