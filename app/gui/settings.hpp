// Per-user settings of the desktop app: $XDG_CONFIG_HOME/dequant-lab/settings.json (or
// ~/.config/dequant-lab/), written atomically (a temporary file renamed over the old one).
#pragma once

#include <string>

namespace dql::gui {

// The text sizes the View menu, --text-scale and the settings file accept, as a factor of the normal size.
inline constexpr double kTextScaleLeast = 0.6, kTextScaleMost = 3.0;

struct Settings {
  int width = 1600, height = 960;
  int x = -1, y = -1;  // window position; -1: let the window system choose
  // The text size, kTextScaleLeast .. kTextScaleMost.
  float font_scale = 1.0f;
  std::string view = "stepper";
  std::string state;  // the last state token
};

// The folder settings live in ("" when neither XDG_CONFIG_HOME nor HOME is set).
std::string settings_dir();

// Reads the settings. A missing file gives the defaults silently; an unreadable or corrupt one
// gives the defaults and a sentence in *problem (the file is then replaced on the next save).
Settings load_settings(const std::string& dir, std::string* problem);

// Writes settings.json in `dir` (created when missing) through a temporary file and a rename.
// False with a sentence in *problem when that fails.
bool save_settings(const std::string& dir, const Settings& s, std::string* problem);

}  // namespace dql::gui
