#include "bench_report.hpp"

#include <fmt/format.h>

#include <algorithm>
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
                      {"bytes", r.bytes},
                      {"cold", r.cold},
                      {"back_to_back", r.runs_per_sample > 0},
                      {"timed_out", r.timed_out},
                      {"backend", r.backend}};
  if (r.runs_per_sample > 0) {
    j["runs_per_sample"] = r.runs_per_sample;
    j["copies"] = r.copies;
  }
  if (r.speedup) {
    j["speedup"] = *r.speedup;
    j["baseline"] = r.baseline;
  }
  j["launches"] = nlohmann::json::array();
  for (const cuda::KernelLaunch& l : r.launches) j["launches"].push_back(launch_json(l));
  return j;
}

namespace {

// "66x2" for {66, 2, 1}: the trailing 1s left out, "1" for {1, 1, 1}.
std::string dims_text(const std::array<unsigned, 3>& d) {
  std::string s = std::to_string(d[0]);
  const int last = d[2] != 1 ? 2 : (d[1] != 1 ? 1 : 0);
  for (int i = 1; i <= last; ++i) s += fmt::format("x{}", d[i]);
  return s;
}

std::string bytes_text(size_t b) {
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b / 1024);
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

bool has_cluster(const cuda::KernelLaunch& l) { return l.cluster[0] || l.cluster[1] || l.cluster[2]; }

}  // namespace

std::vector<const BenchRow*> rows_timing(const std::vector<BenchRow>& rows, const sass::Function& f) {
  std::vector<const BenchRow*> out;
  for (const BenchRow& r : rows) {
    const bool launched = std::any_of(r.launches.begin(), r.launches.end(), [&](const cuda::KernelLaunch& l) {
      return !l.library && l.name == f.demangled;
    });
    if (launched || (r.launches.empty() && !f.bench.empty() && r.kernel == f.bench)) out.push_back(&r);
  }
  return out;
}

std::string timed_row_text(const BenchRow& r) {
  return fmt::format("{} {}: {}, {:.1f} GB/s, {:.1f}% of copy", r.kernel, r.shape,
                     format_duration(r.stats.median_s * 1e6), r.gbps, r.pct_of_copy);
}

std::string launch_text(const cuda::KernelLaunch& l) {
  if (l.library)
    return l.name.rfind("cublas", 0) == 0 ? l.name + " (cuBLAS launches its own kernels)" : l.name;
  std::string s =
      fmt::format("{}: grid {}, block {}", sass::short_name(l.name), dims_text(l.grid), dims_text(l.block));
  if (has_cluster(l)) s += fmt::format(", cluster {}", dims_text(l.cluster));
  if (l.shared_bytes) s += fmt::format(", {} shared", bytes_text(l.shared_bytes));
  if (l.dependent) s += ", programmatic dependent";
  return s;
}

nlohmann::json launch_json(const cuda::KernelLaunch& l) {
  if (l.library) return {{"library_call", l.name}};
  nlohmann::json j = {{"kernel", sass::short_name(l.name)},
                      {"signature", l.name},
                      {"grid", l.grid},
                      {"block", l.block},
                      {"shared_bytes", l.shared_bytes}};
  if (has_cluster(l)) j["cluster"] = l.cluster;
  if (l.dependent) j["dependent"] = true;
  return j;
}

nlohmann::json bench_report_json(const nlohmann::json& device, const std::vector<BenchRow>& rows) {
  nlohmann::json j = {{"device", device}, {"rows", nlohmann::json::array()}};
  for (const BenchRow& r : rows) j["rows"].push_back(bench_row_json(r));
  return j;
}

std::string bench_csv(const std::vector<BenchRow>& rows) {
  std::string out =
      "kernel,shape,samples,median_us,noise,min_us,max_us,gbps,pct_of_copy,speedup,baseline,cold,backend,"
      "launched,runs_per_sample,copies\n";
  for (const BenchRow& r : rows) {
    // The launches' names, in order, joined by " + " and quoted (the short names hold commas).
    std::string launched;
    for (const cuda::KernelLaunch& l : r.launches)
      launched += (launched.empty() ? "" : " + ") + (l.library ? l.name : sass::short_name(l.name));
    out += fmt::format("{},{},{},{:.4f},{:.5f},{:.4f},{:.4f},{:.2f},{:.2f},{},{},{},{},\"{}\",{},{}\n",
                       r.kernel, r.shape, r.stats.samples, r.stats.median_s * 1e6, r.stats.noise,
                       r.stats.min_s * 1e6, r.stats.max_s * 1e6, r.gbps, r.pct_of_copy,
                       r.speedup ? fmt::format("{:.4f}", *r.speedup) : "", r.baseline,
                       r.cold ? "cold" : "warm", r.backend, launched, r.runs_per_sample, r.copies);
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

std::string device_summary(const nlohmann::json& device) {
  const auto text = [&](const char* key) {
    return device.contains(key) && device[key].is_string() ? device[key].get<std::string>() : std::string();
  };
  const auto number = [&](const char* key) {
    return device.contains(key) && device[key].is_number() ? device[key].get<double>() : 0.0;
  };
  const std::string name = text("name").empty() ? "a device the file does not name" : text("name");
  if (text("backend") == "cpu")
    return number("sms") > 0 ? fmt::format("CPU twin: {} ({:.0f} threads)", name, number("sms"))
                             : fmt::format("CPU twin: {}", name);
  std::string s = name;
  if (!text("compute_capability").empty()) s += ", compute capability " + text("compute_capability");
  if (number("sms") > 0) s += fmt::format(", {:.0f} SMs", number("sms"));
  if (number("memory_bytes") > 0) s += fmt::format(", {:.0f} GiB", number("memory_bytes") / 1073741824.0);
  if (!text("driver").empty()) s += ", driver " + text("driver");
  return s;
}

namespace {

// Three non-negative integers, as launch_json writes a grid, a block or a cluster.
bool read_dims(const nlohmann::json& j, std::array<unsigned, 3>& d) {
  if (!j.is_array() || j.size() != 3) return false;
  for (size_t i = 0; i < 3; ++i) {
    if (!j[i].is_number_unsigned() || j[i].get<uint64_t>() > 0xFFFFFFFFu) return false;
    d[i] = j[i].get<unsigned>();
  }
  return true;
}

}  // namespace

cuda::KernelLaunch launch_from_json(const nlohmann::json& j) {
  cuda::KernelLaunch l;
  if (j.is_object() && j.contains("library_call") && j["library_call"].is_string()) {
    l.name = j["library_call"].get<std::string>();
    l.library = true;
    return l;
  }
  // The signature where the file has it (the SASS view matches by it), else the short name.
  const char* key = j.is_object() && j.contains("signature") ? "signature" : "kernel";
  const bool named =
      j.is_object() && j.contains(key) && j[key].is_string() && !j[key].get<std::string>().empty();
  const bool shaped = named && j.contains("grid") && read_dims(j["grid"], l.grid) && j.contains("block") &&
                      read_dims(j["block"], l.block) &&
                      (!j.contains("cluster") || read_dims(j["cluster"], l.cluster)) &&
                      (!j.contains("shared_bytes") || j["shared_bytes"].is_number_unsigned()) &&
                      (!j.contains("dependent") || j["dependent"].is_boolean());
  if (!shaped) {
    throw Error(
        "a launch is {\"library_call\": name} or {\"signature\" or \"kernel\": name, \"grid\" and "
        "\"block\": three whole numbers each, and optionally \"cluster\" (three), \"shared_bytes\" and "
        "\"dependent\" (true or false)}");
  }
  l.name = j[key].get<std::string>();
  l.shared_bytes = j.value("shared_bytes", size_t{0});
  l.dependent = j.value("dependent", false);
  return l;
}

SavedRun load_bench_run(const std::string& path) {
  const nlohmann::json j = load_bench_json(path);
  SavedRun run;
  run.device = j.contains("device") ? j["device"] : nlohmann::json::object();
  run.device_line = device_summary(run.device);
  if (run.device.contains("copy_gbps")) {
    if (!run.device["copy_gbps"].is_number() || !(run.device["copy_gbps"].get<double>() >= 0))
      throw Error(fmt::format("'{}' has a \"device\" whose \"copy_gbps\" is not a number of GB/s", path));
    run.copy_gbps = run.device["copy_gbps"].get<double>();
  }
  const std::string backend = run.device.contains("backend") && run.device["backend"].is_string()
                                  ? run.device["backend"].get<std::string>()
                                  : "";
  size_t i = 0;
  for (const nlohmann::json& r : j["rows"]) {
    const auto wrong = [&](const char* key, const char* what) {
      return Error(
          fmt::format("'{}' row {}: \"{}\" is not {}, as bench --json writes it", path, i, key, what));
    };
    // A key absent (or null, where the engine had no figure) takes `absent`.
    const auto number = [&](const char* key, double absent) {
      if (!r.contains(key) || r[key].is_null()) return absent;
      if (!r[key].is_number() || r[key].get<double>() < 0) throw wrong(key, "a number, 0 or more");
      return r[key].get<double>();
    };
    const auto flag = [&](const char* key, bool absent) {
      if (!r.contains(key)) return absent;
      if (!r[key].is_boolean()) throw wrong(key, "true or false");
      return r[key].get<bool>();
    };
    const auto text = [&](const char* key, const std::string& absent) {
      if (!r.contains(key)) return absent;
      if (!r[key].is_string()) throw wrong(key, "a string");
      return r[key].get<std::string>();
    };
    BenchRow row;
    row.kernel = r["kernel"].get<std::string>();
    row.shape = r["shape"].get<std::string>();
    row.backend = text("backend", backend);
    row.cold = flag("cold", true);
    row.timed_out = flag("timed_out", false);
    // A whole number of at least `least`, or `absent` where the key is missing.
    const auto count = [&](const char* key, int least, int absent) {
      const double v = number(key, absent);
      if (v != std::floor(v) || v < least || v > 1e9)
        throw wrong(key, fmt::format("a whole number from {}", least).c_str());
      return static_cast<int>(v);
    };
    if (flag("back_to_back", false)) {
      row.runs_per_sample = count("runs_per_sample", 1, 1);
      row.copies = count("copies", 1, 1);
    }
    const double median_us = r["median_us"].get<double>();
    row.stats.median_s = median_us * 1e-6;
    row.stats.noise = number("noise", 0);
    row.stats.q1_s = number("q1_us", median_us) * 1e-6;
    row.stats.q3_s = number("q3_us", median_us) * 1e-6;
    row.stats.min_s = number("min_us", median_us) * 1e-6;
    row.stats.max_s = number("max_us", median_us) * 1e-6;
    const double samples = number("samples", 0);
    if (samples != std::floor(samples) || samples > 1e9) throw wrong("samples", "a whole number");
    row.stats.samples = static_cast<int>(samples);
    row.gbps = number("gbps", 0);
    row.bytes = number("bytes", row.gbps * 1e9 * row.stats.median_s);
    row.elements_per_s = number("elements_per_s", 0);
    row.pct_of_copy = number("pct_of_copy", run.copy_gbps > 0 ? 100 * row.gbps / run.copy_gbps : 0);
    if (r.contains("speedup") && !r["speedup"].is_null()) {
      row.speedup = number("speedup", 0);
      row.baseline = text("baseline", "");
    }
    if (r.contains("launches")) {
      if (!r["launches"].is_array()) throw wrong("launches", "an array");
      size_t n = 0;
      for (const nlohmann::json& l : r["launches"]) {
        try {
          row.launches.push_back(launch_from_json(l));
        } catch (const Error& e) {
          throw Error(fmt::format("'{}' row {}, launch {}: {}", path, i, n, e.what()));
        }
        ++n;
      }
    }
    run.rows.push_back(std::move(row));
    ++i;
  }
  return run;
}

Comparison compare_bench(const nlohmann::json& a, const nlohmann::json& b) {
  Comparison c;
  c.a_device = a.value("device", nlohmann::json::object()).value("name", "?");
  c.b_device = b.value("device", nlohmann::json::object()).value("name", "?");
  const auto copy = [](const nlohmann::json& run) {  // absent, or not a positive number: not known
    if (!run.contains("device") || !run["device"].is_object() || !run["device"].contains("copy_gbps"))
      return 0.0;
    const nlohmann::json& v = run["device"]["copy_gbps"];
    return v.is_number() && v.get<double>() > 0 ? v.get<double>() : 0.0;
  };
  c.a_copy_gbps = copy(a), c.b_copy_gbps = copy(b);
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
      const auto kernels = [](const nlohmann::json& row) {  // the launches' names; none where not listed
        std::vector<std::string> names;
        if (!row.contains("launches") || !row["launches"].is_array()) return names;
        for (const auto& l : row["launches"]) {
          const char* key = l.is_object() && l.contains("kernel") ? "kernel" : "library_call";
          names.push_back(l.is_object() && l.contains(key) && l[key].is_string() ? l[key].get<std::string>()
                                                                                 : "?");
        }
        return names;
      };
      const std::vector<std::string> ka = kernels(ra), kb = kernels(rb);
      r.other_kernels = !ka.empty() && !kb.empty() && ka != kb;
      const auto timing = [](const nlohmann::json& row) {  // absent keys: cold, one run
        const bool cold = !row.contains("cold") || !row["cold"].is_boolean() || row["cold"].get<bool>();
        return timing_name(cold, row.contains("back_to_back") && row["back_to_back"] == true);
      };
      r.timing_a = timing(ra);
      r.timing_b = timing(rb);
      r.other_timing = r.timing_a != r.timing_b;
      c.rows.push_back(std::move(r));
    }
  }
  if (c.rows.empty()) throw Error("the two files share no (kernel, shape) rows to compare");
  return c;
}

std::string copy_line(const Comparison& c) {
  if (c.copy_ratio() == 0) return "";
  return fmt::format(
      "copy bandwidth: A {:.0f} GB/s, B {:.0f} GB/s ({:.3f}x): a row bound by memory bandwidth on both would "
      "show about that A/B",
      c.a_copy_gbps, c.b_copy_gbps, c.copy_ratio());
}

}  // namespace dql::front
