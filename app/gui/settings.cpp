#include "settings.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace dql::gui {

namespace fs = std::filesystem;

std::string settings_dir() {
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return (fs::path(x) / "dequant-lab").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".config" / "dequant-lab").string();
  return {};
}

Settings load_settings(const std::string& dir, std::string* problem) {
  Settings s;
  if (dir.empty()) return s;
  const fs::path file = fs::path(dir) / "settings.json";
  std::error_code ec;
  if (!fs::exists(file, ec)) return s;
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  const auto reject = [&](const std::string& why) {
    if (problem) {
      *problem = fmt::format("the settings file {} is {}; using the defaults, and the next save replaces it",
                             file.string(), why);
    }
    return Settings{};
  };
  if (!in) return reject("unreadable");
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return reject("not valid JSON");
  try {
    s.width = j.value("width", s.width);
    s.height = j.value("height", s.height);
    s.x = j.value("x", s.x);
    s.y = j.value("y", s.y);
    s.font_scale = j.value("font_scale", s.font_scale);
    s.view = j.value("view", s.view);
    s.state = j.value("state", s.state);
  } catch (const nlohmann::json::exception&) {
    return reject("not in the expected form (a value has the wrong type)");
  }
  if (s.width < 320 || s.height < 240 || s.width > 16384 || s.height > 16384) {
    return reject(
        fmt::format("holding a window size {}x{} outside 320x240 .. 16384x16384", s.width, s.height));
  }
  if (!(s.font_scale >= kTextScaleLeast && s.font_scale <= kTextScaleMost)) {
    return reject(fmt::format("holding a text scale {} outside {} .. {}", s.font_scale, kTextScaleLeast,
                              kTextScaleMost));
  }
  return s;
}

bool save_settings(const std::string& dir, const Settings& s, std::string* problem) {
  if (dir.empty()) return true;
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path file = fs::path(dir) / "settings.json";
  const fs::path tmp = fs::path(dir) / "settings.json.tmp";
  const nlohmann::json j = {{"width", s.width},           {"height", s.height}, {"x", s.x},        {"y", s.y},
                            {"font_scale", s.font_scale}, {"view", s.view},     {"state", s.state}};
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << "\n";
    if (!out.flush()) {
      if (problem) *problem = fmt::format("could not write the settings to {}", tmp.string());
      return false;
    }
  }
  fs::rename(tmp, file, ec);
  if (ec) {
    if (problem) *problem = fmt::format("could not replace {}: {}", file.string(), ec.message());
    return false;
  }
  return true;
}

}  // namespace dql::gui
