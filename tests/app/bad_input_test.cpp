// The bad-input rule end to end: a malformed config, trace line, scenario key, unit or output path
// gets one line "kvsim: error: ..." naming the file, line or key, and exit code 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "sim/core/errors.h"
#include "sim/core/utf8.h"
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

// Issue 15, "Hangs, overflow, exit codes". The corpus (tests/bad_input/) holds the file-driven cases;
// these need generated inputs or check more than the one error line.

TEST_F(BadInput, ScenarioDurationsWithUnitsBeyondTheClockNameTheKey) {
  // The second parse in Reader::seconds' catch block escaped as std::invalid_argument (exit 1).
  EXPECT_NE(scenario_error({"workload.synthetic.duration=1e12h"}).find("s.yaml: workload.synthetic.duration"),
            std::string::npos);
  EXPECT_NE(scenario_error({"workload.synthetic.duration=1e300"}).find("workload.synthetic.duration"),
            std::string::npos);
  // Both sides of the bound: 1e9 s is the longest duration.
  EXPECT_EQ(scenario_error({"workload.synthetic.duration=277777h"}), "");
  EXPECT_NE(scenario_error({"workload.synthetic.duration=277778h"}).find("at most 1e9 s"), std::string::npos);
  // The bound itself with a unit: 1e9 s comes back from nanoseconds a hair above 1e9 and was refused.
  EXPECT_EQ(scenario_error({"workload.synthetic.duration=1e9s"}), "");
  EXPECT_NE(scenario_error({"workload.synthetic.duration=1.000001e9s"}).find("at most 1e9 s"), std::string::npos);
}

TEST_F(BadInput, RunHybridStartupCheckCountsTwoStateBlocksInAlignOnBothSides) {
  // Issue 15's Qwen3-Next livelock with max_model_len 700: 5 attention blocks of 144 tokens and 2
  // per state group (align: running state + checkpoint) x 3 = 11 > 9 usable blocks. Refused at
  // start-up (it was recomputed forever); with 12 blocks the request finishes.
  const std::string f = "run tests/bad_input/files/livelock-qwen3-next.yaml --set engine.max_model_len=700";
  expect_error(run_kvsim(f + " -q", 60), {"livelock-qwen3-next.yaml: engine.num_gpu_blocks", "9 usable", "needs 11"});
  const auto r = run_kvsim(f + " --set engine.num_gpu_blocks=12", 60);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("(1 finished, 0 unfinished)"), std::string::npos) << r.out;
}

TEST_F(BadInput, RunStartupKvCheckProbedOnBothSides) {
  // Qwen3-8B, 16-token blocks, max_model_len 160: one request needs 10 blocks plus the null block.
  const std::string s = write("small.yaml", std::string(kBase) + "");
  const std::string set = " --set engine.max_model_len=160 --set workload.synthetic.input_tokens=100 ";
  EXPECT_EQ(run_kvsim("run " + s + " -q" + set + "--set engine.num_gpu_blocks=11").exit_code, 0);
  expect_error(run_kvsim("run " + s + " -q" + set + "--set engine.num_gpu_blocks=10"),
               {"small.yaml: engine.num_gpu_blocks", "9 usable blocks", "needs 10"});
}

TEST_F(BadInput, RunChunkedPrefillBudgetProbedOnBothSides) {
  const std::string set = " --set engine.enable_chunked_prefill=false --set engine.max_model_len=2048 ";
  EXPECT_EQ(run_kvsim("run " + scenario_ + " -q" + set + "--set engine.max_num_batched_tokens=2048").exit_code, 0);
  expect_error(run_kvsim("run " + scenario_ + " -q" + set + "--set engine.max_num_batched_tokens=2047"),
               {"base.yaml: engine.max_num_batched_tokens", "below max_model_len 2048"});
  // The default budget is not refused (vLLM raises its own default to max_model_len then).
  EXPECT_EQ(run_kvsim("run " + scenario_ + " -q --set engine.enable_chunked_prefill=false").exit_code, 0);
}

TEST_F(BadInput, ValidateRejectedPointIsExcludedAndReported) {
  // isl 1e15 is rejected by the engine: it counted as -100 % error in the medians before.
  const std::string csv = write("points.csv",
                                "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms\n"
                                "models/qwen3-8b.json,h100-sxm,1,1000000000000000,10,1,10,5\n"
                                "models/qwen3-8b.json,h100-sxm,1,100,10,1,10,5\n");
  const auto r = run_kvsim("validate " + csv + " --requests-per-slot 1 --warmup-per-slot 0 --latency-model roofline");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("excluded: no request finished (rejected: prompt_too_long)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("excluded 1 point(s) with no finished request, lines 2"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("-100.0"), std::string::npos) << r.out;
  const size_t all = r.out.find("\nall ");
  ASSERT_NE(all, std::string::npos) << r.out;
  EXPECT_NE(r.out.substr(all).find(" 1 "), std::string::npos) << r.out;  // one point in the medians
}

TEST_F(BadInput, ValidateConcurrencyBoundOnBothSides) {
  const std::string head = "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms\nmodels/qwen3-8b.json,h100-sxm,1,100,2,";
  expect_error(run_kvsim("validate " + write("c.csv", head + "1000001,10,5\n")),
               {"c.csv:2", "concurrency", "must be <= 1000000 (got 1000001)"});
}

TEST_F(BadInput, HugeModelTypeAndKeyStayOnOneShortLine) {
  // 50 MB of model_type and of a scenario key went into the message verbatim.
  const std::string big(50 << 20, 'x');
  const std::string cfg = write("big.json", "{\"model_type\": \"" + big + "\"}");
  const auto r = run_kvsim("size " + cfg);
  expect_error(r, {"big.json", "model_type 'xxxx", "(52428800 bytes)"});
  EXPECT_LT(r.out.size(), 600u);
  // An explicit key ("? key"): YAML caps implicit keys at 1024 characters.
  const std::string yaml = write("bigkey.yaml", std::string(kBase) + "? " + std::string(10 << 20, 'k') + "\n: 1\n");
  const auto y = run_kvsim("run " + yaml + " -q");
  expect_error(y, {"bigkey.yaml", "(10485760 bytes): unknown key"});
  EXPECT_LT(y.out.size(), 1200u);
}

TEST_F(BadInput, SizeJsonEscapesALoneSurrogate) {
  // "\ud800" decoded to bytes that are not UTF-8 and went out raw: invalid JSON for any reader.
  std::ifstream in("models/qwen3-8b.json");
  std::string cfg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = cfg.find("\"qwen3\"");
  ASSERT_NE(at, std::string::npos);
  cfg.replace(at, 7, "\"qwen3\\ud800\"");
  const auto r = run_kvsim("size " + write("surrogate.json", cfg) + " --format json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"model_type\": \"qwen3\\ud800\""), std::string::npos) << r.out.substr(0, 400);
  for (size_t i = 0; i < r.out.size();) {
    const size_t n = utf8_length(r.out, i);
    ASSERT_GT(n, 0u) << "invalid UTF-8 at byte " << i;
    i += n;
  }
}

TEST_F(BadInput, RunOutputPathsAreCheckedBeforeTheRun) {
  // A folder as the run file, and two outputs on one file, failed only after the run (the rename, or a
  // lost CSV); both are refused first now, and nothing is written.
  const std::string folder = (dir_ / "out_folder").string();
  fs::create_directories(folder);
  expect_error(run_kvsim("run " + scenario_ + " -q --out " + folder), {folder + ": is a folder, not a file", "--out"});
  const std::string same = (dir_ / "same.h5").string();
  expect_error(run_kvsim("run " + scenario_ + " -q --out " + same + " --csv " + same),
               {same + ": named by both --out (output.hdf5) and --csv"});
  EXPECT_FALSE(fs::exists(same));
}

}  // namespace
}  // namespace kvsim
