// Running the built program from a test, as a user would: exit status, stdout and stderr.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>

namespace dql::test {

struct Run {
  int status;
  std::string out, err;
};

// `program args`, stderr through a file of this process's own (CTest runs cases side by side).
inline Run run_program(const std::string& program, const std::string& args, const std::string& tmpdir) {
  const std::string err_file = tmpdir + "/stderr_" + std::to_string(getpid()) + ".txt";
  const std::string cmd = "'" + program + "' " + args + " 2>'" + err_file + "'";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  Run r{};
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (FILE* f = fopen(err_file.c_str(), "r")) {
    while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.err.append(buf.data(), n);
    fclose(f);
  }
  return r;
}

}  // namespace dql::test
