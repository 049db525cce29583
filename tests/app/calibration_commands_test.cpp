// CLI tests of `kvsim validate`, `kvsim calibrate` and `kvsim size --recompute` (the built binary).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "tests/app/cli_runner.h"

namespace kvsim::testing {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = std::string(::testing::TempDir()) + name;
  std::ofstream(path) << text;
  return path;
}

const char* kHeader = "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms\n";

TEST(ValidateCommand, RunsTheCommittedPointsAndPrintsTheSummary) {
  const CliResult r = run_kvsim("validate models/latency/validation.csv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("TTFT median"), std::string::npos);
  EXPECT_NE(r.out.find("\ndense "), std::string::npos);
  EXPECT_NE(r.out.find("\nall "), std::string::npos);
}

TEST(ValidateCommand, TheFilesProtocolLineSetsTheRequestCountsAndTheCommandLineWins) {
  const std::string p = write_temp("v_protocol.csv",
                                   "# measured with aiperf\n"
                                   "# protocol: warmup_per_slot=0 requests_per_slot=3 client=aiperf\n" +
                                       std::string(kHeader) + "models/qwen3-8b.json,h100-sxm,1,128,16,2,10,5\n");
  const CliResult r = run_kvsim("validate " + p);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("0 + 3 x concurrency requests per point (warm-up excluded; protocol of the file: aiperf)"),
            std::string::npos)
      << r.out;
  const CliResult o = run_kvsim("validate --warmup-per-slot 1 " + p);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("1 + 3 x concurrency"), std::string::npos) << o.out;
  const CliResult d =
      run_kvsim("validate " + write_temp("v_noprotocol.csv",
                                         std::string(kHeader) + "models/qwen3-8b.json,h100-sxm,1,128,16,2,10,5\n"));
  ASSERT_EQ(d.exit_code, 0) << d.out;
  EXPECT_NE(d.out.find("2 + 10 x concurrency requests per point (warm-up excluded; command-line / default protocol)"),
            std::string::npos)
      << d.out;
}

// The CSV reader skips a comment after leading blanks; the protocol line so placed is still the directive
// (it used to be taken for a comment, and the run fell back to the default protocol without a word).
// Another spelling of the word is refused, not skipped.
TEST(ValidateCommand, AnIndentedProtocolLineIsTheDirectiveAndAMisspeltOneIsRefused) {
  const std::string point = std::string(kHeader) + "models/qwen3-8b.json,h100-sxm,1,128,16,2,10,5\n";
  const CliResult r = run_kvsim(
      "validate " + write_temp("v_indented.csv", "  # protocol: warmup_per_slot=0 requests_per_slot=3\n" + point));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("0 + 3 x concurrency requests per point"), std::string::npos) << r.out;
  const CliResult bad =
      run_kvsim("validate " + write_temp("v_indented_bad.csv", " # protocol: warmup_per_slot=0 bogus_key=1\n" + point));
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("v_indented_bad.csv:1: unknown protocol key 'bogus_key'"), std::string::npos) << bad.out;
  for (const char* word : {"Protocol", "protocols", "PROTOCOL"}) {
    const CliResult w =
        run_kvsim("validate " + write_temp("v_word.csv", std::string("# ") + word +
                                                             ": warmup_per_slot=0 requests_per_slot=3\n" + point));
    EXPECT_EQ(w.exit_code, 2) << word << ": " << w.out;
    EXPECT_NE(w.out.find("v_word.csv:1: '" + std::string(word) +
                         ":' is read as the protocol directive; write it "
                         "'# protocol:'"),
              std::string::npos)
        << w.out;
  }
}

// The model cell reaches the point's scenario as a YAML string: a backslash or a quote in a real path
// stays itself (pasted between double quotes, "dir\name" became a newline and '"' ended the string).
TEST(ValidateCommand, AModelPathWithBackslashesAndQuotesIsReadAsWritten) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "odd\\dir 'q' \"dq\"";
  fs::create_directories(dir);
  fs::copy_file(fs::path(KVSIM_SOURCE_DIR) / "models/qwen3-8b.json", dir / "m.json",
                fs::copy_options::overwrite_existing);
  // The CSV quotes the cell (it holds a double quote, doubled inside).
  std::string cell = (dir / "m.json").string(), quoted = "\"";
  for (char c : cell) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  quoted += "\"";
  const CliResult r = run_kvsim(
      "validate " + write_temp("v_odd_path.csv", "# protocol: warmup_per_slot=0 requests_per_slot=1\n" +
                                                     std::string(kHeader) + quoted + ",h100-sxm,1,128,16,1,10,5\n"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // A path that does not exist is not read as another one (\x2e was the YAML escape of '.').
  const CliResult missing =
      run_kvsim("validate " + write_temp("v_escape.csv", std::string(kHeader) + "models/qwen3-8b\\x2ejson,h100-sxm,1,"
                                                                                "128,16,1,10,5\n"));
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(missing.out.find("qwen3-8b\\x2ejson"), std::string::npos) << missing.out;
}

// isl + osl beyond the model's context: the engine would cap the output (its TPOT would be of fewer than
// osl tokens), so the point is excluded and reported, like one whose prompt is too long; 40,960 exactly runs.
TEST(ValidateCommand, APointLongerThanTheContextIsExcludedAndReported) {
  // Qwen3-8B: max_position_embeddings 40,960 (config.json).
  const std::string over =
      write_temp("v_long.csv", "# protocol: warmup_per_slot=0 requests_per_slot=1\n" + std::string(kHeader) +
                                   "models/qwen3-8b.json,h100-sxm,1,40000,961,1,10,5\n"
                                   "models/qwen3-8b.json,h100-sxm,1,40000,960,1,10,5\n");
  const CliResult r = run_kvsim("validate " + over);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("excluded: isl + osl exceed max_model_len 40960 (the output would be capped)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("excluded 1 point(s) whose isl + osl exceed max_model_len, lines 3\n"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("excluded: no request finished"), std::string::npos) << r.out;  // line 4 ran
}

// The simulated TTFT of the point on file line 3 (columns: line model gpu engine tp isl osl conc ttft_ms pred
// err% tpot_ms pred err%), and its simulated TPOT.
std::pair<double, double> predicted_ttft_tpot(const std::string& out) {
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string first;
    f >> first;
    if (first != "3") continue;
    std::string w[13];
    for (auto& x : w) f >> x;
    return {std::stod(w[8]), std::stod(w[11])};
  }
  ADD_FAILURE() << "no row for line 3 in: " << out;
  return {0, 0};
}

// client_ttft_ms (protocol line or --client-ttft-ms) adds that much to every simulated TTFT and leaves TPOT
// alone: the same point under 0 and 11.6 differs by 11.6 ms in TTFT (printed to 0.1 ms) and not at all in TPOT.
TEST(ValidateCommand, ClientTtftIsAddedToTheSimulatedTtftAndTheCommandLineWins) {
  const std::string point = std::string(kHeader) + "models/qwen3-8b.json,h100-sxm,1,128,16,2,10,5\n";
  const std::string plain = write_temp("v_client0.csv", "# protocol: warmup_per_slot=0 requests_per_slot=3\n" + point);
  const std::string with =
      write_temp("v_client.csv", "# protocol: warmup_per_slot=0 requests_per_slot=3 client_ttft_ms=11.6\n" + point);
  const CliResult a = run_kvsim("validate " + plain);
  const CliResult b = run_kvsim("validate " + with);
  const CliResult c = run_kvsim("validate --client-ttft-ms 0 " + with);
  ASSERT_EQ(a.exit_code, 0) << a.out;
  ASSERT_EQ(b.exit_code, 0) << b.out;
  ASSERT_EQ(c.exit_code, 0) << c.out;
  const auto [ttft0, tpot0] = predicted_ttft_tpot(a.out);
  const auto [ttft1, tpot1] = predicted_ttft_tpot(b.out);
  EXPECT_NEAR(ttft1 - ttft0, 11.6, 0.1 + 1e-9);
  EXPECT_EQ(tpot1, tpot0);
  EXPECT_NE(b.out.find("client TTFT overhead 11.6 ms"), std::string::npos) << b.out;
  EXPECT_EQ(predicted_ttft_tpot(c.out).first, ttft0);  // the command line's 0 wins over the file's 11.6
  // A non-zero value on the command line wins too, and applies to a file without the key.
  const CliResult d = run_kvsim("validate --client-ttft-ms 5 " + with);
  const CliResult e = run_kvsim("validate --client-ttft-ms 10000 " + plain);  // the upper bound is accepted
  ASSERT_EQ(d.exit_code, 0) << d.out;
  ASSERT_EQ(e.exit_code, 0) << e.out;
  EXPECT_NEAR(predicted_ttft_tpot(d.out).first - ttft0, 5.0, 0.1 + 1e-9);
  EXPECT_NEAR(predicted_ttft_tpot(e.out).first - ttft0, 10000.0, 0.1 + 1e-9);
  EXPECT_EQ(c.out.find("client TTFT overhead"), std::string::npos) << c.out;
}

TEST(ValidateCommand, MissingColumnNamesFileAndLine) {
  const std::string p = write_temp(
      "v_missing.csv", "model,gpu,tp,isl,osl,concurrency,ttft_ms\nmodels/qwen3-8b.json,h100-sxm,1,128,16,1,10\n");
  const CliResult r = run_kvsim("validate " + p);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find(p + ":1: missing column 'tpot_ms'"), std::string::npos) << r.out;
}

TEST(ValidateCommand, UnknownGpuNamesLineAndColumn) {
  const std::string p = write_temp("v_gpu.csv", std::string(kHeader) + "models/qwen3-8b.json,h999,1,128,16,1,10,5\n");
  const CliResult r = run_kvsim("validate " + p);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find(p + ":2: column 'gpu': unknown GPU 'h999'"), std::string::npos) << r.out;
}

TEST(ValidateCommand, MalformedNumberNamesLineAndColumn) {
  const std::string p =
      write_temp("v_num.csv", std::string(kHeader) + "models/qwen3-8b.json,h100-sxm,1,12x,16,1,10,5\n");
  const CliResult r = run_kvsim("validate " + p);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find(p + ":2: column 'isl': not a number ('12x')"), std::string::npos) << r.out;
  EXPECT_EQ(count_lines(r.out), 1);
}

// Runs validate on `csv` (written as `name`) and expects exit 2 with "PATH" + `message` in the output.
void expect_validate_error(const std::string& name, const std::string& csv, const std::string& message) {
  const std::string p = write_temp(name, csv);
  const CliResult r = run_kvsim("validate " + p);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find(p + message), std::string::npos) << r.out;
}

TEST(ValidateCommand, BadChunkedPrefillValueNamesLineAndColumn) {
  expect_validate_error("v_chunk.csv",
                        "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,enable_chunked_prefill\n"
                        "models/qwen3-8b.json,h100-sxm,1,128,16,1,10,5,maybe\n",
                        ":2: column 'enable_chunked_prefill': expected true or false (got 'maybe')");
}

TEST(ValidateCommand, SchedulerColumnsAndProtocolAreReported) {
  const std::string p =
      write_temp("v_sched.csv",
                 "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,engine,max_num_batched_tokens,max_num_seqs,"
                 "enable_chunked_prefill\n"
                 "models/qwen3-8b.json,h100-sxm,1,128,16,2,10,5,trtllm,1630,2,false\n");
  const CliResult r = run_kvsim("validate " + p + " --requests-per-slot 3 --warmup-per-slot 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("1 + 3 x concurrency requests per point (warm-up excluded; command-line / default protocol), "
                       "per-row scheduler settings"),
            std::string::npos)
      << r.out;
  const CliResult d = run_kvsim("validate " + p + " --engine-defaults --extra-clients 1");
  ASSERT_EQ(d.exit_code, 0) << d.out;
  EXPECT_NE(d.out.find("engine default scheduler settings, 1 extra client(s) (H1)"), std::string::npos) << d.out;
}

TEST(ValidateCommand, DeploymentComesFromTheProtocolLineOrTheCommandLine) {
  const std::string p = write_temp("v_deploy.csv",
                                   "# protocol: warmup_per_slot=0 requests_per_slot=2 deployment=aiconfigurator\n"
                                   "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,engine,measured\n"
                                   "models/qwen3-8b.json,h100-sxm,1,128,16,2,10,5,sglang,2026-03-02T00:00:00.000Z\n");
  const CliResult r = run_kvsim("validate " + p);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("else aiconfigurator's generator flags at the measured date"), std::string::npos) << r.out;
  const CliResult d = run_kvsim("validate --deployment engine-defaults " + p);
  ASSERT_EQ(d.exit_code, 0) << d.out;
  EXPECT_EQ(d.out.find("aiconfigurator's generator flags"), std::string::npos) << d.out;
  const CliResult bad = run_kvsim("validate --deployment sometimes " + p);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("--deployment: unknown value 'sometimes'"), std::string::npos) << bad.out;
  const std::string q =
      write_temp("v_deploy_bad.csv", "# protocol: warmup_per_slot=0 requests_per_slot=2 deployment=maybe\n" +
                                         std::string(kHeader) + "models/qwen3-8b.json,h100-sxm,1,128,16,2,10,5\n");
  const CliResult b2 = run_kvsim("validate " + q);
  EXPECT_EQ(b2.exit_code, 2);
  EXPECT_NE(b2.out.find(q + ":1: protocol deployment: unknown value 'maybe'"), std::string::npos) << b2.out;
}

TEST(ValidateCommand, BadMeasuredDateAndSglangColumnOnVllmRowNameLineAndColumn) {
  expect_validate_error("v_measured.csv",
                        "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,measured\n"
                        "models/qwen3-8b.json,h100-sxm,1,128,16,1,10,5,March 2026\n",
                        ":2: column 'measured': expected a date YYYY-MM-DD");
  expect_validate_error("v_month.csv",
                        "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,measured\n"
                        "models/qwen3-8b.json,h100-sxm,1,128,16,1,10,5,2026-13-01\n",
                        ":2: column 'measured': expected a date YYYY-MM-DD");
  expect_validate_error("v_mixed.csv",
                        "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,engine,enable_mixed_chunk\n"
                        "models/qwen3-8b.json,h100-sxm,1,128,16,1,10,5,vllm,true\n",
                        ":2: column 'enable_mixed_chunk': an SGLang option on a vllm row");
}

TEST(CalibrateCommand, ReportsFitErrorPerOperator) {
  const CliResult r = run_kvsim("calibrate --gpu h100-sxm --model models/qwen3-8b.json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* op : {"gemm: table interpolation", "gemm: fitted roofline", "moe: fused expert kernel",
                         "prefill attention 32q/8kv/hd128", "decode attention 32q/8kv/hd128"})
    EXPECT_NE(r.out.find(op), std::string::npos) << op;
}

TEST(SizeRecompute, PrintsReloadAgainstRecomputeAndCrossover) {
  const CliResult r = run_kvsim(
      "size models/llama-2-7b.json --gpu h100-sxm --recompute --tier host-dram --tier nvme-gen4 --context 1024 "
      "--context 4096");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("recompute_ms"), std::string::npos);
  EXPECT_NE(r.out.find("crossover host-dram:"), std::string::npos);
  EXPECT_NE(r.out.find("crossover nvme-gen4:"), std::string::npos);
  EXPECT_EQ(r.out.find("remote-rdma"), std::string::npos);
}

TEST(SizeRecompute, NeedsAGpu) {
  const CliResult r = run_kvsim("size models/qwen3-8b.json --recompute");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--recompute needs --gpu"), std::string::npos);
}

}  // namespace
}  // namespace kvsim::testing
