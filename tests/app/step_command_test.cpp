// CLI tests of `kvsim step` (the built binary): the step it prices is the step a run takes, its columns add
// up, and its per-step overhead is the engine's row of models/latency/overhead.csv.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/app/cli_runner.h"

namespace kvsim::testing {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = std::string(::testing::TempDir()) + name;
  std::ofstream(path) << text;
  return path;
}

// One request of `prompt` tokens and 3 output tokens on Qwen3-8B, H100, calibrated model, engine `kind`.
std::string scenario(const std::string& name, const std::string& kind, int tp, int prompt) {
  return write_temp(name, "name: step-test\nmodel: models/qwen3-8b.json\ngpu: h100-sxm\nengine:\n  kind: " + kind +
                              "\n  tensor_parallel_size: " + std::to_string(tp) +
                              "\n  latency_model: calibrated\nworkload:\n  synthetic: {kind: shared_prefix, groups: 1, "
                              "requests_per_group: 1, prefix_tokens: 0, suffix_tokens: " +
                              std::to_string(prompt) + ", output_tokens: 3, concurrency: 1}\n");
}

// The numbers of the table line whose first column is `decodes` (the line after the header).
std::vector<double> line_of(const std::string& out, int decodes) {
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    double first = 0;
    if (!(f >> first) || first != decodes) continue;
    std::vector<double> v{first};
    double x = 0;
    while (f >> x) v.push_back(x);
    return v;
  }
  return {};
}

// Columns: decodes context prefill cached tokens padded total_ms, then 11 parts.
constexpr size_t kTotal = 6;
constexpr size_t kFirstPart = 7;
constexpr size_t kAllreduce = 13;
constexpr size_t kOverhead = 17;

TEST(StepCommand, PricesTheStepsARunTakes) {
  // A lone request: its TTFT is its prefill step, and finish - first token its two decode steps (contexts
  // 1000 and 1001 cached before them).
  const std::string s = scenario("step_run.yaml", "vllm", 1, 1000);
  const std::string csv = std::string(::testing::TempDir()) + "step_run.csv";
  const CliResult run = run_kvsim("run " + s + " -q --csv " + csv);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  std::ifstream in(csv);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  std::vector<std::string> f;
  std::stringstream ss(row);
  for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
  ASSERT_GE(f.size(), 5u) << row;
  const double ttft_ms = (std::stod(f[3]) - std::stod(f[1])) * 1e3;
  const double decode_ms = (std::stod(f[4]) - std::stod(f[3])) * 1e3;

  const CliResult prefill = run_kvsim("step " + s + " --prefill 1000");
  ASSERT_EQ(prefill.exit_code, 0) << prefill.out;
  const std::vector<double> p = line_of(prefill.out, 0);
  ASSERT_GT(p.size(), kTotal) << prefill.out;
  EXPECT_NEAR(p[kTotal], ttft_ms, 1e-4);  // printed to 0.1 us

  const CliResult d0 = run_kvsim("step " + s + " --decode 1 --context 1000");
  const CliResult d1 = run_kvsim("step " + s + " --decode 1 --context 1001");
  ASSERT_EQ(d0.exit_code, 0) << d0.out;
  ASSERT_EQ(d1.exit_code, 0) << d1.out;
  EXPECT_NEAR(line_of(d0.out, 1)[kTotal] + line_of(d1.out, 1)[kTotal], decode_ms, 2e-4);
}

TEST(StepCommand, PartsAddUpAndTheOverheadIsTheEnginesRow) {
  // overhead.csv: vllm c0 1.0 ms + c1 0.01 ms a request; trtllm 0.807 + 0.00887 (the rows' values).
  const struct {
    const char* kind;
    double c0, c1;
  } engines[] = {{"vllm", 1.0, 0.01}, {"trtllm", 0.807, 0.00887}};
  for (const auto& e : engines) {
    const std::string s = scenario(std::string("step_parts_") + e.kind + ".yaml", e.kind, 2, 100);
    const CliResult r = run_kvsim("step " + s + " --decode 1 --decode 32 --context 2048 --prefill 512");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    for (int d : {1, 32}) {
      const std::vector<double> v = line_of(r.out, d);
      ASSERT_EQ(v.size(), kFirstPart + 11) << r.out;
      EXPECT_EQ(v[4], d + 512);  // tokens: one per decode plus the chunk
      double sum = 0;
      for (size_t k = kFirstPart; k < v.size(); ++k) sum += v[k];
      EXPECT_NEAR(sum, v[kTotal], 1e-3) << e.kind << " decodes " << d;
      EXPECT_NEAR(v[kOverhead], e.c0 + e.c1 * (d + 1), 1e-4) << e.kind << " decodes " << d;
      EXPECT_GT(v[kAllreduce], 0.0);  // TP 2
    }
  }
  // TP 1: no all-reduce.
  const CliResult one = run_kvsim("step " + scenario("step_tp1.yaml", "vllm", 1, 100) + " --decode 8 --context 100");
  ASSERT_EQ(one.exit_code, 0) << one.out;
  EXPECT_EQ(line_of(one.out, 8)[kAllreduce], 0.0);
}

TEST(StepCommand, BadBatchesAreRefusedNamingTheOption) {
  const std::string s = scenario("step_bad.yaml", "vllm", 1, 100);
  const struct {
    std::string args, message;
  } cases[] = {
      {"", "an empty step"},
      {"--decode 4", "--decode needs --context >= 1"},
      {"--decode -1 --context 10", "--decode must be >= 0"},
      {"--decode 0", "--decode 0 without --prefill"},
      {"--prefill -5", "--prefill must be >= 0"},
      {"--prefills 3 --decode 1 --context 9", "--prefills needs --prefill"},
      {"--prefill 100 --prefills 0", "--prefills must be >= 1"},
      {"--prefill-cached 10 --decode 1 --context 9", "--prefill-cached needs --prefill"},
      {"--decode 1 --context 10 --pool nope", "no pool 'nope' (known: default)"},
      {"--decode 1 --context 100000000", "more than a decode can have cached"},
      {"--decode 2000000 --context 10", "--decode must be <= 1048576"},
      {"--prefill 10 --prefills 2000000", "--prefills must be <= 1048576"},
  };
  for (const auto& c : cases) {
    const CliResult r = run_kvsim("step " + s + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
  }
  const CliResult none = run_kvsim("step --decode 1 --context 5");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.out.find("step: no scenario given"), std::string::npos) << none.out;
}

// Qwen3-8B's max_model_len is its 40,960-token context: a decode can have at most 40,958 cached (the
// scheduler keeps computed + scheduled <= max_model_len - 1) and a prompt at most 40,959 tokens (the engine
// refuses a prompt of max_model_len or more).
TEST(StepCommand, RefusesWhatARunCannotSchedule) {
  const std::string s = scenario("step_len.yaml", "vllm", 1, 100);
  EXPECT_EQ(run_kvsim("step " + s + " --decode 1 --context 40958").exit_code, 0);
  EXPECT_EQ(run_kvsim("step " + s + " --decode 1 --context 40959").exit_code, 2);
  EXPECT_EQ(run_kvsim("step " + s + " --prefill 40959").exit_code, 0);
  EXPECT_EQ(run_kvsim("step " + s + " --prefill 9223372036854775807 --prefill-cached 9223372036854775807").exit_code,
            2);
  const CliResult r = run_kvsim("step " + s + " --prefill 40960");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("more than a prompt can have under the engine's max_model_len 40960 (at most 40959)"),
            std::string::npos)
      << r.out;
  // A prefill-only step does not check --context.
  EXPECT_EQ(run_kvsim("step " + s + " --prefill 100 --context 99999999").exit_code, 0);
}

// Under PP the columns are the pipeline's terms and add up to the total with M = min(PP, requests)
// micro-batches: total = max(stage_sum, M x stage_max) + send + overhead, also for the roofline model, whose
// fixed step overhead (the GPU file's step_overhead) is in the overhead column.
TEST(StepCommand, PipelineColumnsAddUpToTheTotal) {
  for (const char* model : {"roofline", "calibrated"}) {
    const CliResult r = run_kvsim(
        "step scenarios/quickstart.yaml --set engine.pipeline_parallel_size=2 --set "
        "engine.latency_model=" +
        std::string(model) + " --decode 8 --context 500");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const std::vector<double> v = line_of(r.out, 8);
    ASSERT_EQ(v.size(), kFirstPart + 4) << r.out;
    const double sum = v[kFirstPart], max = v[kFirstPart + 1], send = v[kFirstPart + 2], over = v[kFirstPart + 3];
    EXPECT_GT(over, 0.0) << model;
    EXPECT_NEAR(std::max(sum, 2 * max) + send + over, v[kTotal], 2e-4) << model;
  }
}

TEST(ValidateExplain, PrintsTheSteadyDecodeStepAndOnePromptsPrefill) {
  // Concurrency 9 over DP 2: ceil(9 / 2) = 5 decodes a rank, each at isl + osl / 2 = 1000 + 100 cached;
  // the prefill line is one 1000-token prompt. Its total is the step `kvsim step` prices for that scenario.
  const std::string points = write_temp("explain.csv",
                                        "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,dp\n"
                                        "models/qwen3-8b.json,h100-sxm,1,1000,200,9,50,8,2\n");
  const CliResult r = run_kvsim("validate " + points + " --explain");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<double> d = line_of(r.out, 5);
  ASSERT_EQ(d.size(), kFirstPart + 11) << r.out;
  EXPECT_EQ(d[1], 1100);
  const std::vector<double> p = line_of(r.out, 0);
  ASSERT_EQ(p.size(), kFirstPart + 11) << r.out;
  EXPECT_EQ(p[2], 1000);
  const CliResult step = run_kvsim("step " + scenario("explain.yaml", "vllm", 1, 100) + " --prefill 1000");
  ASSERT_EQ(step.exit_code, 0) << step.out;
  EXPECT_DOUBLE_EQ(line_of(step.out, 0)[kTotal], p[kTotal]);
  // Without the option: no step table.
  const CliResult plain = run_kvsim("validate " + points);
  EXPECT_EQ(plain.out.find("total_ms"), std::string::npos) << plain.out;
}

}  // namespace
}  // namespace kvsim::testing
