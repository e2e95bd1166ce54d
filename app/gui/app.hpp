// The desktop app's entry point, called by main when no subcommand is given.
#pragma once

#include <optional>
#include <string>

namespace dql::gui {

struct GuiOptions {
  std::string screenshot;  // write a PNG of the window after a few frames, then exit
  std::string view;        // the view to open (kViewNames)
  std::string size;        // "WxH" window size
  std::string state;       // a state token to restore
  std::string saved_run;  // a saved run (bench --json) shown as the benchmark results (Model::open_saved_run)
  std::string script;     // for tests: "key=value;key=value" typed into the views in order
  // Render N frames (1 or more), print {"frames","median_ms","p95_ms"}, exit.
  std::optional<int> frame_report;
  // The text size (kTextScaleLeast .. kTextScaleMost in settings.hpp), as the View menu sets it.
  std::optional<double> text_scale;
};

// Runs the app; returns the process exit status (1: no display or no OpenGL 3.3, 2: bad options).
int run_gui(const GuiOptions& opt);

}  // namespace dql::gui
