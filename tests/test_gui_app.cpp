// The desktop app itself, run under Xvfb with Mesa: every view renders, the stepper follows the
// step, bad input shows its sentence and keeps the previous value. Screenshots are decoded and
// checked for the palette's colours. Exits 77 (CTest: skipped) with a message when Xvfb is
// missing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gui_support.hpp"

namespace {

using dql::test::Image;
using dql::test::load_png;

std::string tmp(const std::string& name) { return std::string(DQL_TEST_TMPDIR) + "/gui-" + name; }

// Runs the app under its own Xvfb server.
dql::test::GuiRun app(const std::string& args) {
  return dql::test::run_under_xvfb(DQL_PROGRAM, args, "1920x1080x24", tmp("log.txt"));
}

Image shot(const std::string& name, const std::string& args) {
  const std::string png = tmp(name + ".png");
  std::remove(png.c_str());
  const dql::test::GuiRun r = app("--screenshot " + png + " --size 1280x800 " + args);
  INFO("app output: " << r.output);
  REQUIRE(r.status == 0);
  Image im = load_png(png);
  REQUIRE(im.ok());
  CHECK(im.w == 1280);
  CHECK(im.h == 800);
  return im;
}

size_t distinct_colours(const Image& im) {
  std::set<uint32_t> s;
  for (int y = 0; y < im.h; y += 2) {
    for (int x = 0; x < im.w; x += 2) s.insert(im.at(x, y));
  }
  return s.size();
}

// Where colour c first appears (leftmost column), or -1.
int leftmost(const Image& im, uint32_t c) {
  for (int x = 0; x < im.w; ++x) {
    for (int y = 0; y < im.h; ++y) {
      if (im.at(x, y) == c) return x;
    }
  }
  return -1;
}

// The palette (app/gui/widgets.hpp), as 0xRRGGBB.
constexpr uint32_t kSign = 0xDE4C4C, kExponent = 0x48B260, kMantissa = 0x4880DE, kGood = 0x5AC86E;
constexpr uint32_t kElement[8] = {0xE65555, 0xF0963C, 0xDCC83C, 0x6EC850,
                                  0x3CC8C8, 0x508CF0, 0xA064E6, 0xE664BE};

size_t differing_pixels(const Image& a, const Image& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.px.size() && i < b.px.size(); i += 4) {
    if (a.px[i] != b.px[i] || a.px[i + 1] != b.px[i + 1] || a.px[i + 2] != b.px[i + 2]) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("every view renders something that is not blank") {
  for (const char* v : {"stepper", "float", "lop3", "prmt", "layouts", "quant", "timing", "sass"}) {
    CAPTURE(v);
    const Image im = shot(v, std::string("--view ") + v);
    CHECK(distinct_colours(im) > 20);
  }
}

TEST_CASE(
    "stepper: the input register's nibbles in the 8 element hues, and the outputs match the reference") {
  const Image im = shot("stepper-hues", "--state dql:awq-int4-fp16:0xffffffff:step=0");
  // All bits set: every nibble is drawn in its element's full hue.
  for (uint32_t c : kElement) CHECK(im.has(c));
  CHECK(im.has(kGood));  // "all 8 outputs equal the integer reference"
  // AWQ order, MSB left: nibble 7 holds e7, nibble 0 holds e0.
  CHECK(leftmost(im, kElement[7]) < leftmost(im, kElement[0]));
}

TEST_CASE("stepping changes what the stepper shows") {
  const Image a = shot("step0", "--state dql:awq-int4-fp16:0x76543210:step=0");
  const Image b = shot("step3", "--state dql:awq-int4-fp16:0x76543210:step=3");
  const Image c = shot("step3-again", "--state dql:awq-int4-fp16:0x76543210:step=3");
  CHECK(differing_pixels(a, b) > 500);
  CHECK(differing_pixels(b, c) == 0);  // the same state draws the same picture
  // Step 3 (a lop3 building f16x2 values) shows fp16 fields in their colours.
  CHECK(b.has(kExponent));
}

TEST_CASE("float view: sign, exponent and mantissa colours, MSB left") {
  const Image im = shot("float-fields", "--view float --script \"float.hex=0xfc01\"");
  REQUIRE(im.has(kSign));
  REQUIRE(im.has(kExponent));
  REQUIRE(im.has(kMantissa));
  CHECK(leftmost(im, kSign) < leftmost(im, kExponent));
  CHECK(leftmost(im, kExponent) < leftmost(im, kMantissa));
}

TEST_CASE("LOP3: a bad expression shows the parser's message and keeps the table") {
  const std::string png = tmp("lop3-bad.png");
  const dql::test::GuiRun r =
      app("--screenshot " + png + " --size 1280x800 --view lop3 --script \"lop3.expr=a &&& b\"");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("is not valid at column") != std::string::npos);
  CHECK(r.output.find("a &&& b") != std::string::npos);
  const Image bad = load_png(png);
  REQUIRE(bad.ok());
  const Image good = shot("lop3-good", "--view lop3");
  CHECK(differing_pixels(bad, good) > 100);  // the message is drawn

  const dql::test::GuiRun ok = app("--screenshot " + png + " --view lop3 --script \"lop3.expr=a ^ b ^ c\"");
  CHECK(ok.output.find("the app shows") == std::string::npos);
}

TEST_CASE("script: an unknown key, or one of another view, ends the run with a sentence instead of waiting") {
  const dql::test::GuiRun unknown =
      app("--screenshot " + tmp("script.png") + " --script \"stepper.hexx=0x1\"");
  INFO(unknown.output);
  CHECK(unknown.status == 2);
  CHECK(unknown.output.find("--script: 'stepper.hexx' is not a script key") != std::string::npos);
  const dql::test::GuiRun other =
      app("--screenshot " + tmp("script.png") + " --view lop3 --script \"timing.run=1\"");
  INFO(other.output);
  CHECK(other.status == 2);
  CHECK(other.output.find("'timing.run' is a key of the timing view, and the app shows the lop3 view") !=
        std::string::npos);
}

TEST_CASE("stepper: a bad hex input is refused and the previous input kept") {
  const dql::test::GuiRun bad =
      app("--screenshot " + tmp("hex.png") +
          " --state dql:awq-int4-fp16:0x76543210:step=2 --script \"stepper.hex=0x12zz\"");
  INFO(bad.output);
  CHECK(bad.status == 0);
  CHECK(bad.output.find("the app shows") != std::string::npos);
  CHECK(bad.output.find("0x12zz") != std::string::npos);
  CHECK(bad.output.find("state dql:awq-int4-fp16:0x76543210:step=2") != std::string::npos);

  const dql::test::GuiRun good =
      app("--screenshot " + tmp("hex.png") + " --script \"stepper.hex=0x12345678\"");
  CHECK(good.output.find("state dql:awq-int4-fp16:0x12345678") != std::string::npos);
}

TEST_CASE("export: SVG of the stepper's and LOP3's bit figures, PNG of the active view") {
  for (const char* v : {"stepper", "lop3"}) {
    CAPTURE(v);
    const std::string svg = tmp(std::string(v) + ".svg"), png = tmp(std::string(v) + "-view.png");
    std::remove(svg.c_str());
    std::remove(png.c_str());
    const dql::test::GuiRun r = app("--screenshot " + tmp("x.png") + " --size 1280x800 --view " + v +
                                    " --script \"app.svg=" + svg + ";app.view-png=" + png + "\"");
    INFO(r.output);
    CHECK(r.status == 0);
    std::ifstream in(svg);
    std::stringstream text;
    text << in.rdbuf();
    const std::string doc = text.str();
    CHECK(doc.rfind("<svg", 0) == 0);
    CHECK(doc.find("</svg>") != std::string::npos);
    size_t rects = 0;
    for (size_t at = doc.find("<rect"); at != std::string::npos; at = doc.find("<rect", at + 1)) ++rects;
    CHECK(rects >= 64);  // at least two 32-bit rows as cells
    const Image view = load_png(png);
    REQUIRE(view.ok());
    CHECK(view.w < 1280);  // the view alone, without the list of views
    CHECK(view.h < 800);
  }
  std::ifstream in(tmp("lop3.svg"));
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str().find(">out<") != std::string::npos);  // the truth table's header
}

TEST_CASE("command line: bad options and state tokens are refused with a sentence") {
  dql::test::GuiRun r = app("--screenshot " + tmp("x.png") + " --view nowhere");
  CHECK(r.status == 2);
  CHECK(r.output.find("choose one of stepper") != std::string::npos);
  r = app("--screenshot " + tmp("x.png") + " --state dql:awq-int4-fp16:0x1:step=99");
  CHECK(r.status == 2);
  CHECK(r.output.find("past the end") != std::string::npos);
  r = app("--screenshot " + tmp("x.png") + " --state dql:awq-int4-fp16:0x1:step=99999999999999999999");
  CHECK(r.status == 2);
  CHECK(
      r.output.find("the state token's step '99999999999999999999' is out of range: awq-int4-fp16 has steps "
                    "0 to 9") != std::string::npos);
  r = app("--screenshot " + tmp("x.png") + " --state dql:awq-int4-fp16:0x1:step=two");
  CHECK(r.status == 2);
  CHECK(r.output.find("the state token's step 'two' is not a whole number") != std::string::npos);
  // --saved-run: a file that is not a run ends the start with the loader's sentence.
  r = app("--screenshot " + tmp("x.png") + " --saved-run " + tmp("absent.json"));
  CHECK(r.status == 2);
  CHECK(r.output.find("--saved-run: cannot open '" + tmp("absent.json") +
                      "': give a JSON file written by bench --json or the timing view") != std::string::npos);
  // --frame-report counts frames: 0 is refused before any window opens (it used to open the app).
  r = app("--frame-report 0");
  CHECK(r.status == 2);
  CHECK(r.output.find("--frame-report 0: give the number of frames to time, 1 or more") != std::string::npos);
  // --text-scale takes what the View menu offers, 0.6 to 3.
  for (const char* bad : {"0.2", "4", "nan"}) {
    r = app("--screenshot " + tmp("x.png") + " --text-scale " + bad);
    CHECK(r.status == 2);
    CHECK(r.output.find(std::string("--text-scale ") + bad +
                        " is out of range: give a factor from 0.6 to 3, e.g. 1.5") != std::string::npos);
  }
  r = app("--screenshot " + tmp("x.png") + " --size 12x");
  CHECK(r.status == 2);
  r = app("--screenshot " + tmp("x.png") + " --size 4294969216x4294968376");  // %d would wrap to 1920x1080
  CHECK(r.status == 2);
  CHECK(r.output.find("between 320x240 and 8192x8192") != std::string::npos);
  // Script keys the view has no field for in its state end the run with a sentence (they used to hang it).
  r = app("--screenshot " + tmp("x.png") + " --script \"stepper.absmax=0x1\"");
  CHECK(r.status == 0);
  CHECK(r.output.find("absmax applies to nf4-fp16 only") != std::string::npos);
  r = app("--screenshot " + tmp("x.png") +
          " --state dql:nf4-fp16:0x76543210:step=0 --script "
          "\"stepper.absmax=0x7fc00000\"");
  CHECK(r.status == 0);
  CHECK(r.output.find("is NaN: it must be a finite fp32 value >= 0 (kept 0x3f800000)") != std::string::npos);
  CHECK(r.output.find("state dql:nf4-fp16:0x76543210:step=0") != std::string::npos);  // absmax kept at 1
}

namespace {

// The SVG of a view's figures after a script (the figures are drawn from the model's values only, so
// two scripts that leave the same values give the same document).
std::string svg_after(const std::string& view, const std::string& script) {
  const std::string svg = tmp(view + "-after.svg");
  std::remove(svg.c_str());
  const dql::test::GuiRun r = app("--screenshot " + tmp("x.png") + " --size 1280x800 --view " + view +
                                  " --script \"" + script + ";app.svg=" + svg + "\"");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("the app shows") == std::string::npos);
  std::ifstream in(svg);
  std::stringstream text;
  text << in.rdbuf();
  REQUIRE(text.str().rfind("<svg", 0) == 0);
  return text.str();
}

}  // namespace

TEST_CASE("text fields take text of any length: nothing past a buffer's end is cut off") {
  // 162 characters: (a & b) | ... | ~c is 0xd5; its first 127 characters read a & b (0xc0).
  std::string expr;
  for (int i = 0; i < 40; ++i) expr += "a&b|";
  expr += "~c";
  const std::string long_expr = svg_after("lop3", "lop3.expr=" + expr);
  CHECK(long_expr == svg_after("lop3", "lop3.lut=0xd5"));
  CHECK(long_expr != svg_after("lop3", "lop3.lut=0xc0"));
  // 3 after 80 zeros: fp16 0x4200 (its first 63 characters are zeros).
  const std::string long_decimal = svg_after("float", "float.decimal=" + std::string(80, '0') + "3");
  CHECK(long_decimal == svg_after("float", "float.hex=0x4200"));
  CHECK(long_decimal != svg_after("float", "float.hex=0x0000"));
}

TEST_CASE("float view: NaN and infinities typed in the decimal field, in any case, are their patterns") {
  // The view shows fp16 / bf16 / fp32 / fp8 patterns, NaN and infinities among them (it has buttons for
  // them): nan, NaN, Inf and -nan are taken as inf and nan always were.
  const std::string nan = svg_after("float", "float.hex=0x7fff");
  CHECK(svg_after("float", "float.decimal=NaN") == nan);
  CHECK(svg_after("float", "float.decimal=nan") == nan);
  CHECK(svg_after("float", "float.decimal=NAN") == nan);
  CHECK(svg_after("float", "float.decimal=-nan") == svg_after("float", "float.hex=0xffff"));
  CHECK(svg_after("float", "float.decimal=Inf") == svg_after("float", "float.hex=0x7c00"));
  CHECK(svg_after("float", "float.decimal=-Infinity") == svg_after("float", "float.hex=0xfc00"));
  CHECK(nan != svg_after("float", "float.hex=0x7c00"));
  const dql::test::GuiRun bad =
      app("--screenshot " + tmp("x.png") + " --view float --script \"float.decimal=nan(12)\"");
  CHECK(bad.output.find("'nan(12)' is not a decimal number: type e.g. 1024, -0.5, 6.1e-5, inf or nan") !=
        std::string::npos);
}

TEST_CASE("script: a value a key does not take is refused with a sentence and the setting kept") {
  const auto shows = [](const std::string& args, const std::string& sentence) {
    const dql::test::GuiRun r = app("--screenshot " + tmp("x.png") + " --size 1280x800 " + args);
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.find("the app shows: " + sentence) != std::string::npos);
    return r.output;
  };
  // The step stays where the state token put it.
  CHECK(shows("--state dql:awq-int4-fp16:0x76543210:step=2 --script \"stepper.step=abc\"",
              "step 'abc' is not a whole number: give one from 0 to 9; the setting is kept")
            .find("state dql:awq-int4-fp16:0x76543210:step=2") != std::string::npos);
  CHECK(shows("--state dql:awq-int4-fp16:0x76543210:step=2 --script \"stepper.step=99999999999999999999\"",
              "step '99999999999999999999' is out of range: give a whole number from 0 to 9")
            .find("state dql:awq-int4-fp16:0x76543210:step=2") != std::string::npos);
  shows("--view quant --script \"quant.group=99\"",
        "quant.group '99' is not a choice it offers: give 32, 64, 128 or per channel; the setting is kept");
  // The group of 64 is kept: K = 96 does not divide by it (per channel, which 99 used to give, would).
  shows("--view quant --script \"quant.scheme=int4-sym;quant.group=64;quant.group=99;quant.shape=256x96\"",
        "K = 96 does not divide by the group size 64");
  shows("--view timing --script \"timing.timeout=abc\"",
        "timing.timeout (seconds a case) 'abc' is not a number: give a decimal above 0");
  shows("--view timing --script \"timing.timeout=0\"", "timing.timeout (seconds a case) '0' is out of range");
  shows("--view timing --script \"timing.run=yes\"",
        "timing.run 'yes' is not a value it takes: give 1 to start a run; nothing was started");
  shows("--view timing --script \"timing.tab=graphs\"",
        "timing.tab 'graphs' is not a choice it offers: give table, medians, sweep or compare");
  shows("--view timing --script \"timing.kernels=dequant/none\"",
        "timing.kernels: 'dequant/none' is not a kernel this view times");
  shows("--view float --script \"float.magic=2000\"",
        "the integer i '2000' is out of range: give a whole number from 0 to 1023");
  shows("--view float --script \"float.format=fp64\"",
        "float.format 'fp64' is not a choice it offers: give fp16, bf16, fp32 or fp8 e5m2");
  shows("--view layouts --script \"layouts.bits=6\"",
        "layouts.bits '6' is not a choice it offers: give 4 or 8");
  shows("--view layouts --script \"layouts.element=1-5\"", "layouts.element '1-5' is not N,K");
  shows("--view layouts --script \"layouts.element=9,1\"", "layouts.element's row N '9' is out of range");
  shows("--view prmt --script \"prmt.mode=f5e\"",
        "prmt.mode 'f5e' is not a choice it offers: give generic, f4e");
}

TEST_CASE("SASS view: a filter that matches no kernel says so and what the filter matches") {
  const dql::test::GuiRun r = app("--screenshot " + tmp("sass.png") +
                                  " --size 1280x800 --view sass --script \"sass.filter=zz_none\"");
  INFO(r.output);
  CHECK(r.status == 0);
  if (r.output.find("SASS is not available in this build") != std::string::npos) {
    // A build without cuobjdump: the key is answered with the reason rather than waited for.
    CHECK(r.output.find("sass.filter has no listing to act on") != std::string::npos);
  } else {
    CHECK(r.output.find("the app shows: no kernel matches the filter 'zz_none': it matches kernel names") !=
          std::string::npos);
    CHECK(r.output.find("and bench names (e.g. dequant/awq-int4-fp16)") != std::string::npos);
  }
}

TEST_CASE("SASS view: only the kernels a saved run timed, with the filter") {
  const std::string run = std::string(DQL_DOCS_RUNS) + "/h200-2026-12-06-gemv.json";
  const auto sass = [&](const std::string& script) {
    return app("--screenshot " + tmp("sass-timed.png") + " --size 1280x800 --view sass --saved-run " + run +
               " --script \"" + script + "\"");
  };
  // The GEMV run launched no dequant kernel: the filter matches kernels, none of them timed.
  const dql::test::GuiRun dequant = sass("sass.timed=1;sass.filter=dequant");
  INFO(dequant.output);
  CHECK(dequant.status == 0);
  if (dequant.output.find("SASS is not available in this build") != std::string::npos) {
    CHECK(dequant.output.find("has no listing to act on") != std::string::npos);
    return;
  }
  CHECK(dequant.output.find("the app shows: no kernel the benchmark results timed matches the filter "
                            "'dequant': clear the filter, or untick") != std::string::npos);
  // Its one-row kernel was timed: ticking moves the listing off the dequant kernel it opened on (not
  // launched) to the list's first...
  const std::string lane_first =
      "SASS listing of sm_90 ft_lane_kernel<fp16, false, 16, false, false, false, false>\n";
  const dql::test::GuiRun lane = sass("sass.timed=1;sass.filter=ft_lane");
  CHECK(lane.status == 0);
  CHECK(lane.output.find("the app shows") == std::string::npos);
  CHECK(lane.output.find(lane_first) != std::string::npos);
  // ... and keeps a kernel the run launched.
  const dql::test::GuiRun kept =
      sass("sass.filter=ft_lane;sass.kernel=ft_lane_kernel<fp16, true, 32*;sass.timed=1");
  CHECK(kept.status == 0);
  CHECK(kept.output.find(
            "SASS listing of sm_90 ft_lane_kernel<fp16, true, 32, false, false, false, false>\n") !=
        std::string::npos);
  // Untimed, the dequant kernels are listed again, with no sentence, and the listing stays where it opened.
  const dql::test::GuiRun all = sass("sass.timed=0;sass.filter=dequant");
  CHECK(all.status == 0);
  CHECK(all.output.find("the app shows") == std::string::npos);
  CHECK(all.output.find("SASS listing of sm_90 dequant_awq_kernel\n") != std::string::npos);
  // A value the key does not take: a sentence, the setting kept.
  const dql::test::GuiRun bad = sass("sass.timed=yes");
  CHECK(bad.output.find("sass.timed 'yes' is not a choice it offers") != std::string::npos);
  // The list's width by its bar: a width in em within what the window leaves, or auto; anything else is
  // a sentence with the range, and the listing stays where it was.
  const dql::test::GuiRun wide = sass("sass.filter=ft_lane; sass.timed=1; sass.list-width=50");
  CHECK(wide.status == 0);
  CHECK(wide.output.find("the app shows") == std::string::npos);
  CHECK(wide.output.find(lane_first) != std::string::npos);
  for (const char* width : {"wide", "8", "500", "-40", "50em"}) {
    const dql::test::GuiRun w =
        sass(std::string("sass.filter=ft_lane;sass.timed=1;sass.list-width=") + width);
    CAPTURE(width);
    CHECK(w.status == 0);
    CHECK(w.output.find(std::string("the app shows: sass.list-width '") + width +
                        "' is not a width this window allows: give the list's width in em, ") !=
          std::string::npos);
    CHECK(w.output.find("beside the listing at this size, or auto; the setting is kept") !=
          std::string::npos);
    CHECK(w.output.find(lane_first) != std::string::npos);
  }
  CHECK(sass("sass.list-width=50;sass.list-width=auto").output.find("the app shows") == std::string::npos);
}

TEST_CASE("without a display: one line pointing to xvfb-run and the terminal commands, status 1") {
  const std::string log = tmp("nodisplay.txt");
  const std::string cmd =
      "env -u DISPLAY -u WAYLAND_DISPLAY " + std::string(DQL_PROGRAM) + " > " + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  CHECK(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 1);
  std::ifstream in(log);
  std::string line;
  std::getline(in, line);
  CHECK(line.find("no display") != std::string::npos);
  CHECK(line.find("xvfb-run dequant-lab --screenshot") != std::string::npos);
}

TEST_CASE("frame report: JSON with the frame count") {
  const dql::test::GuiRun r = app("--frame-report 20 --size 1280x800");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("\"frames\": 20") != std::string::npos);
  CHECK(r.output.find("\"median_ms\"") != std::string::npos);
}

int main(int argc, char** argv) {
  if (std::system("command -v Xvfb > /dev/null 2>&1") != 0) {
    std::printf(
        "SKIPPED: Xvfb is not installed (Debian: apt-get install xvfb libgl1-mesa-dri); "
        "the desktop app's tests need it\n");
    return 77;
  }
  // Xvfb loads Mesa's software renderer from LIBGL_DRIVERS_PATH when it is set; a folder without
  // it starts the server without GLX and every window fails with "GLX extension not found".
  if (const char* dri = std::getenv("LIBGL_DRIVERS_PATH"); dri && *dri) {
    const std::string swrast = std::string(dri) + "/swrast_dri.so";
    if (std::FILE* f = std::fopen(swrast.c_str(), "rb")) {
      std::fclose(f);
    } else {
      std::printf(
          "LIBGL_DRIVERS_PATH is %s, which has no swrast_dri.so: Xvfb would start without GLX and no "
          "window could open. Unset it, or point it at Mesa's drivers (/usr/lib/x86_64-linux-gnu/dri)\n",
          dri);
      return 1;
    }
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
