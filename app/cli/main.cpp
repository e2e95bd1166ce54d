// dequant-lab: the terminal front end.
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <new>
#include <optional>
#include <string>

#include "commands.hpp"
#include "kernels/tensor/tensor.hpp"
#ifdef DQL_HAVE_GUI
#include "app/gui/app.hpp"
#endif

namespace {

// The desktop app's options; with no subcommand, dequant-lab opens the app.
struct AppOptions {
  std::string screenshot, view, size, state, saved_run, script;
  std::optional<int> frame_report;
  std::optional<double> text_scale;
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
  app.add_option(
         "--saved-run", o.saved_run,
         "Open a saved run (a JSON file from bench --json or the timing view, from any machine) as the "
         "timing view's results and the SASS view's times")
      ->group(group);
  app.add_option("--frame-report", o.frame_report,
                 "Render N frames (1 or more) and print JSON frame times, then exit")
      ->group(group);
  app.add_option("--text-scale", o.text_scale,
                 "Text size as a factor of the normal one, 0.6 to 3, e.g. 1.5 for a projector (View > Larger "
                 "text changes it too; kept for the next start)")
      ->group(group);
  app.add_option("--script", o.script, "For tests: key=value;... typed into the views")->group("");
}

int open_app(const AppOptions& o) {
#ifdef DQL_HAVE_GUI
  return dql::gui::run_gui({.screenshot = o.screenshot,
                            .view = o.view,
                            .size = o.size,
                            .state = o.state,
                            .saved_run = o.saved_run,
                            .script = o.script,
                            .frame_report = o.frame_report,
                            .text_scale = o.text_scale});
#else
  (void)o;
  fmt::print(stderr,
             "dequant-lab: this build has no desktop app (configured with DQL_BUILD_GUI=OFF); the terminal "
             "commands are listed by `dequant-lab --help`\n");
  return 1;
#endif
}

// CLI11 says "Could not convert: --group = abc"; this says what the option takes.
std::string conversion_sentence(const CLI::App& app, const std::string& what) {
  const std::string head = "Could not convert: ";
  const size_t eq = what.find(" = ");
  if (what.rfind(head, 0) != 0 || eq == std::string::npos) return what;
  const std::string name = what.substr(head.size(), eq - head.size()), value = what.substr(eq + 3);
  // The option of the subcommand given (the one CLI11 was parsing), else of the app itself.
  std::string type, where = "dequant-lab";
  for (const CLI::App* sub : app.get_subcommands()) {
    for (const CLI::Option* opt : sub->get_options()) {
      if (type.empty() && opt->check_name(name)) type = opt->get_type_name(), where += " " + sub->get_name();
    }
  }
  for (const CLI::Option* opt : app.get_options()) {
    if (type.empty() && opt->check_name(name)) type = opt->get_type_name();
  }
  const std::string takes = type.rfind("INT", 0) == 0 ? "a whole number within the option's range"
                            : type.rfind("UINT", 0) == 0
                                ? "a whole number, 0 or more, within the option's range"
                            : type.rfind("FLOAT", 0) == 0 ? "a number, such as 0.5 or 2"
                                                          : "a value of another kind";
  return fmt::format("{} takes {}; '{}' is not one (`{} --help` lists the options)", name, takes, value,
                     where);
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
  // A text option given as "" would otherwise read as not given at all.
  const CLI::Validator non_empty(
      [](std::string& text) {
        return text.empty() ? std::string("the value is empty: give one, or leave the option out")
                            : std::string();
      },
      "");
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    for (CLI::Option* opt : sub->get_options()) {
      if (opt->get_type_name().rfind("TEXT", 0) == 0 && opt->get_expected_min() >= 1) opt->check(non_empty);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ConversionError& e) {
    fmt::print(stderr, "dequant-lab: {}\n", conversion_sentence(app, e.what()));
    return 2;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line, as every refusal: CLI11's sentence and where the options are listed.
    std::string where = "dequant-lab";
    for (const CLI::App* sub : app.get_subcommands()) where += " " + sub->get_name();
    fmt::print(stderr, "dequant-lab: {} (`{} --help` lists the options)\n", e.what(), where);
    return 2;
  } catch (const dql::cli::UserError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "dequant-lab: {}\n", e.what());
    return 2;
  } catch (const dql::Error& e) {  // a file's or a shape's own sentence, not turned into a UserError
    std::fflush(stdout);
    fmt::print(stderr, "dequant-lab: {}\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    fmt::print(stderr,
               "dequant-lab: this machine's memory cannot hold what the command asked for: use smaller "
               "shapes (or fewer rows of X)\n");
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "dequant-lab: the command stopped on an unexpected error: {}\n", e.what());
    return 1;
  }
  if (app.get_subcommands().empty()) return open_app(gui);
  return 0;
}
