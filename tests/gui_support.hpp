// The desktop app as the GUI tests run it: under its own Xvfb server (xvfb-run), its output in a
// log, and the screenshots it writes decoded to RGBA for colour checks.
#pragma once

#include <stb_image.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace dql::test {

struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> px;  // RGBA
  bool ok() const { return w > 0 && h > 0; }
  uint32_t at(int x, int y) const {
    const size_t i = (static_cast<size_t>(y) * static_cast<size_t>(w) + static_cast<size_t>(x)) * 4u;
    return (uint32_t{px[i]} << 16) | (uint32_t{px[i + 1]} << 8) | px[i + 2];
  }
  // Whether colour 0xRRGGBB appears anywhere.
  bool has(uint32_t rgb) const {
    for (size_t i = 0; i + 3 < px.size(); i += 4) {
      if (((uint32_t{px[i]} << 16) | (uint32_t{px[i + 1]} << 8) | px[i + 2]) == rgb) return true;
    }
    return false;
  }
};

// A PNG as RGBA; an empty image where it cannot be read.
inline Image load_png(const std::string& path) {
  Image im;
  int n = 0;
  unsigned char* data = stbi_load(path.c_str(), &im.w, &im.h, &n, 4);
  if (!data) return Image{};
  im.px.assign(data, data + static_cast<size_t>(im.w) * static_cast<size_t>(im.h) * 4u);
  stbi_image_free(data);
  return im;
}

struct GuiRun {
  int status = -1;
  std::string output;  // stdout and stderr
};

// `program args` under a fresh Xvfb screen of `screen` (WxHxD); the output goes through `log`.
// The X authority file is named (beside the log) so that xvfb-run makes no temporary folder of its
// own: removing that folder while its Xvfb was still up failed now and then under parallel tests,
// and xvfb-run then exits 5 whatever the program returned.
inline GuiRun run_under_xvfb(const std::string& program, const std::string& args, const std::string& screen,
                             const std::string& log) {
  const std::string cmd = "xvfb-run -a -f " + log + ".xauth -s '-screen 0 " + screen + "' " + program + " " +
                          args + " > " + log + " 2>&1";
  GuiRun r;
  const int rc = std::system(cmd.c_str());
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  return r;
}

}  // namespace dql::test
