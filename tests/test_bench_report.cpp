// Benchmark statistics and the reports both front ends write: quartiles and noise, the JSON and
// CSV rows, and the A/B comparison with its SAME / FASTER / SLOWER verdicts.
#include <doctest/doctest.h>

#include <filesystem>
#include <thread>

#include "app/common/bench_report.hpp"
#include "app/common/parse.hpp"
#include "kernels/backend/backend.hpp"
#include "kernels/bench/engine.hpp"

using namespace dql;

namespace {

BenchRow row(const std::string& kernel, const std::string& shape, double median_s, double noise) {
  BenchRow r;
  r.kernel = kernel;
  r.shape = shape;
  r.backend = "cpu";
  r.stats.samples = 30;
  r.stats.median_s = median_s;
  r.stats.noise = noise;
  r.stats.q1_s = median_s * (1 - noise / 2);
  r.stats.q3_s = median_s * (1 + noise / 2);
  r.stats.min_s = r.stats.q1_s;
  r.stats.max_s = r.stats.q3_s;
  return r;
}

nlohmann::json report(const std::vector<BenchRow>& rows, const std::string& name) {
  DeviceInfo d;
  d.backend = "cpu";
  d.name = name;
  return front::bench_report_json(front::bench_device_json(d, 10.0, GpuClocks{}), rows);
}

}  // namespace

TEST_CASE("bench case names: a GEMM case says the rows of X a block were set to") {
  BenchCase c;
  c.kind = BenchKind::Gemv;
  c.n = 8192, c.k = 8192, c.m = 65;
  CHECK(c.kernel_name() == "gemm/w4a16-ft-fp16");
  CHECK(c.shape_name() == "M=65 8192x8192 g128");
  c.gemm_rows = 80;  // bench --gemm-rows
  CHECK(c.shape_name() == "M=65 8192x8192 g128 rows 80");
}

TEST_CASE("bench cases: the rows a block apply to the cases the Hopper GEMM runs, and no others") {
  BenchCase c;
  c.kind = BenchKind::Gemv;
  c.n = 8192, c.k = 8192, c.m = 65;
  CHECK(c.takes_gemm_rows());
  c.path = gemv::Path::Naive;  // gemm/w4a16-ft-naive-fp16: the same kernel, plain conversion
  CHECK(c.takes_gemm_rows());
  c.dtype = recipes::OutType::BF16;
  CHECK(c.takes_gemm_rows());
  const auto with = [&](auto change) {
    BenchCase d = c;
    change(d);
    return d.takes_gemm_rows();
  };
  CHECK(with([](BenchCase& d) { d.m = 256; }));
  // 33-64 rows: the Hopper GEMM on large matrices only, the GEMV forms elsewhere and up to 32 rows.
  CHECK(with([](BenchCase& d) { d.m = 33; }));
  CHECK(with([](BenchCase& d) { d.m = 64; }));
  CHECK_FALSE(with([](BenchCase& d) { d.m = 32; }));
  CHECK(with([](BenchCase& d) { d.m = 40, d.n = 4096; }));                    // 4096x8192
  CHECK_FALSE(with([](BenchCase& d) { d.m = 40, d.n = 4096, d.k = 4096; }));  // 4096x4096
  CHECK(with([](BenchCase& d) { d.m = 65, d.n = 4096, d.k = 4096; }));
  CHECK_FALSE(with([](BenchCase& d) { d.m = 64, d.n = 2048; }));  // 2048x8192
  CHECK(with([](BenchCase& d) { d.m = 64, d.k = 2048; }));        // 8192x2048
  CHECK_FALSE(with([](BenchCase& d) { d.path = gemv::Path::Cublas; }));
  CHECK_FALSE(with([](BenchCase& d) { d.path = gemv::Path::Online; }));
  CHECK_FALSE(with([](BenchCase& d) { d.layout = quant::Layout::Awq, d.scheme = quant::Scheme::Int4Asym; }));
  CHECK_FALSE(with([](BenchCase& d) { d.scheme = quant::Scheme::Int8Sym; }));
  CHECK_FALSE(with([](BenchCase& d) { d.n = 8192 + 64; }));  // not whole 128-channel tiles
  CHECK_FALSE(with([](BenchCase& d) { d.group = 32; }));     // groups inside a 64-row tile
  CHECK(with([](BenchCase& d) { d.group = 64; }));
  CHECK_FALSE(with([](BenchCase& d) { d.kind = BenchKind::Dequant; }));
}

TEST_CASE("bench cases: the ring beside the walk applies to the walk's cases, and says so in the shape") {
  BenchCase c;
  c.kind = BenchKind::Gemv;
  c.n = 28672, c.k = 8192, c.m = 16;
  CHECK(c.takes_ring());
  CHECK(c.shape_name() == "M=16 28672x8192 g128");
  c.ring = true;  // bench --ring
  CHECK(c.shape_name() == "M=16 28672x8192 g128 ring");
  CHECK(c.kernel_name() == "gemv/w4a16-ft-fp16");
  c.ring = false;
  const auto with = [&](auto change) {
    BenchCase d = c;
    change(d);
    return d.takes_ring();
  };
  CHECK(with([](BenchCase& d) { d.m = 2; }));
  CHECK_FALSE(with([](BenchCase& d) { d.m = 1; }));  // the one-row kernel
  CHECK(with([](BenchCase& d) { d.m = 17; }));       // two token tiles
  CHECK(with([](BenchCase& d) { d.m = 32; }));
  CHECK_FALSE(with([](BenchCase& d) { d.m = 33; }));  // beyond the walk
  CHECK(with([](BenchCase& d) { d.path = gemv::Path::Naive; }));
  CHECK(with([](BenchCase& d) { d.dtype = recipes::OutType::BF16; }));
  CHECK(with([](BenchCase& d) { d.group = 64; }));
  CHECK_FALSE(with([](BenchCase& d) { d.group = 32; }));
  CHECK_FALSE(with([](BenchCase& d) { d.path = gemv::Path::Cublas; }));
  CHECK_FALSE(with([](BenchCase& d) { d.path = gemv::Path::Online; }));
  CHECK_FALSE(with([](BenchCase& d) { d.scheme = quant::Scheme::Int8Sym; }));
  CHECK_FALSE(with([](BenchCase& d) { d.layout = quant::Layout::Awq, d.scheme = quant::Scheme::Int4Asym; }));
  CHECK_FALSE(with([](BenchCase& d) { d.n = 64, d.k = 512; }));  // below the walk's least size
  CHECK_FALSE(with([](BenchCase& d) { d.kind = BenchKind::Dequant; }));
}

TEST_CASE("bench statistics: median, quartiles and noise by linear interpolation") {
  const BenchStats s = summarize({5, 1, 4, 2, 3});  // sorted 1 2 3 4 5
  CHECK(s.samples == 5);
  CHECK(s.median_s == doctest::Approx(3));
  CHECK(s.q1_s == doctest::Approx(2));
  CHECK(s.q3_s == doctest::Approx(4));
  CHECK(s.noise == doctest::Approx(2.0 / 3.0));
  CHECK(s.min_s == 1);
  CHECK(s.max_s == 5);
  const BenchStats four = summarize({10, 20, 30, 40});  // positions 0.75, 1.5, 2.25
  CHECK(four.q1_s == doctest::Approx(17.5));
  CHECK(four.median_s == doctest::Approx(25));
  CHECK(four.q3_s == doctest::Approx(32.5));
  CHECK(four.q1_s <= four.median_s);
  const BenchStats none = summarize({});
  CHECK(none.samples == 0);
  CHECK(none.noise == 0);
}

TEST_CASE("bench report: JSON rows, CSV and durations") {
  BenchRow r = row("dequant/awq-int4-fp16", "64x128 g128", 12e-6, 0.01);
  r.speedup = 2.5;
  r.baseline = "naive-int4-fp16";
  const nlohmann::json j = report({r}, "test cpu");
  REQUIRE(j["rows"].size() == 1);
  CHECK(j["rows"][0]["median_us"].get<double>() == doctest::Approx(12));
  CHECK(j["rows"][0]["q1_us"].get<double>() == doctest::Approx(11.94));
  CHECK(j["rows"][0]["q3_us"].get<double>() == doctest::Approx(12.06));
  CHECK(j["rows"][0]["speedup"] == 2.5);
  CHECK(j["device"]["name"] == "test cpu");
  CHECK(j["device"]["copy_gbps"] == 10.0);
  // The device object carries what sets a launch's choices beside the name: the shared memory a block may
  // opt in to among them (the one-row kernel's other forms need it).
  DeviceInfo h100;
  h100.backend = "cuda";
  h100.name = "NVIDIA H100 80GB HBM3";
  h100.sms = 132;
  h100.l2_bytes = size_t{50} << 20;
  h100.block_shared_bytes = 232448;
  const nlohmann::json dj = front::bench_device_json(h100, 3036.0, GpuClocks{});
  CHECK(dj["sms"] == 132);
  CHECK(dj["l2_bytes"] == size_t{50} << 20);
  CHECK(dj["block_shared_bytes"] == 232448);
  CHECK(dj["copy_gbps"] == 3036.0);
  CHECK_FALSE(dj.contains("sm_clock_mhz"));  // no clocks read
  const std::string csv = front::bench_csv({r});
  CHECK(csv.rfind("kernel,shape,samples,median_us,noise,min_us,max_us,gbps,pct_of_copy,speedup,baseline,cold,"
                  "backend,launched,runs_per_sample,copies\n",
                  0) == 0);
  CHECK(csv.find("dequant/awq-int4-fp16,64x128 g128,30,12.0000,0.01000,") != std::string::npos);
  CHECK(csv.find(",2.5000,naive-int4-fp16,cold,cpu,\"\",0,1\n") !=
        std::string::npos);  // the CPU twin: no launches
  CHECK(j["rows"][0]["launches"] == nlohmann::json::array());
  CHECK(front::format_duration(12.345) == "12.35 us");
  CHECK(front::format_duration(1234.0) == "1.234 ms");
  CHECK(front::format_duration(2.5e6) == "2.500 s");
  // An axis's ticks: as short as they read, the steps' multiples without float noise.
  CHECK(front::format_tick(0.0) == "0");
  CHECK(front::format_tick(3 * 0.1) == "0.3 us");
  CHECK(front::format_tick(200.0) == "200 us");
  CHECK(front::format_tick(1500.0) == "1.5 ms");
  CHECK(front::format_tick(3 * 10000.0) == "30 ms");
  CHECK(front::format_tick(2e6) == "2 s");
}

TEST_CASE("bench report: A/B comparison verdicts and bad files") {
  const nlohmann::json a = report({row("k1", "s", 10e-6, 0.02), row("k2", "s", 10e-6, 0.02),
                                   row("k3", "s", 10e-6, 0.02), row("only-a", "s", 1e-6, 0)},
                                  "A");
  const nlohmann::json b =
      report({row("k1", "s", 10.1e-6, 0.02), row("k2", "s", 5e-6, 0.02), row("k3", "s", 20e-6, 0.02)}, "B");
  const front::Comparison c = front::compare_bench(a, b);
  CHECK(c.a_device == "A");
  CHECK(c.b_device == "B");
  REQUIRE(c.rows.size() == 3);
  CHECK(c.rows[0].verdict == "SAME");
  CHECK(c.rows[1].verdict == "FASTER");
  CHECK(c.rows[1].ratio == doctest::Approx(2.0));
  CHECK(c.rows[2].verdict == "SLOWER");
  CHECK(c.rows[2].noise == doctest::Approx(0.04));
  CHECK_THROWS_WITH_AS(front::compare_bench(a, report({row("other", "s", 1e-6, 0)}, "C")),
                       "the two files share no (kernel, shape) rows to compare", Error);
  // The copy bandwidth of each run, and the A/B a bandwidth-bound row would show.
  CHECK(c.a_copy_gbps == 10.0);
  CHECK(c.copy_ratio() == 1.0);
  nlohmann::json faster = b;
  faster["device"]["copy_gbps"] = 14.0;
  const front::Comparison f = front::compare_bench(a, faster);
  CHECK(f.copy_ratio() == doctest::Approx(1.4));
  CHECK(front::copy_line(f) ==
        "copy bandwidth: A 10 GB/s, B 14 GB/s (1.400x): a row bound by memory bandwidth on both would show "
        "about that A/B");
  faster["device"].erase("copy_gbps");  // a file that does not say: no line, nothing made up
  const front::Comparison unknown = front::compare_bench(a, faster);
  CHECK(unknown.b_copy_gbps == 0);
  CHECK(unknown.copy_ratio() == 0);
  CHECK(front::copy_line(unknown).empty());
  faster["device"]["copy_gbps"] = "fast";
  CHECK(front::compare_bench(a, faster).copy_ratio() == 0);

  const auto dir = std::filesystem::temp_directory_path() / "dql-test-bench-report";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "a.json").string(), bad = (dir / "bad.json").string();
  front::write_report_file(good, a.dump(2));
  CHECK(front::load_bench_json(good) == a);
  front::write_report_file(bad, "{\"not\": 1}");
  CHECK_THROWS_AS(front::load_bench_json(bad), Error);
  CHECK_THROWS_AS(front::load_bench_json((dir / "missing.json").string()), Error);
  // JSON of the right shape with values of the wrong types: a sentence, not a JSON library error.
  for (const char* text : {R"({"rows": [1, 2]})", R"({"device": 5, "rows": []})",
                           R"({"rows": [{"kernel": 5, "shape": "s", "median_us": 1}]})",
                           R"({"rows": [{"kernel": "k", "shape": "s", "median_us": "fast"}]})",
                           R"({"rows": [{"kernel": "k", "shape": "s", "median_us": 0}]})",
                           R"({"rows": [{"kernel": "k", "shape": "s", "median_us": 1, "noise": "low"}]})"}) {
    CAPTURE(text);
    front::write_report_file(bad, text);
    CHECK_THROWS_AS(front::load_bench_json(bad), Error);
  }
  front::write_report_file(bad,
                           R"({"rows": [{"kernel": "k", "shape": "s", "median_us": 1, "noise": null}]})");
  CHECK(front::load_bench_json(bad)["rows"].size() == 1);  // a noise written as null (NaN) is read as none
  const std::string missing = (dir / "no/such/dir.csv").string();
  CHECK_THROWS_WITH_AS(front::write_report_file(missing, "x"),
                       ("cannot write '" + missing + "': the folder '" + (dir / "no/such").string() +
                        "' does not exist; give a file in an existing folder")
                           .c_str(),
                       Error);
  // A folder where a file is meant: said as such (it used to be "check the folder exists").
  CHECK_THROWS_WITH_AS(front::write_report_file(dir.string(), "x"),
                       ("'" + dir.string() +
                        "' is a folder: give the path of a file to write the results to (a new name inside "
                        "it will do)")
                           .c_str(),
                       Error);
  std::filesystem::remove_all(dir);
}

namespace {

// The one-row kernel's launch as the runtime names it (the symbol demangled).
cuda::KernelLaunch lane_launch(bool other) {
  cuda::KernelLaunch l;
  l.name = std::string(
               "void dql::cuda::(anonymous namespace)::ft_lane_kernel<(dql::recipes::OutType)0, false, 16, "
               "true, false, ") +
           (other ? "true" : "false") + ", false>(dql::cuda::io::FtIo, int, int)";
  l.grid = {66, 2, 1};
  l.block = {512, 1, 1};
  l.shared_bytes = 24576;
  return l;
}

// The Hopper GEMM's launch: a cluster of two and 201.5 KiB of shared memory.
cuda::KernelLaunch hopper_launch() {
  return {"void dql::cuda::io::hopper_gemm_kernel<128, 64>(Args, CUtensorMap, CUtensorMap, CUtensorMap)",
          false,
          {264, 1, 1},
          {384, 1, 1},
          {2, 1, 1},
          1536 + 200 * 1024};
}

}  // namespace

TEST_CASE("launch log: the innermost open log on the thread notes the launches, none where none is open") {
  CHECK_FALSE(cuda::launch_log_open());
  cuda::note_library_call("cublasGemmEx");  // no log: noted nowhere, and no harm
  {
    const cuda::LaunchLog outer;
    CHECK(cuda::launch_log_open());
    cuda::note_launch(lane_launch(false));
    {
      const cuda::LaunchLog inner;
      cuda::note_library_call("cublasGemmEx");
      REQUIRE(inner.launches().size() == 1);
      CHECK(inner.launches()[0].library);
      CHECK(inner.launches()[0].name == "cublasGemmEx");
    }
    cuda::note_launch(lane_launch(true));  // the inner log closed: the outer one again
    REQUIRE(outer.launches().size() == 2);
    CHECK_FALSE(outer.launches()[0].library);
    CHECK(outer.launches()[1].name == lane_launch(true).name);
    // Another thread has no log open of its own.
    bool other_thread_open = true;
    std::thread([&] { other_thread_open = cuda::launch_log_open(); }).join();
    CHECK_FALSE(other_thread_open);
  }
  CHECK_FALSE(cuda::launch_log_open());
}

TEST_CASE("bench report: what a row launched, in the table's lines, the JSON and the CSV") {
  const cuda::KernelLaunch lane = lane_launch(true);
  CHECK(front::launch_text(lane) ==
        "ft_lane_kernel<fp16, false, 16, true, false, true, false>: grid 66x2, block 512, 24 KiB shared");
  const cuda::KernelLaunch gemm = hopper_launch();
  CHECK(front::launch_text(gemm) ==
        "io::hopper_gemm_kernel<128, 64>: grid 264, block 384, cluster 2, 201.5 KiB shared");
  const cuda::KernelLaunch tiny{
      "void dql::cuda::(anonymous namespace)::trace_kernel(int)", false, {1, 1, 1}, {1, 1, 1}, {}, 0};
  CHECK(front::launch_text(tiny) == "trace_kernel: grid 1, block 1");  // no shared memory: not said
  cuda::KernelLaunch blas;
  blas.name = "cublasGemmEx";
  blas.library = true;
  CHECK(front::launch_text(blas) == "cublasGemmEx (cuBLAS launches its own kernels)");
  const cuda::KernelLaunch copy{"cudaMemcpyAsync (device to device)", true, {}, {}, {}, 0};
  CHECK(front::launch_text(copy) == "cudaMemcpyAsync (device to device)");

  // The GPU suite reads a launch's form from its template arguments (sass::template_args of the short name).
  const std::string lane_name = sass::short_name(lane.name);
  std::string_view base;
  const auto args = sass::template_args(lane_name, &base);
  CHECK(base == "ft_lane_kernel");
  REQUIRE(args.size() == 7);
  CHECK(args[0] == "fp16");
  CHECK(args[2] == "16");
  CHECK(args[5] == "true");
  CHECK(args[6] == "false");
  const nlohmann::json lj = front::launch_json(lane);
  CHECK(lj["kernel"] == "ft_lane_kernel<fp16, false, 16, true, false, true, false>");
  CHECK(lj["signature"] == lane.name);
  CHECK(lj["grid"] == nlohmann::json::array({66, 2, 1}));
  CHECK(lj["block"] == nlohmann::json::array({512, 1, 1}));
  CHECK(lj["shared_bytes"] == 24576);
  CHECK_FALSE(lj.contains("cluster"));
  CHECK(front::launch_json(gemm)["cluster"] == nlohmann::json::array({2, 1, 1}));
  CHECK(front::launch_json(blas) == nlohmann::json{{"library_call", "cublasGemmEx"}});
  CHECK_FALSE(lj.contains("dependent"));
  // A programmatic dependent of the launch before it says so, in the line and the JSON.
  cuda::KernelLaunch dep = lane;
  dep.dependent = true;
  CHECK(front::launch_text(dep) ==
        "ft_lane_kernel<fp16, false, 16, true, false, true, false>: grid 66x2, block "
        "512, 24 KiB shared, programmatic dependent");
  CHECK(front::launch_json(dep)["dependent"] == true);
  CHECK(front::launch_from_json(front::launch_json(dep)).dependent);
  CHECK_FALSE(front::launch_from_json(lj).dependent);

  BenchRow r = row("gemv/w4a16-ft-fp16", "M=1 28672x8192 g128", 46e-6, 0.01);
  r.backend = "cuda";
  r.launches = {lane};
  BenchRow b = row("gemv/cublas-fp16", "M=1 28672x8192", 160e-6, 0.01);
  b.backend = "cuda";
  b.launches = {blas, tiny};
  const nlohmann::json j = report({r, b}, "gpu");
  REQUIRE(j["rows"][0]["launches"].size() == 1);
  CHECK(j["rows"][0]["launches"][0] == lj);
  CHECK(j["rows"][1]["launches"][0]["library_call"] == "cublasGemmEx");
  const std::string csv = front::bench_csv({r, b});
  CHECK(csv.find(",cold,cuda,\"ft_lane_kernel<fp16, false, 16, true, false, true, false>\",0,1\n") !=
        std::string::npos);
  CHECK(csv.find(",cold,cuda,\"cublasGemmEx + trace_kernel\",0,1\n") != std::string::npos);
}

TEST_CASE("SASS view times: a GPU's row counts for the kernel it launched, a CPU row under the bench name") {
  // Two instances of the lane kernel in the listing; one GPU row launched the other form.
  sass::Function plain, other;
  plain.demangled = lane_launch(false).name;
  other.demangled = lane_launch(true).name;
  sass::Function ft;  // a dequant kernel, filed under its bench name
  ft.demangled =
      "void dql::cuda::(anonymous namespace)::dequant_ft_kernel<(dql::recipes::RecipeId)1, 0, false>("
      "dql::quant::DequantArgs, long, int)";
  ft.bench = "dequant/ft-int4-fp16";
  BenchRow gpu = row("gemv/w4a16-ft-fp16", "M=1 28672x8192 g128", 46e-6, 0.01);
  gpu.launches = {lane_launch(true)};
  BenchRow cpu = row("dequant/ft-int4-fp16", "8192x8192 g128", 9e-3, 0.01);  // the CPU twin: no launches
  BenchRow gpu_ft = row("dequant/ft-int4-fp16", "4096x4096 g128", 12e-6, 0.01);
  cuda::KernelLaunch sibling;  // another form of the same recipe's kernel
  sibling.name =
      "void dql::cuda::(anonymous namespace)::dequant_ft_kernel<(dql::recipes::RecipeId)1, 2, false>("
      "dql::quant::DequantArgs, long, int)";
  gpu_ft.launches = {sibling};
  const std::vector<BenchRow> rows = {gpu, cpu, gpu_ft};
  CHECK(front::rows_timing(rows, plain).empty());
  const auto o = front::rows_timing(rows, other);
  REQUIRE(o.size() == 1);
  CHECK(o[0] == &rows[0]);
  const auto f = front::rows_timing(rows, ft);  // the CPU row by name; not the GPU row of its sibling
  REQUIRE(f.size() == 1);
  CHECK(f[0] == &rows[1]);
}

TEST_CASE("bench report: a comparison marks rows whose runs launched other kernels") {
  BenchRow plain = row("gemv/w4a16-ft-fp16", "M=1 28672x8192 g128", 46e-6, 0.01);
  plain.launches = {lane_launch(false)};
  BenchRow other = plain;
  other.launches = {lane_launch(true)};
  BenchRow unlisted = plain;  // a file from before rows listed their launches
  unlisted.launches.clear();
  const auto marked = [](const BenchRow& a, const BenchRow& b) {
    return front::compare_bench(report({a}, "A"), report({b}, "B")).rows.at(0).other_kernels;
  };
  CHECK_FALSE(marked(plain, plain));
  CHECK(marked(plain, other));
  CHECK_FALSE(marked(plain, unlisted));
  CHECK_FALSE(marked(unlisted, other));
  // A hand-edited file whose launches hold values of other types: compared, not thrown on.
  nlohmann::json odd = report({plain}, "odd");
  odd["rows"][0]["launches"] = nlohmann::json::array({5, {{"kernel", 7}}});
  const front::Comparison c = front::compare_bench(report({plain}, "A"), odd);
  CHECK(c.rows.at(0).other_kernels);
}

TEST_CASE(
    "saved runs: a file read back gives the rows the views drew, and a bad file is named with its row and "
    "key") {
  const auto dir = std::filesystem::temp_directory_path() / "dql-test-saved-run";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const nlohmann::json& j) {
    const std::string p = (dir / name).string();
    front::write_report_file(p, j.dump(2));
    return p;
  };
  // A GPU's rows with every kind of launch, through the file and back.
  BenchRow r = row("gemv/w4a16-ft-fp16", "M=1 28672x8192 g128", 33.7e-6, 0.0332);
  r.backend = "cuda";
  r.bytes = 121184256.0;
  r.gbps = r.bytes / r.stats.median_s / 1e9;
  r.elements_per_s = 6.97e12;
  r.pct_of_copy = 83.9;
  r.speedup = 3.34;
  r.baseline = "gemv/cublas-fp16";
  r.timed_out = true;
  const cuda::KernelLaunch gemm = hopper_launch();
  cuda::KernelLaunch blas;
  blas.name = "cublasGemmEx";
  blas.library = true;
  r.launches = {lane_launch(true), gemm, blas};
  BenchRow w = row("dequant/ft-int4-fp16", "8192x8192 g128", 40e-6, 0.01);
  w.cold = false;
  w.bytes = 167772160.0;
  DeviceInfo h200;
  h200.backend = "cuda";
  h200.name = "NVIDIA H200";
  h200.cc_major = 9;
  h200.sms = 132;
  h200.memory_bytes = 150109880320;
  GpuClocks clocks;
  clocks.available = true;
  clocks.sm_mhz = 1980;
  clocks.mem_mhz = 3201;
  clocks.driver = "580.159.04";
  const nlohmann::json device = front::bench_device_json(h200, 4287.0, clocks);
  const front::SavedRun run =
      front::load_bench_run(write("gpu.json", front::bench_report_json(device, {r, w})));
  CHECK(run.device == device);
  CHECK(run.copy_gbps == 4287.0);
  CHECK(run.device_line == "NVIDIA H200, compute capability 9.0, 132 SMs, 140 GiB, driver 580.159.04");
  REQUIRE(run.rows.size() == 2);
  const BenchRow& g = run.rows[0];
  CHECK(g.kernel == r.kernel);
  CHECK(g.shape == r.shape);
  CHECK(g.backend == "cuda");
  CHECK(g.cold);
  CHECK(g.timed_out);
  CHECK(g.stats.samples == 30);
  CHECK(g.stats.median_s == doctest::Approx(r.stats.median_s).epsilon(1e-12));
  CHECK(g.stats.q1_s == doctest::Approx(r.stats.q1_s).epsilon(1e-12));
  CHECK(g.stats.q3_s == doctest::Approx(r.stats.q3_s).epsilon(1e-12));
  CHECK(g.stats.min_s == doctest::Approx(r.stats.min_s).epsilon(1e-12));
  CHECK(g.stats.max_s == doctest::Approx(r.stats.max_s).epsilon(1e-12));
  CHECK(g.stats.noise == r.stats.noise);
  CHECK(g.bytes == r.bytes);
  CHECK(g.gbps == r.gbps);
  CHECK(g.elements_per_s == r.elements_per_s);
  CHECK(g.pct_of_copy == r.pct_of_copy);
  REQUIRE(g.speedup.has_value());
  CHECK(*g.speedup == 3.34);
  CHECK(g.baseline == r.baseline);
  REQUIRE(g.launches.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(g.launches[i].name == r.launches[i].name);  // the signature: the SASS view matches by it
    CHECK(g.launches[i].library == r.launches[i].library);
    CHECK(g.launches[i].grid == r.launches[i].grid);
    CHECK(g.launches[i].block == r.launches[i].block);
    CHECK(g.launches[i].cluster == r.launches[i].cluster);
    CHECK(g.launches[i].shared_bytes == r.launches[i].shared_bytes);
  }
  CHECK_FALSE(run.rows[1].cold);
  CHECK_FALSE(run.rows[1].speedup.has_value());
  CHECK(run.rows[1].launches.empty());
  // The SASS view times the launched instance from the file's rows as from a run's.
  sass::Function other;
  other.demangled = lane_launch(true).name;
  REQUIRE(front::rows_timing(run.rows, other).size() == 1);
  CHECK(front::rows_timing(run.rows, other)[0] == &run.rows[0]);

  // A file from an older build: no quartiles, extremes, bytes, launches or percentages; the noise null.
  const nlohmann::json old = {
      {"device", {{"backend", "cpu"}, {"name", "test cpu"}, {"sms", 2}, {"copy_gbps", 10.0}}},
      {"rows",
       {{{"kernel", "dequant/awq-int4-fp16"},
         {"shape", "64x128 g128"},
         {"median_us", 4.0},
         {"noise", nullptr},
         {"gbps", 5.0}}}}};
  const front::SavedRun o = front::load_bench_run(write("old.json", old));
  CHECK(o.device_line == "CPU twin: test cpu (2 threads)");
  REQUIRE(o.rows.size() == 1);
  CHECK(o.rows[0].backend == "cpu");  // the device's backend
  CHECK(o.rows[0].stats.noise == 0);
  CHECK(o.rows[0].stats.q1_s == doctest::Approx(4e-6));
  CHECK(o.rows[0].stats.max_s == doctest::Approx(4e-6));
  CHECK(o.rows[0].bytes == doctest::Approx(5.0 * 1e9 * 4e-6));  // GB/s times the median
  CHECK(o.rows[0].pct_of_copy == doctest::Approx(50.0));        // of the file's copy bandwidth
  CHECK(front::device_summary(nlohmann::json::object()) == "a device the file does not name");

  // A key of another type than bench --json writes, named with its row; the rows held before are not touched.
  const auto refusal = [&](const std::string& name, const nlohmann::json& j) {
    try {
      front::load_bench_run(write(name, j));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  nlohmann::json bad = old;
  bad["rows"][0]["gbps"] = "fast";
  CHECK(refusal("gbps.json", bad) ==
        "'" + (dir / "gbps.json").string() +
            "' row 0: \"gbps\" is not a number, 0 or more, as bench --json writes it");
  bad = old;
  bad["rows"][0]["samples"] = 2.5;
  CHECK(refusal("samples.json", bad).find("row 0: \"samples\" is not a whole number") != std::string::npos);
  bad = old;
  bad["rows"][0]["cold"] = "yes";
  CHECK(refusal("cold.json", bad).find("row 0: \"cold\" is not true or false") != std::string::npos);
  bad = old;
  bad["rows"][0]["launches"] = "ft_lane_kernel";
  CHECK(refusal("launches.json", bad).find("row 0: \"launches\" is not an array") != std::string::npos);
  bad = old;
  bad["rows"][0]["launches"] = {{{"kernel", "k"}, {"grid", {1, 1}}, {"block", {32, 1, 1}}}};
  const std::string dims = refusal("dims.json", bad);
  CHECK(dims.find("row 0, launch 0: a launch is {\"library_call\": name} or") != std::string::npos);
  bad = old;
  bad["rows"][0]["launches"] = {
      {{"kernel", "k"}, {"grid", {1, 1, 1}}, {"block", {32, 1, 1}}, {"dependent", "yes"}}};
  CHECK(refusal("dependent.json", bad).find("\"dependent\" (true or false)") != std::string::npos);
  bad = old;
  bad["device"]["copy_gbps"] = "4 TB/s";
  CHECK(refusal("copy.json", bad).find("\"copy_gbps\" is not a number of GB/s") != std::string::npos);
  CHECK(refusal("none.json", nlohmann::json{{"rows", {{{"kernel", "k"}}}}}).find("is not a bench row") !=
        std::string::npos);
  std::filesystem::remove_all(dir);
}

namespace {

// A target that notes how it was asked to time: single runs (cold or warm) and back-to-back spans.
class CountingTarget final : public BenchTarget {
 public:
  explicit CountingTarget(double run_s, int kernels = 1, int copies = 7)
      : run_s_(run_s), kernels_(kernels), copies_(copies) {}
  double time_once(bool cold) override {
    ++(cold ? cold_runs : warm_runs);
    return run_s_;
  }
  double time_back_to_back(int runs) override {
    spans.push_back(runs);
    return run_s_;
  }
  int copies() const override { return copies_; }
  std::vector<cuda::KernelLaunch> launches() const override {
    return std::vector<cuda::KernelLaunch>(static_cast<size_t>(kernels_));
  }
  int cold_runs = 0, warm_runs = 0;
  std::vector<int> spans;  // the runs of each back-to-back span asked for, in order

 private:
  double run_s_;
  int kernels_, copies_;
};

BenchCase small_dequant() {
  BenchCase c;
  c.kind = BenchKind::Dequant;
  c.recipe = recipes::RecipeId::AwqInt4F16;
  c.n = 64;
  c.k = 128;
  return c;
}

}  // namespace

TEST_CASE("bench engine: back-to-back samples time spans of runs, about span_seconds each") {
  BenchSettings s;
  s.back_to_back = true;
  s.min_samples = 25;
  s.min_seconds = 0;
  CountingTarget t(10e-6);
  const BenchRow r = measure(t, small_dequant(), s, nullptr);
  CHECK(t.cold_runs + t.warm_runs == 0);  // no single run, and no flush: the spans are the samples
  // Warm-up: s.warmup spans of 4 runs; then spans of 200 us / 10 us = 20 runs.
  REQUIRE(t.spans.size() == static_cast<size_t>(s.warmup + r.stats.samples));
  for (int i = 0; i < s.warmup; ++i) CHECK(t.spans[static_cast<size_t>(i)] == 4);
  CHECK(t.spans.back() == 20);
  CHECK(r.runs_per_sample == 20);
  CHECK(r.copies == 7);
  CHECK(r.cold);
  CHECK(r.stats.samples == 25);
  CHECK(r.stats.median_s == doctest::Approx(10e-6));
  CHECK(timing_name(r) == "cold, back to back");
  CHECK(timing_name(false, true) == "warm, back to back");
  CHECK(timing_name(true, false) == "cold");
  // Every run counts toward the sampled time: 25 spans of 20 runs of 10 us are 5 ms.
  s.min_seconds = 0.0049;
  CountingTarget t2(10e-6);
  CHECK(measure(t2, small_dequant(), s, nullptr).stats.samples == 25);
  s.min_seconds = 0.0051;
  CountingTarget t3(10e-6);
  CHECK(measure(t3, small_dequant(), s, nullptr).stats.samples == 32);  // the next noise check
  // Short runs: no more than 256 launches queued behind the hold (3 kernels a run: 85 runs).
  s.min_seconds = 0;
  CountingTarget quick(0.1e-6, 3);
  CHECK(measure(quick, small_dequant(), s, nullptr).runs_per_sample == 85);
  // Long runs: at least 2 a span.
  CountingTarget slow(1e-3);
  CHECK(measure(slow, small_dequant(), s, nullptr).runs_per_sample == 2);
  // The warm-up goes round every copy: 20 copies, 5 spans of 4 runs.
  CountingTarget many(10e-6, 1, 20);
  const BenchRow m = measure(many, small_dequant(), s, nullptr);
  REQUIRE(many.spans.size() == static_cast<size_t>(5 + m.stats.samples));
  CHECK(many.spans[4] == 4);
  CHECK(many.spans[5] == 20);
  // A run at a time: no spans, and the row says so.
  s.back_to_back = false;
  s.cold = false;
  CountingTarget single(10e-6);
  const BenchRow one = measure(single, small_dequant(), s, nullptr);
  CHECK(single.spans.empty());
  CHECK(single.cold_runs == 0);
  CHECK(single.warm_runs == s.warmup + one.stats.samples);
  CHECK(one.runs_per_sample == 0);
  CHECK(timing_name(one) == "warm");
}

TEST_CASE("bench engine: the copies cold back-to-back runs take, and the CPU twin's back-to-back runs") {
  const size_t l2 = size_t{50} << 20;  // 52428800 bytes
  // The one-row GEMV at 4096x4096: 8.7 MB a run; 19 other copies move 3 x 50 MiB.
  CHECK(back_to_back_copies(8.7e6, l2) == 20);
  CHECK(back_to_back_copies(3.0 * 52428800, l2) == 2);  // one other copy moves it
  CHECK(back_to_back_copies(2e9, l2) == 2);             // at least 2
  CHECK(back_to_back_copies(1e3, l2) == kMostCopies);
  BenchRow r;
  r.runs_per_sample = 20;
  r.bytes = 8.7e6;
  r.copies = 20;
  CHECK(copies_fill_l2(r, l2));
  r.bytes = 1e3;
  r.copies = kMostCopies;
  CHECK_FALSE(copies_fill_l2(r, l2));

  // The CPU twin's back-to-back runs are its warm runs one after another; cold, it refuses with a sentence.
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  BenchSettings s;
  s.back_to_back = true;
  s.cold = true;
  s.min_seconds = 0;
  s.timeout_seconds = 1;
  CHECK(cold_back_to_back_on_cpu(s, "cpu"));
  CHECK_FALSE(cold_back_to_back_on_cpu(s, "cuda"));
  CHECK_THROWS_WITH_AS(run_bench(*cpu, {small_dequant()}, s),
                       "cold back-to-back runs take each their own copy of the buffers on a GPU, and this "
                       "run's backend is the CPU twin: time back to back warm (the CPU twin's runs one after "
                       "another), or cold without back to back",
                       Error);
  s.cold = false;
  CHECK_FALSE(cold_back_to_back_on_cpu(s, "cpu"));
  const std::vector<BenchRow> rows = run_bench(*cpu, {small_dequant()}, s);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].runs_per_sample >= 2);
  CHECK(rows[0].copies == 1);
  CHECK_FALSE(rows[0].cold);
  CHECK(rows[0].stats.median_s > 0);
  CHECK(timing_name(rows[0]) == "warm, back to back");
}

TEST_CASE("bench report: back-to-back rows in the JSON, the CSV, a saved run and a comparison") {
  BenchRow b = row("gemv/w4a16-ft-fp16", "M=1 4096x4096 g128", 6.5e-6, 0.01);
  b.backend = "cuda";
  b.runs_per_sample = 31;
  b.copies = 20;
  const BenchRow single = row("gemv/w4a16-ft-fp16", "M=1 4096x4096 g128", 9e-6, 0.01);
  const nlohmann::json j = report({b, single}, "H100");
  CHECK(j["rows"][0]["back_to_back"] == true);
  CHECK(j["rows"][0]["runs_per_sample"] == 31);
  CHECK(j["rows"][0]["copies"] == 20);
  CHECK(j["rows"][1]["back_to_back"] == false);
  CHECK_FALSE(j["rows"][1].contains("runs_per_sample"));
  const std::string csv = front::bench_csv({b, single});
  CHECK(csv.find(",cold,backend,launched,runs_per_sample,copies\n") != std::string::npos);
  CHECK(csv.find(",cold,cuda,\"\",31,20\n") != std::string::npos);
  CHECK(csv.find(",cold,cpu,\"\",0,1\n") != std::string::npos);

  const auto dir = std::filesystem::temp_directory_path() / "dql-test-back-to-back";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "b2b.json").string();
  front::write_report_file(path, j.dump());
  const front::SavedRun run = front::load_bench_run(path);
  REQUIRE(run.rows.size() == 2);
  CHECK(run.rows[0].runs_per_sample == 31);
  CHECK(run.rows[0].copies == 20);
  CHECK(run.rows[1].runs_per_sample == 0);
  CHECK(run.rows[1].copies == 1);
  nlohmann::json bad = j;
  bad["rows"][0]["runs_per_sample"] = 0;
  front::write_report_file(path, bad.dump());
  try {
    front::load_bench_run(path);
    FAIL("a back-to-back row of 0 runs a sample was read");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "'" + path +
              "' row 0: \"runs_per_sample\" is not a whole number from 1, as bench --json writes it");
  }
  std::filesystem::remove_all(dir);

  // A comparison marks the rows the two runs timed otherwise, and says how each did.
  const nlohmann::json a = report({single}, "A");
  const nlohmann::json bj = report({b}, "B");
  const front::Comparison c = front::compare_bench(a, bj);
  REQUIRE(c.rows.size() == 1);
  CHECK(c.rows[0].other_timing);
  CHECK(c.rows[0].timing_a == "cold");
  CHECK(c.rows[0].timing_b == "cold, back to back");
  CHECK_FALSE(front::compare_bench(bj, bj).rows[0].other_timing);
  BenchRow warm = single;
  warm.cold = false;
  CHECK(front::compare_bench(a, report({warm}, "W")).rows[0].other_timing);
}

TEST_CASE("parsing numbers: too long for 64 bits is out of range, not 'not a whole number'") {
  const auto sentence = [](const auto& parsed) { return std::get<std::string>(parsed); };
  CHECK(std::get<int64_t>(front::parse_int("12", "the step", 0, 20)) == 12);
  CHECK(sentence(front::parse_int("99999999999999999999", "the step", 0, 20)) ==
        "the step '99999999999999999999' is out of range: give a whole number from 0 to 20");
  CHECK(sentence(front::parse_int("21", "the step", 0, 20)) ==
        "the step '21' is out of range: give a whole number from 0 to 20");
  CHECK(sentence(front::parse_int("abc", "the step", 0, 20)) ==
        "the step 'abc' is not a whole number: give one from 0 to 20");
  CHECK(sentence(front::parse_int("", "the step", 0, 20)) ==
        "the step '' is not a whole number: give one from 0 to 20");
  CHECK(sentence(front::parse_int("3.5", "the step", 0, 20)) ==
        "the step '3.5' is not a whole number: give one from 0 to 20");
  CHECK(
      sentence(front::parse_int_list("1,99999999999999999999", "rows of X", 1, 256)) ==
      "rows of X '1,99999999999999999999': 99999999999999999999 is out of range; each number must be from 1 "
      "to 256");
  CHECK(sentence(front::parse_shape("99999999999999999999x4", "the shape")).find("too large for 64 bits") !=
        std::string::npos);
  CHECK(std::get<double>(front::parse_positive("0.25", "the timeout", 60)) == 0.25);
  for (const char* bad : {"0", "-1", "61", "inf"}) {
    CAPTURE(bad);
    CHECK(sentence(front::parse_positive(bad, "the timeout", 60))
              .find("is out of range: it must be above 0 "
                    "and at most 60") != std::string::npos);
  }
  for (const char* bad : {"abc", "nan", ""}) {
    CAPTURE(bad);
    CHECK(sentence(front::parse_positive(bad, "the timeout", 60)).find("is not a number") !=
          std::string::npos);
  }
}
