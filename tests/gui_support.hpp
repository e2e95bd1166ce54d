// The desktop app as the GUI tests run it: under its own Xvfb server, its output in a
// log, and the screenshots it writes decoded to RGBA for colour checks.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <stb_image.h>
#include <sys/wait.h>
#include <unistd.h>

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

// `program args` under a fresh Xvfb server of one `screen` (WxHxD), started here rather than through
// xvfb-run: xvfb-run's clean-up of its own temporary files failed now and then in CI (exit 5
// whatever the program returned). Xvfb picks a free display itself (-displayfd) and is stopped
// when the program ends. The program's stdout and stderr go to `log`, Xvfb's to `log`.xvfb; a
// server that does not start gives status -1 and its log as the output.
inline GuiRun run_under_xvfb(const std::string& program, const std::string& args, const std::string& screen,
                             const std::string& log) {
  GuiRun r;
  const std::string xvfb_log = log + ".xvfb";
  int fds[2];
  if (::pipe(fds) != 0) {
    r.output = "could not make a pipe for Xvfb's display number";
    return r;
  }
  const pid_t server = ::fork();
  if (server == 0) {
    ::close(fds[0]);
    const int out = ::open(xvfb_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    const std::string fd = std::to_string(fds[1]);
    ::execlp("Xvfb", "Xvfb", "-displayfd", fd.c_str(), "-screen", "0", screen.c_str(), "-nolisten", "tcp",
             static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string display;
  char c = 0;
  while (server > 0 && ::read(fds[0], &c, 1) == 1 && c != '\n') display += c;
  ::close(fds[0]);
  if (server > 0 && !display.empty()) {
    const std::string cmd = "DISPLAY=:" + display + " " + program + " " + args + " > " + log + " 2>&1";
    const int rc = std::system(cmd.c_str());
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  if (server > 0) {
    ::kill(server, SIGTERM);
    int ignored = 0;
    ::waitpid(server, &ignored, 0);
  }
  std::ifstream in(display.empty() ? xvfb_log : log);
  std::stringstream ss;
  if (display.empty()) ss << "Xvfb did not start (" << xvfb_log << "):\n";
  ss << in.rdbuf();
  r.output = ss.str();
  return r;
}

}  // namespace dql::test
