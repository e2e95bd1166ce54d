// The built program, run as a user runs it: JSON output, exit statuses, error sentences.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct Run {
  int status;
  std::string out;
  std::string err;
};

Run run(const std::string& args) {
  const std::string err_file = std::string(DQL_TEST_TMPDIR) + "/cli_stderr.txt";
  const std::string cmd = std::string("'") + DQL_PROGRAM + "' " + args + " 2>'" + err_file + "'";
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
