// The built program, run as a user runs it: JSON output, exit statuses, error sentences.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "npy_file.hpp"
#include "program.hpp"

namespace {

using dql::test::Run;

Run run(const std::string& args) { return dql::test::run_program(DQL_PROGRAM, args, DQL_TEST_TMPDIR); }

nlohmann::json run_json(const std::string& args) {
  const Run r = run(args);
  INFO("dequant-lab ", args, "\nstderr: ", r.err);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out);
}

std::vector<double> outputs(const std::string& recipe, const std::string& input) {
  const auto j = run_json("explain --recipe " + recipe + " --input " + input + " --json");
  CHECK(j["recipe"] == recipe);
  CHECK(j["outputs"] == j["expected"]);
  CHECK(j["match"] == true);
  return j["outputs"].get<std::vector<double>>();
}

// Bad input: status 2, nothing on stdout, one sentence on stderr.
std::string refused(const std::string& args) {
  const Run r = run(args);
  INFO("dequant-lab ", args);
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(!r.err.empty());
  CHECK(r.err.find('\n') == r.err.size() - 1);
  return r.err;
}

}  // namespace

TEST_CASE("explain: the documented results") {
  CHECK(outputs("awq-int4-fp16", "0x76543210") == std::vector<double>{0, 4, 1, 5, 2, 6, 3, 7});
  CHECK(outputs("ft-int4-fp16", "0x76543210") == std::vector<double>{-8, -4, -7, -3, -6, -2, -5, -1});
  CHECK(outputs("cutlass-int4-fp16", "0x76543210") == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(outputs("ft-uint8-fp16", "0x03020100") == std::vector<double>{-128, -126, -127, -125});
  CHECK(outputs("ft-uint8-bf16", "0x03020100") == std::vector<double>{-128, -126, -127, -125});
  CHECK(outputs("naive-int4-fp16", "0xF0000001") == std::vector<double>{1, 0, 0, 0, 0, 0, 0, -1});
}

TEST_CASE("explain --json: the steps as the trace has them") {
  const auto j = run_json("explain --recipe awq-int4-fp16 --input 7654_3210 --json");
  CHECK(j["input"] == "0x76543210");
  REQUIRE(j["steps"].size() == 10);
  CHECK(j["steps"][2]["op"] == "lop3.b32 h0, src, 0x000f000f, 0x64006400, 0xea");
  CHECK(j["steps"][2]["dst"] == "h0");
  CHECK(j["steps"][2]["value"] == "0x64046400");
  CHECK(j["steps"][9]["value"] == "0x47004200");
  const auto nf4 = run_json("explain --recipe nf4-fp16 --input 0x0000007F --absmax 2.5 --json");
  CHECK(nf4["absmax"] == 2.5);
  CHECK(nf4["outputs"][1] == 2.5);  // code 15 = 1.0, times absmax
  CHECK(nf4["outputs"][0] == 0.0);
}

TEST_CASE("explain: the human table") {
  const Run r = run("explain --recipe ft-uint8-fp16 --input 0x03020100");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("prmt.b32 h0, src, 0x64646464, 0x5250") != std::string::npos);
  CHECK(r.out.find("0110 0100 0000 0010 0110 0100 0000 0000") != std::string::npos);  // {1026, 1024}
  CHECK(r.out.find("0 11001 0000000010 = 1026") != std::string::npos);
  CHECK(r.out.find("0x64806480 = 1152 in both lanes (fp16x2)") != std::string::npos);
  CHECK(r.out.find("all 4 outputs equal the integer reference") != std::string::npos);
  CHECK(r.out.find("\x1b[") == std::string::npos);  // no colour when not on a terminal
}

TEST_CASE("lop3 and prmt commands") {
  const auto l = run_json("lop3 --expr \"(a & b) | c\" --json");
  CHECK(l["lut"] == 0xEA);
  CHECK(l["expr"] == "(a & b) | c");
  CHECK(l["table"] == nlohmann::json::array({0, 1, 0, 1, 0, 1, 1, 1}));
  const auto l2 = run_json("lop3 --lut 0x6A --a 0x00100001 --b 0xFFF0FF0F --c 0x64806408 --json");
  CHECK(l2["result"] == "0x64906409");
  CHECK(l2["expr"] == "(a & b) ^ c");
  const auto p = run_json("prmt --a 0x03020100 --b 0x07060504 --sel 0x7531 --json");
  CHECK(p["result"] == "0x07050301");
  const auto s = run_json("prmt --a 0x000000F0 --b 0 --sel 0x9180 --json");
  CHECK(s["result"] == "0x0000fff0");
  CHECK(s["bytes"][1]["sign_replicate"] == true);
  const auto m = run_json("prmt --a 0x03020100 --b 0x07060504 --sel 1 --mode f4e --json");
  CHECK(m["result"] == "0x04030201");
}

TEST_CASE("recipes lists every recipe, one line each") {
  const Run r = run("recipes");
  REQUIRE(r.status == 0);
  size_t lines = 0;
  for (char c : r.out) lines += c == '\n';
  CHECK(lines == 10);
  CHECK(r.out.find("awq-int4-fp16") == 0);
  CHECK(run_json("recipes --json").size() == 10);
}

TEST_CASE("bad input: status 2 and one sentence saying what is accepted") {
  CHECK(refused("explain --recipe awq --input 0x1").find("choose one of awq-int4-fp16") != std::string::npos);
  CHECK(refused("explain --recipe awq-int4-fp16 --input 0x12G4").find("not a hex digit") !=
        std::string::npos);
  CHECK(refused("explain --recipe awq-int4-fp16 --input 0x123456789").find("more than 8 hex digits") !=
        std::string::npos);
  CHECK(refused("explain --recipe awq-int4-fp16 --input 0x1 --absmax 2").find("nf4-fp16 only") !=
        std::string::npos);
  CHECK(refused("explain --recipe nf4-fp16 --input 0x1 --absmax -1").find(">= 0") != std::string::npos);
  CHECK(refused("lop3 --expr \"a & (b | d)\"").find("column 10") != std::string::npos);
  CHECK(refused("lop3 --lut 0x1FF").find("more than 2 hex digits") != std::string::npos);
  CHECK(refused("lop3").find("--expr") != std::string::npos);
  CHECK(refused("prmt --a 1 --b 2 --sel 0x10000").find("out of range") != std::string::npos);
  CHECK(refused("prmt --a 1 --b 2 --sel 4 --mode rc8").find("0 to 3") != std::string::npos);
  CHECK(refused("prmt --a 1 --b 2 --sel 4 --mode xyz").find("not a prmt mode") != std::string::npos);
  CHECK(run("explain --recipe awq-int4-fp16").status == 2);  // a required option is missing
  CHECK(run("--help").status == 0);
}

TEST_CASE("tour runs through to the reference check without pauses off a terminal") {
  const Run r = run("tour");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("0x6400 | 15 = 0x640f") != std::string::npos);
  CHECK(r.out.find("fma.rn.f16x2 h3, h3, 0x2c002c00, 0xd400d400") != std::string::npos);
  CHECK(r.out.find("all 8 outputs equal the integer reference") != std::string::npos);
}

namespace {

std::string tmp(const std::string& name) {
  const std::string p = std::string(DQL_TEST_TMPDIR) + "/cli-" + name;
  std::filesystem::remove_all(p);
  return p;
}

bool exists(const std::string& p) { return std::ifstream(p).good(); }

// `bench ARGS --json FILE` in a fresh folder named `name`: the run succeeds and its JSON report.
nlohmann::json bench_json(const std::string& name, const std::string& args) {
  const std::string d = tmp(name);
  std::filesystem::create_directories(d);
  const Run r = run("bench " + args + " --json " + d + "/report.json");
  INFO("dequant-lab bench ", args, "\nstderr: ", r.err);
  REQUIRE(r.status == 0);
  std::ifstream jf(d + "/report.json");
  return nlohmann::json::parse(jf);
}

}  // namespace

TEST_CASE("quant, dequant and permute on the CPU twin: files, statistics and round trips") {
  const std::string d = tmp("q4");
  const auto q =
      run_json("quant --scheme int4-sym --group 64 --random normal --seed 3 --shape 64x256 --out-dir " + d +
               " --backend cpu --json");
  CHECK(q["scheme"] == "int4-sym");
  CHECK(q["group"] == 64);
  CHECK(q["recipe"] == "cutlass-int4-fp16");
  CHECK(q["snr_db"].get<double>() > 15.0);
  CHECK(q["snr_db"].get<double>() < 25.0);
  CHECK(exists(d + "/qweight.npy"));
  CHECK(exists(d + "/scales.npy"));
  const Run deq = run("dequant --scheme int4-sym --dir " + d + " --out " + d +
                      "/w.npy --recipe naive-int4-fp16 --backend cpu");
  CHECK(deq.status == 0);
  CHECK(deq.out.find("dequantized 64x256 with naive-int4-fp16") != std::string::npos);
  CHECK(exists(d + "/w.npy"));

  const std::string f = tmp("ft");
  CHECK(run("quant --scheme int8-sym --layout ft --random outliers --shape 32x128 --out-dir " + f +
            " --backend cpu")
            .status == 0);
  CHECK(run("permute --bits 8 --inverse --in " + f + "/qweight.npy --out " + f + "/plain.npy --backend cpu")
            .status == 0);
  CHECK(run("permute --bits 8 --forward --in " + f + "/plain.npy --out " + f + "/again.npy --backend cpu")
            .status == 0);
  std::ifstream a(f + "/qweight.npy", std::ios::binary), b(f + "/again.npy", std::ios::binary);
  const std::string sa((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
  const std::string sb((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
  CHECK(!sa.empty());
  CHECK(sa == sb);

  const std::string n = tmp("nf4");
  const auto j = run_json("quant --scheme nf4 --blocksize 64 --random normal --shape 16x512 --out-dir " + n +
                          " --backend cpu --json");
  CHECK(j["recipe"] == "nf4-fp16");
  CHECK(exists(n + "/absmax.npy"));
  const std::string w = tmp("awq");
  CHECK(run("quant --scheme int4-asym --random uniform --shape 16x256 --out-dir " + w + " --backend cpu")
            .status == 0);
  CHECK(exists(w + "/zeros.npy"));
  CHECK(q["zeroed_groups"] == 0);

  // A group of weights too small for an fp16 scale (1e-7 / 7 rounds to fp16's zero) is said, not
  // silently zeroed; an empty plain matrix is refused by permute.
  const std::string z = tmp("tiny");
  std::filesystem::create_directories(z);
  const auto npy = [&](const std::string& name, const char* descr, const std::string& shape, const void* data,
                       size_t bytes) {
    dql::test::write_npy_text(z + "/" + name, descr, shape, data, bytes);
    return z + "/" + name;
  };
  std::vector<float> tiny(256, 0.5f);
  std::fill(tiny.begin(), tiny.begin() + 128, 1e-7f);
  const std::string tw = npy("w.npy", "<f4", "(2, 128)", tiny.data(), tiny.size() * 4);
  CHECK(run_json("quant --scheme int4-sym --in " + tw + " --out-dir " + z +
                 "/q --backend cpu --json")["zeroed_groups"] == 1);
  const Run note = run("quant --scheme int4-sym --in " + tw + " --out-dir " + z + "/q --backend cpu");
  CHECK(note.status == 0);
  CHECK(note.out.find("note: 1 group of nonzero weights too small for an fp16 scale") != std::string::npos);
  CHECK(refused("permute --bits 8 --forward --in " + npy("e.npy", "|i1", "(8, 0)", nullptr, 0) + " --out " +
                z + "/p.npy --backend cpu")
            .find("is empty") != std::string::npos);
  CHECK(!exists(z + "/p.npy"));
}

TEST_CASE("verify and device on the CPU twin") {
  const auto v = run_json("verify --recipe ft-uint8-fp16 --backend cpu --json");
  REQUIRE(v.size() == 1);
  CHECK(v[0]["mismatches"] == 0);
  CHECK(v[0]["exhaustive"] == false);
  const Run all = run("verify --recipe all --backend cpu");
  CHECK(all.status == 0);
  CHECK(all.out.find("checks a sample of 2^24 registers") != std::string::npos);
  CHECK(run_json("device --backend cpu --json")["backend"] == "cpu");
}

TEST_CASE("matrix commands: bad input is refused and nothing is written") {
  const std::string d = tmp("bad");
  CHECK(refused("quant --scheme int4-sym --group 128 --random normal --shape 8x200 --out-dir " + d +
                " --backend cpu")
            .find("does not divide by the group size 128") != std::string::npos);
  CHECK(!exists(d + "/qweight.npy"));
  CHECK(refused("quant --scheme int5 --random normal --shape 8x256 --out-dir " + d).find("not a scheme") !=
        std::string::npos);
  CHECK(refused("quant --scheme nf4 --group 64 --random normal --shape 8x256 --out-dir " + d)
            .find("--blocksize") != std::string::npos);
  CHECK(refused("quant --scheme int8-sym --random normal --shape 8by256 --out-dir " + d).find("NxK") !=
        std::string::npos);
  CHECK(refused("quant --scheme int8-sym --random gaussian --shape 8x256 --out-dir " + d)
            .find("normal, uniform or outliers") != std::string::npos);
  CHECK(refused("quant --scheme int8-sym --in /nonexistent/w.npy --out-dir " + d).find("cannot open") !=
        std::string::npos);
  CHECK(refused("quant --scheme int8-sym --out-dir " + d).find("give the weights") != std::string::npos);
  CHECK(refused("quant --scheme int4-sym --layout awq --random normal --shape 8x256 --out-dir " + d)
            .find("int4-asym") != std::string::npos);
  CHECK(refused("dequant --scheme int8-sym --dir /nonexistent --out " + d + "/w.npy").find("cannot open") !=
        std::string::npos);
  CHECK(
      refused("permute --bits 4 --forward --in /nonexistent.npy --out " + d + "/p.npy").find("cannot open") !=
      std::string::npos);
  CHECK(refused("permute --bits 6 --forward --in x.npy --out y.npy").find("use 4 or 8") != std::string::npos);
  CHECK(refused("permute --bits 4 --in x.npy --out y.npy").find("--forward") != std::string::npos);
  CHECK(refused("verify --recipe nope --backend cpu").find("or all") != std::string::npos);
  CHECK(refused("device --backend tpu").find("use auto, cuda or cpu") != std::string::npos);
  CHECK(!exists(d + "/w.npy"));
  // Numbers out of their range or of the wrong kind, options that do not go together, a folder for a file.
  CHECK(refused("quant --scheme int4-sym --group -7 --random normal --shape 8x256 --out-dir " + d)
            .find("--group -7 is not a group size") != std::string::npos);
  CHECK(refused("quant --scheme int4-sym --group abc --random normal --shape 8x256 --out-dir " + d)
            .find("--group takes a whole number") != std::string::npos);
  CHECK(refused("quant --scheme nf4 --blocksize 0 --random normal --shape 8x256 --out-dir " + d)
            .find("power of two from 32 to 4096") != std::string::npos);
  CHECK(refused("quant --scheme int4-sym --seed -1 --random normal --shape 8x256 --out-dir " + d)
            .find("not a whole number from 0 to 18446744073709551615") != std::string::npos);
  CHECK(
      refused("quant --scheme int4-sym --seed 18446744073709551616 --random normal --shape 8x256 --out-dir " +
              d)
          .find("not a whole number") != std::string::npos);
  CHECK(refused("quant --scheme int4-sym --random normal --shape 4294967296x4294967296 --out-dir " + d)
            .find("below 2^59") != std::string::npos);
  std::filesystem::create_directories(d);
  CHECK(refused("quant --scheme int4-sym --in " + d + " --out-dir " + d).find("is a folder") !=
        std::string::npos);
  CHECK(refused("tour --delay-ms -1").find("0 or more milliseconds") != std::string::npos);
  CHECK(refused("explain --recipe '' --input 0x1").find("--recipe: the value is empty") != std::string::npos);
  CHECK(refused("quant --scheme int8-sym --random normal --shape 8x256 --layout '' --out-dir " + d)
            .find("--layout: the value is empty") != std::string::npos);
  CHECK(!exists(d + "/qweight.npy"));
  // The wrong scheme for the files that are there.
  const std::string q = tmp("q8");
  CHECK(
      run("quant --scheme int8-sym --random normal --shape 8x256 --out-dir " + q + " --backend cpu").status ==
      0);
  CHECK(refused("dequant --scheme int4-sym --dir " + q + " --out " + q + "/w.npy --backend cpu")
            .find("uint8 [N, K / 2]") != std::string::npos);
  CHECK(refused("dequant --scheme int8-sym --dir " + q + " --out " + q +
                "/w.npy --recipe awq-int4-fp16 --backend cpu")
            .find("does not read this format") != std::string::npos);
  // int8-sym is per channel by default: --group 0 is what those files hold.
  CHECK(run("dequant --scheme int8-sym --group 0 --dir " + q + " --out " + q + "/w0.npy --backend cpu")
            .status == 0);
  const std::string q4 = tmp("q4");
  CHECK(run("quant --scheme int4-sym --random normal --shape 8x256 --out-dir " + q4 + " --backend cpu")
            .status == 0);
  CHECK(refused("dequant --scheme int4-sym --group 0 --dir " + q4 + " --out " + q4 + "/w.npy --backend cpu")
            .find("holds groups of 128") != std::string::npos);
  CHECK(refused("quant --scheme int4-sym --in " + q4 + "/qweight.npy --shape 8x256 --out-dir " + q4)
            .find("go with --random") != std::string::npos);
  // Plain files read as the mixed-GEMM layout disagree in size: the sentence asks after the format.
  CHECK(refused("dequant --scheme int4-sym --layout ft --dir " + q4 + " --out " + q4 + "/w.npy --backend cpu")
            .find("written with another --scheme or --layout") != std::string::npos);
  {
    std::ofstream f(q4 + "/none.safetensors", std::ios::binary);
    const uint64_t len = 2;
    f.write(reinterpret_cast<const char*>(&len), 8);
    f << "{}";
  }
  CHECK(refused("quant --scheme int4-sym --in " + q4 + "/none.safetensors --out-dir " + q4)
            .find("holds no tensors") != std::string::npos);
  CHECK(!exists(q + "/w.npy"));
  CHECK(!exists(q4 + "/w.npy"));
}

TEST_CASE("dequant: scales or absmax that are not finite (or absmax below 0) are refused, naming the file") {
  // int4-sym 8x256 in groups of 128: scales.npy is float16 [8, 2]; NF4 16x512 in blocks of 64: absmax.npy
  // is float32 [16, 8]. Each is rewritten with bad values and dequant must name the first one.
  const std::string q = tmp("badscales"), n = tmp("badabsmax");
  REQUIRE(
      run("quant --scheme int4-sym --random normal --shape 8x256 --out-dir " + q + " --backend cpu").status ==
      0);
  REQUIRE(run("quant --scheme nf4 --blocksize 64 --random normal --shape 16x512 --out-dir " + n +
              " --backend cpu")
              .status == 0);
  const auto scales = [&](std::vector<uint16_t> v) {
    dql::test::write_npy_text(q + "/scales.npy", "<f2", "(8, 2)", v.data(), v.size() * 2);
  };
  const auto absmax = [&](std::vector<float> v) {
    dql::test::write_npy_text(n + "/absmax.npy", "<f4", "(16, 8)", v.data(), v.size() * 4);
  };
  const std::string deq_q = "dequant --scheme int4-sym --dir " + q + " --out " + q + "/w.npy --backend cpu";
  const std::string deq_n = "dequant --scheme nf4 --dir " + n + " --out " + n + "/w.npy --backend cpu";

  std::vector<uint16_t> s(16, 0x2C00);  // 0.0625
  s[3] = 0x7E00;                        // NaN
  s[9] = 0x7C00;                        // inf, later: the first is named
  scales(s);
  CHECK(
      refused(deq_q).find("scales.npy' holds NaN at index 3 (row 1, column 1 of its 8x2 values): scales must "
                          "be finite fp16 values") != std::string::npos);
  s[3] = 0x2C00;
  s[9] = 0xFC00;  // -inf
  scales(s);
  CHECK(refused(deq_q).find("holds -inf at index 9 (row 4, column 1") != std::string::npos);
  CHECK(!exists(q + "/w.npy"));
  // A zero scale (a group of zeros, or one too small for fp16) and a negative one are finite: read.
  s[9] = 0x0000;
  s[10] = 0xAC00;
  scales(s);
  CHECK(run(deq_q).status == 0);

  std::vector<float> a(128, 1.5f);
  a[5] = -0.25f;
  a[7] = std::numeric_limits<float>::quiet_NaN();
  absmax(a);
  CHECK(refused(deq_n).find("absmax.npy' holds -0.25 at index 5 (row 0, column 5 of its 16x8 values): NF4 "
                            "absmax values must be finite and 0 or more") != std::string::npos);
  a[5] = 1.5f;
  absmax(a);
  CHECK(refused(deq_n).find("holds NaN at index 7 (row 0, column 7") != std::string::npos);
  a[7] = std::numeric_limits<float>::infinity();
  absmax(a);
  CHECK(refused(deq_n).find("holds inf at index 7") != std::string::npos);
  CHECK(!exists(n + "/w.npy"));
  // 0 and -0 are absmax values of a block of zeros: read.
  a[7] = 0.0f;
  a[8] = -0.0f;
  absmax(a);
  CHECK(run(deq_n).status == 0);
}

TEST_CASE("bench on the CPU twin: the table, JSON and CSV rows, and comparing two runs") {
  const std::string d = tmp("bench");
  std::filesystem::create_directories(d);
  const Run r =
      run("bench --backend cpu --warm --shape 64x128 --kernel 'dequant/*int4-fp16' --timeout 0.3 --json " +
          d + "/a.json --csv " + d + "/a.csv");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("CPU time on") != std::string::npos);
  CHECK(r.out.find("dequant/cutlass-int4-fp16") != std::string::npos);
  std::ifstream jf(d + "/a.json");
  const nlohmann::json j = nlohmann::json::parse(jf);
  REQUIRE(j["rows"].size() == 4);  // awq, ft, cutlass and naive int4 -> fp16
  for (const auto& row : j["rows"]) {
    for (const char* key : {"kernel", "shape", "samples", "median_us", "noise", "gbps", "pct_of_copy"})
      CHECK(row.contains(key));
    CHECK(row["median_us"].get<double>() > 0);
    CHECK(row["samples"].get<int>() >= 25);
    CHECK(row["backend"] == "cpu");
    CHECK(row["launches"] == nlohmann::json::array());  // the CPU twin launches no kernels
  }
  CHECK(j["rows"][0]["baseline"] == "naive-int4-fp16");
  CHECK(j["device"]["backend"] == "cpu");
  std::ifstream cf(d + "/a.csv");
  std::string header;
  std::getline(cf, header);
  CHECK(header.rfind("kernel,shape,samples,median_us,noise", 0) == 0);
  CHECK(header.find(",backend,launched") != std::string::npos);
  // --launches lists each row's under the table: none on the CPU twin, and it says so.
  const Run listed = run(
      "bench --backend cpu --warm --shape 64x256 --kernel 'dequant/ft-int4-fp16' --timeout 0.1 --launches");
  REQUIRE(listed.status == 0);
  CHECK(listed.out.find("what each row launched") != std::string::npos);
  CHECK(listed.out.find("dequant/ft-int4-fp16 64x256 g128\n  the CPU twin (no kernels)\n") !=
        std::string::npos);
  const Run same = run("bench --compare " + d + "/a.json " + d + "/a.json");
  REQUIRE(same.status == 0);
  CHECK(same.out.find("SAME") != std::string::npos);
  CHECK(same.out.find("FASTER") == std::string::npos);
  CHECK(refused("bench --compare " + d + "/a.json /nonexistent.json").find("cannot open") !=
        std::string::npos);
  CHECK(refused("bench --backend cpu --kernel 'conv/*'").find("matches no kernel") != std::string::npos);
  CHECK(refused("bench --backend cpu --shape 64x100 --kernel 'permute/*'").find("multiple of 64") !=
        std::string::npos);
  CHECK(refused("bench --backend cpu --group 48").find("use 32, 64 or 128") != std::string::npos);
  CHECK(refused("bench --backend cpu --shape 4096").find("NxK") != std::string::npos);
  // Options of a run beside --compare, files the run could not write (said before any timing), and a
  // shape whose byte counts would wrap.
  CHECK(refused("bench --compare " + d + "/a.json " + d + "/a.json --shape 7x7").find("leave out --shape") !=
        std::string::npos);
  CHECK(refused("bench --backend cpu --shape 64x128 --json /nonexistent/a.json").find("does not exist") !=
        std::string::npos);
  CHECK(refused("bench --backend cpu --shape 64x128 --csv " + d).find("is a folder") != std::string::npos);
  CHECK(refused("bench --backend cpu --kernel 'permute/int8-fwd' --shape 4294967296x4294967296")
            .find("below 2^59") != std::string::npos);
  CHECK(refused("bench --backend cpu --timeout abc").find("--timeout takes a number") != std::string::npos);
}

TEST_CASE("bench --show: a saved run printed as its run printed it, a GPU's from any machine") {
  const std::string d = tmp("bench-show");
  std::filesystem::create_directories(d);
  // The CPU twin's run and its file shown again: the same table, line for line.
  const Run live =
      run("bench --backend cpu --warm --shape 64x128 --kernel 'dequant/*int4-fp16' --timeout 0.2 "
          "--launches --json " +
          d + "/cpu.json");
  REQUIRE(live.status == 0);
  const Run again = run("bench --show " + d + "/cpu.json --launches");
  INFO(again.err);
  REQUIRE(again.status == 0);
  const auto from_table = [](const std::string& out) {
    return out.substr(out.find("median of the samples"));
  };
  CHECK(from_table(again.out) == from_table(live.out));
  CHECK(again.out.rfind("a saved run: " + d + "/cpu.json\nCPU twin: ", 0) == 0);
  // A GPU's run, as bench --json writes it there: the device, the figures and the launches.
  const nlohmann::json gpu = {{"device",
                               {{"backend", "cuda"},
                                {"name", "NVIDIA H200"},
                                {"compute_capability", "9.0"},
                                {"sms", 132},
                                {"l2_bytes", 62914560},
                                {"memory_bytes", 150109880320},
                                {"copy_gbps", 4287.0},
                                {"sm_clock_mhz", 1980},
                                {"memory_clock_mhz", 3201},
                                {"throttle", ""},
                                {"driver", "580.159.04"}}},
                              {"rows",
                               {{{"kernel", "gemv/w4a16-ft-fp16"},
                                 {"shape", "M=1 28672x8192 g128"},
                                 {"samples", 1000},
                                 {"median_us", 33.7},
                                 {"noise", 0.0332},
                                 {"gbps", 3596.4},
                                 {"pct_of_copy", 83.9},
                                 {"bytes", 121184256.0},
                                 {"cold", true},
                                 {"timed_out", false},
                                 {"backend", "cuda"},
                                 {"speedup", 3.34},
                                 {"baseline", "gemv/cublas-fp16"},
                                 {"launches",
                                  {{{"kernel", "ft_lane_kernel<fp16, false, 32, false, false, true, false>"},
                                    {"signature",
                                     "void dql::cuda::(anonymous "
                                     "namespace)::ft_lane_kernel<(dql::recipes::OutType)0, false, 32, false, "
                                     "false, true, false>(dql::cuda::GemvArgs)"},
                                    {"grid", {131, 1, 1}},
                                    {"block", {1024, 1, 1}},
                                    {"shared_bytes", 112640}}}}}}}};
  std::ofstream(d + "/h200.json") << gpu.dump(2);
  const Run shown = run("bench --show " + d + "/h200.json --launches --csv " + d + "/h200.csv");
  INFO(shown.err);
  REQUIRE(shown.status == 0);
  CHECK(shown.out.find("NVIDIA H200, compute capability 9.0, 132 SMs, 140 GiB, driver 580.159.04\n") !=
        std::string::npos);
  CHECK(shown.out.find("L2 60 MiB, device-to-device copy 4287 GB/s (read + write, measured in that run)\n") !=
        std::string::npos);
  CHECK(shown.out.find("clocks then: SM 1980 MHz, memory 3201 MHz\n") != std::string::npos);
  CHECK(shown.out.find("gemv/w4a16-ft-fp16         M=1 28672x8192 g128     1000     33.70 us   3.32%    "
                       "3596.4   83.9%     3.34x\n") != std::string::npos);
  CHECK(
      shown.out.find("\n  ft_lane_kernel<fp16, false, 32, false, false, true, false>: grid 131, block 1024, "
                     "110 KiB shared\n") != std::string::npos);
  std::ifstream cf(d + "/h200.csv");
  std::string header, line;
  std::getline(cf, header);
  std::getline(cf, line);
  CHECK(line.rfind("gemv/w4a16-ft-fp16,M=1 28672x8192 g128,1000,33.7000,", 0) == 0);
  CHECK(line.find(",\"ft_lane_kernel<fp16, false, 32, false, false, true, false>\"") != std::string::npos);
  // Refused with a sentence: options of a run, a file that is not a run, a row whose key has another type.
  CHECK(refused("bench --show " + d + "/h200.json --shape 64x64").find("leave out --shape") !=
        std::string::npos);
  CHECK(refused("bench --show " + d + "/h200.json --compare a b").find("leave out --compare") !=
        std::string::npos);
  CHECK(refused("bench --show /nonexistent.json").find("cannot open") != std::string::npos);
  nlohmann::json bad = gpu;
  bad["rows"][0]["samples"] = "many";
  std::ofstream(d + "/bad.json") << bad.dump();
  CHECK(refused("bench --show " + d + "/bad.json").find("row 0: \"samples\" is not a number") !=
        std::string::npos);
}

TEST_CASE("bench --show: the H200 runs in docs/runs read as the README quotes them") {
  const std::string runs = DQL_DOCS_RUNS;
  const Run gemv = run("bench --show " + runs + "/h200-2026-12-06-gemv.json --launches");
  INFO(gemv.err);
  REQUIRE(gemv.status == 0);
  CHECK(gemv.out.find("NVIDIA H200, compute capability 9.0, 132 SMs") != std::string::npos);
  CHECK(gemv.out.find("gemv/w4a16-ft-fp16         M=1 28672x8192 g128     1000     33.70 us") !=
        std::string::npos);
  CHECK(gemv.out.find("83.9%     3.34x\n") != std::string::npos);
  CHECK(gemv.out.find("ft_lane_kernel<fp16, false, 32, false, false, true, false>: grid 131, block 1024") !=
        std::string::npos);
  CHECK(gemv.out.find("nothing listed") == std::string::npos);  // every row of a GPU's run lists its launches
  const Run dequant = run("bench --show " + runs + "/h200-2026-12-06-dequant.json");
  REQUIRE(dequant.status == 0);
  CHECK(dequant.out.find("dequant/awq-int4-fp16      8192x8192 g128          1000     43.94 us") !=
        std::string::npos);
  CHECK(dequant.out.find("89.8%") != std::string::npos);
}

TEST_CASE("bench --compare: the H100's and the H200's shipped runs, as the README reads them") {
  // The bandwidth-bound rows run faster on the H200's faster memory; the naive dequant's, bound by the SMs'
  // issue (the same 132 SMs at the same clock), the same on both.
  const std::string runs = DQL_DOCS_RUNS;
  const Run c =
      run("bench --compare " + runs + "/h100-2026-12-07-gemv.json " + runs + "/h200-2026-12-06-gemv.json");
  INFO(c.err);
  REQUIRE(c.status == 0);
  CHECK(c.out.rfind("A: NVIDIA H100 80GB HBM3\nB: NVIDIA H200\n", 0) == 0);
  CHECK(c.out.find("gemv/cublas-fp16           M=1 28672x8192            153.95 us    112.67 us   1.366x    "
                   "1.4%  FASTER") != std::string::npos);
  CHECK(c.out.find("gemv/w4a16-ft-fp16         M=1 28672x8192 g128        44.53 us     33.70 us   1.321x    "
                   "5.7%  FASTER") != std::string::npos);
  CHECK(c.out.find("gemv/w4a16-ft-naive-fp16   M=1 28672x8192 g128        74.27 us     74.02 us   1.003x    "
                   "0.8%  SAME") != std::string::npos);
  CHECK(c.out.find("*") == std::string::npos);  // both GPUs ran the same kernels in every row
  CHECK(c.out.find("copy bandwidth: A 3054 GB/s, B 4287 GB/s (1.404x): a row bound by memory bandwidth on "
                   "both would show about that A/B\n") != std::string::npos);
  const Run h100 = run("bench --show " + runs + "/h100-2026-12-07-dequant.json");
  REQUIRE(h100.status == 0);
  CHECK(h100.out.find("NVIDIA H100 80GB HBM3, compute capability 9.0, 132 SMs") != std::string::npos);
}

TEST_CASE(
    "bench --back-to-back: spans of runs, their count in the table and files, cold on the CPU refused") {
  const std::string d = tmp("bench-b2b");
  std::filesystem::create_directories(d);
  const Run r =
      run("bench --backend cpu --warm --back-to-back --shape 64x128 --kernel 'dequant/awq-int4-fp16' "
          "--timeout 0.3 "
          "--json " +
          d + "/b2b.json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("a sample times runs queued back to back, as one span over its runs (the row's \"runs\"), "
                   "the same buffers every run, L2 warm") != std::string::npos);
  std::ifstream jf(d + "/b2b.json");
  const nlohmann::json j = nlohmann::json::parse(jf);
  REQUIRE(j["rows"].size() == 1);
  CHECK(j["rows"][0]["back_to_back"] == true);
  CHECK(j["rows"][0]["cold"] == false);
  CHECK(j["rows"][0]["copies"] == 1);
  const int runs = j["rows"][0]["runs_per_sample"].get<int>();
  CHECK(runs >= 2);
  CHECK(r.out.find("  runs " + std::to_string(runs) + "\n") != std::string::npos);
  // The saved run prints as the run did; against a run a sample at a time, the row is marked.
  const Run shown = run("bench --show " + d + "/b2b.json");
  REQUIRE(shown.status == 0);
  CHECK(shown.out.find("  runs " + std::to_string(runs) + "\n") != std::string::npos);
  REQUIRE(run("bench --backend cpu --warm --shape 64x128 --kernel 'dequant/awq-int4-fp16' --timeout 0.1 "
              "--json " +
              d + "/one.json")
              .status == 0);
  const Run cmp = run("bench --compare " + d + "/one.json " + d + "/b2b.json");
  REQUIRE(cmp.status == 0);
  CHECK(cmp.out.find("+: A and B timed the row otherwise, so the ratio is not the kernels' alone:\n   "
                     "dequant/awq-int4-fp16 64x128 per-ch: A warm, B warm, back to back\n") !=
        std::string::npos);
  CHECK(refused("bench --backend cpu --back-to-back --shape 64x128 --kernel 'dequant/awq-int4-fp16'")
            .find("--back-to-back with --cold takes each run on its own copy of the buffers on a GPU, and "
                  "this run's "
                  "backend is the CPU twin: add --warm (its runs one after another) or leave out "
                  "--back-to-back") != std::string::npos);
}

TEST_CASE("bench --batch: the GEMV rows at the rows of X asked for, and a clear refusal") {
  const nlohmann::json j = bench_json(
      "bench-batch",
      "--backend cpu --warm --shape 64x512 --kernel 'ge*/w4a16-ft-fp16' --batch 3,40 --timeout 0.05");
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["rows"][0]["kernel"] == "gemv/w4a16-ft-fp16");
  CHECK(j["rows"][0]["shape"].get<std::string>().rfind("M=3 64x512", 0) == 0);
  CHECK(j["rows"][1]["kernel"] == "gemm/w4a16-ft-fp16");  // beyond 16 rows: the GEMM
  CHECK(j["rows"][1]["shape"].get<std::string>().rfind("M=40 64x512", 0) == 0);
  const std::string zero = refused("bench --backend cpu --shape 64x512 --batch 0");
  CHECK(zero.find("--batch '0': 0 is out of range") != std::string::npos);
  CHECK(zero.find("from 1 to 256") != std::string::npos);
  CHECK(refused("bench --backend cpu --shape 64x512 --batch 1,,4").find("is not a whole number") !=
        std::string::npos);
  CHECK(refused("bench --backend cpu --batch 1,300").find("300 is out of range") != std::string::npos);
  // --gemm-rows: the Hopper GEMM's block size, refused where it cannot apply.
  CHECK(refused("bench --backend cpu --shape 64x512 --kernel 'gemm/w4a16-ft*' --batch 72 --gemm-rows 100")
            .find("--gemm-rows 100 is not supported: use a multiple of 16 from 48 to 256") !=
        std::string::npos);
  CHECK(refused("bench --backend cpu --shape 64x512 --kernel 'gemm/w4a16-ft*' --batch 72 --gemm-rows 272")
            .find("is not supported") != std::string::npos);
  CHECK(refused("bench --backend cpu --shape 64x512 --batch 3 --gemm-rows 64").find("none is selected") !=
        std::string::npos);
  // 64 channels: not whole 128-channel tiles, so the GEMV forms take these rows and no block size applies.
  CHECK(refused("bench --backend cpu --shape 64x512 --kernel 'gemm/w4a16-ft*' --batch 72 --gemm-rows 64")
            .find("none is selected") != std::string::npos);
  const std::string cpu =
      refused("bench --backend cpu --shape 128x512 --kernel 'gemm/w4a16-ft*' --batch 72 --gemm-rows 64");
  CHECK(cpu.find("compute capability 9.0 GPUs; this run's backend is cpu") != std::string::npos);
  // 33-64 rows: the Hopper GEMM takes large matrices only (gemv::hopper_takes), and the sentence says so.
  const std::string small_gemm =
      refused("bench --backend cpu --shape 4096x4096 --kernel 'gemm/w4a16-ft*' --batch 40 --gemm-rows 64");
  CHECK(small_gemm.find("none is selected") != std::string::npos);
  CHECK(small_gemm.find("from 65 rows of X, and from 33 where N is at least 8192, or at least 4096 with K at "
                        "least 8192") != std::string::npos);
  CHECK(refused("bench --backend cpu --shape 8192x2048 --kernel 'gemm/w4a16-ft*' --batch 40 --gemm-rows 64")
            .find("compute capability 9.0 GPUs; this run's backend is cpu") != std::string::npos);
  // --ring: the walk's cases a second time on the ring, refused where no case is the walk's or the
  // backend has neither.
  const std::string small =
      refused("bench --backend cpu --shape 64x512 --kernel 'gemv/w4a16-ft*' --batch 16 --ring");
  CHECK(small.find("--ring applies to the w4a16-ft cases the walk runs") != std::string::npos);
  CHECK(small.find("none is selected") != std::string::npos);
  CHECK(refused("bench --backend cpu --shape 4096x4096 --kernel 'gemv/w4a16-ft*' --batch 1 --ring")
            .find("none is selected") != std::string::npos);
  CHECK(refused("bench --backend cpu --shape 4096x4096 --kernel 'gemv/cublas*' --batch 16 --ring")
            .find("none is selected") != std::string::npos);
  CHECK(refused("bench --backend cpu --shape 4096x4096 --kernel 'gemv/w4a16-ft-fp16' --batch 16 --ring")
            .find("run on compute capability 9.0 GPUs; this run's backend is cpu") != std::string::npos);
  // From 17 to 32 rows (the gemm/ names) the walk's two token tiles: the ring applies, and only the backend
  // is refused; from 33 it does not.
  CHECK(refused("bench --backend cpu --shape 4096x4096 --kernel 'gemm/w4a16-ft-fp16' --batch 17,32 --ring")
            .find("run on compute capability 9.0 GPUs; this run's backend is cpu") != std::string::npos);
  CHECK(refused("bench --backend cpu --shape 4096x4096 --kernel 'gemm/w4a16-ft-fp16' --batch 33 --ring")
            .find("none is selected") != std::string::npos);
}

TEST_CASE("bench --dtype: bf16 GEMV rows beside fp16, each over its own cuBLAS, and a clear refusal") {
  const nlohmann::json j = bench_json(
      "bench-dtype",
      "--backend cpu --warm --shape 64x512 --kernel 'gemv/*' --batch 2 --dtype fp16,bf16 --timeout 0.05");
  std::vector<std::string> fp16, bf16;
  for (const nlohmann::json& row : j["rows"]) {
    const std::string k = row["kernel"];
    (k.ends_with("-bf16") ? bf16 : fp16).push_back(k);
    // Every row but the baselines carries its speed-up over cuBLAS of the same type.
    if (k.find("cublas") == std::string::npos) {
      CHECK(row.contains("speedup"));
      CHECK(row["baseline"] == (k.ends_with("-bf16") ? "gemv/cublas-bf16" : "gemv/cublas-fp16"));
    }
  }
  // bf16 X: cuBLAS and the mixed-GEMM layout's int4 and int8 kernels; fp16 adds AWQ, NF4 and online.
  CHECK(bf16 == std::vector<std::string>{"gemv/cublas-bf16", "gemv/w4a16-ft-bf16", "gemv/w4a16-ft-naive-bf16",
                                         "gemv/w8a16-ft-bf16", "gemv/w8a16-ft-naive-bf16"});
  CHECK(fp16.size() == 8);
  CHECK(refused("bench --backend cpu --dtype fp32")
            .find("'fp32' is not supported: use fp16, bf16 or fp16,bf16") != std::string::npos);
  CHECK(refused("bench --backend cpu --dtype bf16,bf16").find("names bf16 twice") != std::string::npos);
  CHECK(refused("bench --backend cpu --dtype bf16 --kernel 'gemv/w4a16-awq*'").find("matches no kernel") !=
        std::string::npos);
}
