// dequant-lab: the terminal front end.
#include <fmt/format.h>

#include <cstdio>

#include "commands.hpp"
#ifdef DQL_HAVE_GUI
#include "app/gui/app.hpp"
#endif

namespace {

// The desktop app's options; with no subcommand, dequant-lab opens the app.
struct AppOptions {
  std::string screenshot, view, size, state, script;
  int frame_report = 0;
};

void add_app_options(CLI::App& app, AppOptions& o) {
  const char* group = "Desktop app (when no subcommand is given)";
  app.add_option("--screenshot", o.screenshot, "Render the app, write this PNG file and exit")->group(group);
  app.add_option("--view", o.view,
                 "The view to open: stepper, float, lop3, prmt, layouts, quant, timing, sass")
      ->group(group);
  app.add_option("--size", o.size, "Window size WIDTHxHEIGHT, e.g. 1920x1080")->group(group);
  app.add_option("--state", o.state, "Restore a state token, e.g. dql:awq-int4-fp16:0x76543210:step=5")
      ->group(group);
  app.add_option("--frame-report", o.frame_report, "Render N frames and print JSON frame times, then exit")
      ->group(group);
  app.add_option("--script", o.script, "For tests: key=value;... typed into the views")->group("");
}

int open_app(const AppOptions& o) {
#ifdef DQL_HAVE_GUI
  return dql::gui::run_gui({o.screenshot, o.view, o.size, o.state, o.frame_report, o.script});
#else
  (void)o;
  fmt::print(stderr,
             "dequant-lab: this build has no desktop app (configured with DQL_BUILD_GUI=OFF); the terminal "
             "commands are listed by `dequant-lab --help`\n");
  return 1;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Dequant Lab: the bit tricks of weight-only quantized inference, one instruction at a time",
               "dequant-lab"};
  app.require_subcommand(0, 1);
  AppOptions gui;
  add_app_options(app, gui);
  app.set_version_flag("--version", "dequant-lab 0.1.0");
  dql::cli::add_recipes(app);
  dql::cli::add_explain(app);
  dql::cli::add_tour(app);
  dql::cli::add_lop3(app);
  dql::cli::add_prmt(app);
  dql::cli::add_quant(app);
  dql::cli::add_dequant(app);
  dql::cli::add_permute(app);
  dql::cli::add_verify(app);
  dql::cli::add_device(app);
  dql::cli::add_bench(app);
  dql::cli::add_sass(app);
  dql::cli::add_gemv(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const dql::cli::UserError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "dequant-lab: {}\n", e.what());
    return 2;
  }
  if (app.get_subcommands().empty()) return open_app(gui);
  return 0;
}
