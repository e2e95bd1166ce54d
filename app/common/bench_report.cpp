#include "bench_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace dql::front {

std::string format_duration(double us) {
  if (us >= 1e6) return fmt::format("{:.3f} s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.3f} ms", us / 1e3);
  return fmt::format("{:.2f} us", us);
}

std::string format_tick(double us) {
  if (us == 0) return "0";
  // Six significant digits at most: a step's multiple such as 3 x 0.1 reads 0.3.
  if (us >= 1e6) return fmt::format("{:g} s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:g} ms", us / 1e3);
  return fmt::format("{:g} us", us);
}

nlohmann::json bench_device_json(const DeviceInfo& d, double copy_gbps, const GpuClocks& clocks) {
  nlohmann::json device = {{"backend", d.backend},
                           {"name", d.name},
                           {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                           {"sms", d.sms},
                           {"l2_bytes", d.l2_bytes},
                           {"block_shared_bytes", d.block_shared_bytes},
                           {"memory_bytes", d.memory_bytes},
                           {"copy_gbps", copy_gbps}};
  if (clocks.available) {
    device["sm_clock_mhz"] = clocks.sm_mhz;
    device["memory_clock_mhz"] = clocks.mem_mhz;
    device["throttle"] = clocks.throttle;
    device["driver"] = clocks.driver;
  }
  return device;
}

nlohmann::json bench_row_json(const BenchRow& r) {
  nlohmann::json j = {{"kernel", r.kernel},
                      {"shape", r.shape},
                      {"samples", r.stats.samples},
                      {"median_us", r.stats.median_s * 1e6},
                      {"noise", r.stats.noise},
                      {"min_us", r.stats.min_s * 1e6},
                      {"max_us", r.stats.max_s * 1e6},
                      {"q1_us", r.stats.q1_s * 1e6},
                      {"q3_us", r.stats.q3_s * 1e6},
                      {"gbps", r.gbps},
                      {"elements_per_s", r.elements_per_s},
                      {"pct_of_copy", r.pct_of_copy},
                      {"bytes", r.c.bytes()},
                      {"cold", r.cold},
                      {"timed_out", r.timed_out},
                      {"backend", r.backend}};
  if (r.speedup) {
    j["speedup"] = *r.speedup;
    j["baseline"] = r.baseline;
  }
  return j;
}

nlohmann::json bench_report_json(const nlohmann::json& device, const std::vector<BenchRow>& rows) {
  nlohmann::json j = {{"device", device}, {"rows", nlohmann::json::array()}};
  for (const BenchRow& r : rows) j["rows"].push_back(bench_row_json(r));
  return j;
}

std::string bench_csv(const std::vector<BenchRow>& rows) {
  std::string out =
      "kernel,shape,samples,median_us,noise,min_us,max_us,gbps,pct_of_copy,speedup,baseline,cold,backend\n";
  for (const BenchRow& r : rows) {
    out += fmt::format("{},{},{},{:.4f},{:.5f},{:.4f},{:.4f},{:.2f},{:.2f},{},{},{},{}\n", r.kernel, r.shape,
                       r.stats.samples, r.stats.median_s * 1e6, r.stats.noise, r.stats.min_s * 1e6,
                       r.stats.max_s * 1e6, r.gbps, r.pct_of_copy,
                       r.speedup ? fmt::format("{:.4f}", *r.speedup) : "", r.baseline,
                       r.cold ? "cold" : "warm", r.backend);
  }
  return out;
}

void write_report_file(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) {
    throw Error(fmt::format(
        "'{}' is a folder: give the path of a file to write the results to (a new name inside it will do)",
        path));
  }
  std::ofstream f(path);
  if (f) f << text;
  if (f) return;
  const fs::path folder = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(folder, ec)) {
    throw Error(
        fmt::format("cannot write '{}': the folder '{}' does not exist; give a file in an existing folder",
                    path, folder.string()));
  }
  throw Error(fmt::format("cannot write '{}': the folder '{}' is not writable, or the disk is full", path,
                          folder.string()));
}

nlohmann::json load_bench_json(const std::string& path) {
  std::ifstream f(path);
  if (!f)
    throw Error(
        fmt::format("cannot open '{}': give a JSON file written by bench --json or the timing view", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
    if (!j.is_object() || !j.contains("rows") || !j["rows"].is_array()) throw std::runtime_error("");
  } catch (const std::exception&) {
    throw Error(fmt::format("'{}' is not a file written by bench --json (no \"rows\" array)", path));
  }
  // What compare_bench reads, each of the type it reads it as.
  if (j.contains("device") &&
      (!j["device"].is_object() || (j["device"].contains("name") && !j["device"]["name"].is_string()))) {
    throw Error(fmt::format("'{}' has a \"device\" that is not an object with a \"name\" string", path));
  }
  size_t i = 0;
  for (const auto& r : j["rows"]) {
    const auto number = [&](const char* key, bool positive) {
      return r.contains(key) && r[key].is_number() && (!positive || r[key].get<double>() > 0);
    };
    if (!r.is_object() || !r.contains("kernel") || !r["kernel"].is_string() || !r.contains("shape") ||
        !r["shape"].is_string() || !number("median_us", true) ||
        (r.contains("noise") && !r["noise"].is_null() && !number("noise", false))) {
      throw Error(fmt::format(
          "'{}' row {} is not a bench row: a row holds \"kernel\" and \"shape\" (strings), \"median_us\" (a "
          "positive number) and \"noise\" (a number, or null)",
          path, i));
    }
    ++i;
  }
  return j;
}

Comparison compare_bench(const nlohmann::json& a, const nlohmann::json& b) {
  Comparison c;
  c.a_device = a.value("device", nlohmann::json::object()).value("name", "?");
  c.b_device = b.value("device", nlohmann::json::object()).value("name", "?");
  for (const auto& ra : a["rows"]) {
    for (const auto& rb : b["rows"]) {
      if (ra.value("kernel", "") != rb.value("kernel", "") || ra.value("shape", "") != rb.value("shape", ""))
        continue;
      CompareRow r;
      r.kernel = ra.value("kernel", "");
      r.shape = ra.value("shape", "");
      r.a_us = ra.value("median_us", 0.0);
      r.b_us = rb.value("median_us", 0.0);
      r.ratio = r.b_us > 0 ? r.a_us / r.b_us : 0;
      // The runs differ when the ratio is outside both runs' noise together.
      const auto noise = [](const nlohmann::json& row) {  // absent, or null where it was not a number
        return row.contains("noise") && row["noise"].is_number() ? row["noise"].get<double>() : 0.0;
      };
      r.noise = noise(ra) + noise(rb);
      r.verdict = std::fabs(std::log(r.ratio > 0 ? r.ratio : 1)) <= r.noise ? "SAME"
                  : r.ratio > 1                                             ? "FASTER"
                                                                            : "SLOWER";
      c.rows.push_back(std::move(r));
    }
  }
  if (c.rows.empty()) throw Error("the two files share no (kernel, shape) rows to compare");
  return c;
}

}  // namespace dql::front
