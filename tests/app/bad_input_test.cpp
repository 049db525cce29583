// The bad-input rule end to end: a malformed config, trace line, scenario key, unit or output path
// gets one line "kvsim: error: ..." naming the file, line or key, and exit code 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sim/core/errors.h"
#include "sim/scenario/scenario.h"
#include "tests/app/cli_runner.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;
using testing::count_lines;
using testing::run_kvsim;

const char* kBase =
    "model: models/qwen3-8b.json\n"
    "gpu: h100-sxm\n"
    "seed: 1\n"
    "engine: {block_size: 16, enable_prefix_caching: true}\n"
    "workload:\n"
    "  synthetic: {kind: poisson, rate: 10, num_requests: 20, input_tokens: 100, output_tokens: 10}\n";

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kvsim_bad_input_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    scenario_ = write("base.yaml", kBase);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  // Expects exit 2, one line, and every `needle` in the message.
  static void expect_error(const testing::CliResult& r, std::initializer_list<std::string> needles) {
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << r.out;
    EXPECT_EQ(r.out.rfind("kvsim: error: ", 0), 0u) << r.out;
    for (const auto& n : needles) EXPECT_NE(r.out.find(n), std::string::npos) << n << " not in: " << r.out;
  }
  // The InputError message of parse_scenario(kBase + overrides), or "" when accepted.
  static std::string scenario_error(const std::vector<std::string>& overrides, const std::string& text = kBase) {
    try {
      parse_scenario(text, "s.yaml", overrides);
      return "";
    } catch (const InputError& e) {
      return e.what();
    }
  }
  fs::path dir_;
  std::string scenario_;
};

TEST_F(BadInput, SizeHugeContextIsAnErrorNotAWrappedNumber) {
  expect_error(run_kvsim("size models/qwen3-8b.json --context 9000000000000000000"), {"--context"});
  expect_error(run_kvsim("size models/qwen3-vl-8b.json --images 100000000 --image-size 100000x100000"), {"--images"});
}

TEST_F(BadInput, SizeHugeActivationReserveIsAnError) {
  expect_error(run_kvsim("size models/qwen3-8b.json --gpu h100-sxm --activation-reserve 1e30GiB"),
               {"--activation-reserve"});
}

TEST_F(BadInput, SizeBadRecomputeChunkFailsBeforeAnyOutput) {
  expect_error(run_kvsim("size models/qwen3-8b.json --gpu h100-sxm --recompute --recompute-chunk 0"),
               {"--recompute-chunk"});
}

TEST_F(BadInput, SizeDirectoryAndBinaryConfigsNameTheFile) {
  expect_error(run_kvsim("size models"), {"models", "directory"});
  const std::string bin = write("bin.json", std::string("\x00\x01\x02\n\x7f", 5));
  expect_error(run_kvsim("size " + bin), {"bin.json", "byte 0x00"});
}

TEST_F(BadInput, ScenarioDuplicateKeyIsAnError) {
  EXPECT_NE(scenario_error({}, std::string(kBase) + "seed: 2\n").find("s.yaml: seed: duplicate key"),
            std::string::npos);
  const std::string nested =
      "model: models/qwen3-8b.json\ngpu: h100-sxm\nengine: {block_size: 16, block_size: 32}\n"
      "workload: {synthetic: {kind: poisson, rate: 1, num_requests: 1}}\n";
  EXPECT_NE(scenario_error({}, nested).find("engine.block_size: duplicate key"), std::string::npos);
}

TEST_F(BadInput, ScenarioNonScalarKeyIsAnInputError) {
  // Escaped as a yaml-cpp bad conversion with exit 1 before.
  EXPECT_NE(scenario_error({"engine={[a]: 1}"}).find("engine: keys must be plain names"), std::string::npos);
}

TEST_F(BadInput, ScenarioIntKeysDoNotWrap) {
  // 4294967297 became 1 (max_num_batched_tokens) and 4294967296 became 0 (an internal error).
  for (const char* key :
       {"engine.max_num_batched_tokens", "engine.max_num_seqs", "engine.block_size", "engine.tensor_parallel_size"}) {
    const std::string err = scenario_error({std::string(key) + "=4294967297"});
    EXPECT_NE(err.find(key), std::string::npos) << err;
    EXPECT_NE(err.find("must be <= 2147483647"), std::string::npos) << err;
  }
}

TEST_F(BadInput, ScenarioNonFiniteNumbersAreErrors) {
  for (const char* key : {"engine.watermark", "workload.synthetic.rate"}) {
    const std::string err = scenario_error({std::string(key) + "=nan"});
    EXPECT_NE(err.find(std::string("s.yaml: ") + key + ": must be a finite number"), std::string::npos) << err;
  }
}

TEST_F(BadInput, ScenarioWatermarkOutOfRangeIsAnError) {
  EXPECT_NE(scenario_error({"engine.watermark=2"}).find("engine.watermark: must be in [0, 1)"), std::string::npos);
  EXPECT_NE(scenario_error({"engine.watermark=-1"}).find("engine.watermark"), std::string::npos);
}

TEST_F(BadInput, ScenarioHugeDurationsAndTokenCountsAreErrors) {
  // duration 1e300 escaped as std::invalid_argument (exit 1); input_tokens 1e30 became 1-token prompts.
  EXPECT_NE(scenario_error({"workload.synthetic.duration=1e300"}).find("workload.synthetic.duration"),
            std::string::npos);
  EXPECT_NE(scenario_error({"workload.synthetic.input_tokens=1e30"}).find("workload.synthetic.input_tokens"),
            std::string::npos);
}

TEST_F(BadInput, RunLowRateThatOverflowsTheClockIsAnError) {
  // Arrivals wrapped the int64 clock: "arrival time goes backwards" before.
  expect_error(run_kvsim("run " + scenario_ + " -q --set workload.synthetic.rate=1e-9"), {"workload.synthetic.rate"});
}

TEST_F(BadInput, RunEmptyTraceIsAnError) {
  const std::string empty = write("empty.jsonl", "");
  const std::string header = write("header.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n");
  expect_error(run_kvsim("run " + scenario_ + " -q --set 'workload={trace: {format: mooncake, path: " + empty + "}}'"),
               {"empty.jsonl", "no requests"});
  expect_error(run_kvsim("run " + scenario_ + " -q --set 'workload={trace: {format: azure, path: " + header + "}}'"),
               {"header.csv", "no requests"});
}

TEST_F(BadInput, RunDuplicateTraceFieldIsAnError) {
  const std::string trace =
      write("dup.jsonl",
            "{\"timestamp\": 0, \"input_length\": 10, \"input_length\": 600, \"output_length\": 5, "
            "\"hash_ids\": [1]}\n");
  expect_error(run_kvsim("run " + scenario_ + " -q --set 'workload={trace: {format: mooncake, path: " + trace + "}}'"),
               {"dup.jsonl:1", "duplicate key 'input_length'"});
}

TEST_F(BadInput, RunUnwritableOutputsExitTwoAndLeaveNothing) {
  // The HDF5 writer's OutputError exited 1; a summary path under a regular file escaped as
  // std::filesystem_error (exit 1).
  expect_error(run_kvsim("run " + scenario_ + " -q --out /proc/kvsim_x.h5"), {"/proc/kvsim_x.h5"});
  EXPECT_FALSE(fs::exists("/proc/kvsim_x.h5.tmp"));
  const std::string file = write("afile", "x");
  expect_error(run_kvsim("run " + scenario_ + " -q --summary-json " + file + "/s.json"), {file + "/s.json"});
  expect_error(run_kvsim("run " + scenario_ + " -q --out " + file + "/r.h5"), {file + "/r.h5"});
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 2);  // base.yaml, afile
}

TEST_F(BadInput, RunHybridWithTinyTokenBudgetFinishes) {
  // Block 1040 > max_num_batched_tokens 1: the run must progress or report, never hang.
  const auto r =
      run_kvsim("run " + scenario_ + " --set model=models/nemotron-h-8b.json --set engine.max_num_batched_tokens=1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("(20 finished, 0 unfinished)"), std::string::npos) << r.out;
}

TEST_F(BadInput, MainUnknownCommandAndNoArguments) {
  expect_error(run_kvsim("frobnicate"), {"unknown command 'frobnicate'"});
  EXPECT_EQ(run_kvsim("").exit_code, 2);
  const auto v = run_kvsim("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out.rfind("kvsim ", 0), 0u) << v.out;
}

}  // namespace
}  // namespace kvsim
