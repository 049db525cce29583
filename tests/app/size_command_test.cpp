// `kvsim size` end to end: bad input gives one clear line and exit code 2; good input reproduces
// the essay's figures in every format.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "sim/model/json.h"
#include "tests/app/cli_runner.h"

namespace kvsim {
namespace {

using testing::count_lines;
using testing::run_kvsim;

std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("kvsim_size_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

TEST(SizeBadInput, MissingFileNamesThePath) {
  auto r = run_kvsim("size models/no-such-model.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("models/no-such-model.json"), std::string::npos) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
}

TEST(SizeBadInput, InvalidJsonGivesLineAndColumn) {
  const std::string p = write_temp("bad.json", "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096,,\n}\n");
  auto r = run_kvsim("size " + p);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find(p + ":3:23"), std::string::npos)
      << r.out;  // 2 spaces + "hidden_size" (13) + ": 4096," = col 22; the second comma is col 23
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
}

TEST(SizeBadInput, MissingKeyNamesKeyAndModelType) {
  const std::string p = write_temp("nolayers.json",
                                   R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
                                       "vocab_size": 32000, "intermediate_size": 11008})");
  auto r = run_kvsim("size " + p);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("num_hidden_layers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'llama'"), std::string::npos) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
}

TEST(SizeBadInput, UnknownGpuListsKnownOnes) {
  auto r = run_kvsim("size models/qwen3-8b.json --gpu h900");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("h900"), std::string::npos);
  EXPECT_NE(r.out.find("h100-sxm"), std::string::npos) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
}

TEST(SizeBadInput, UnknownLinkListsKnownOnes) {
  auto r = run_kvsim("size models/qwen3-8b.json --link carrier-pigeon");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("nvlink4"), std::string::npos) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
}

TEST(SizeBadInput, TpMustDivideHeads) {
  // Qwen3-8B has 32 attention heads and 8 KV heads: 3 divides neither.
  auto r = run_kvsim("size models/qwen3-8b.json --tp 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--tp 3"), std::string::npos) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
}

TEST(SizeBadInput, BadOptionValues) {
  EXPECT_EQ(run_kvsim("size models/qwen3-8b.json --kv-dtype int3").exit_code, 2);
  EXPECT_EQ(run_kvsim("size models/qwen3-8b.json --format xml").exit_code, 2);
  EXPECT_EQ(run_kvsim("size models/qwen3-8b.json --context -5").exit_code, 2);
  EXPECT_EQ(run_kvsim("size models/qwen3-8b.json --block-size 0").exit_code, 2);
  EXPECT_EQ(run_kvsim("size models/qwen3-8b.json --no-such-option").exit_code, 2);
  EXPECT_EQ(run_kvsim("size").exit_code, 2);
}

TEST(SizeOutput, JsonHasEssayNumbers) {
  auto r =
      run_kvsim("size models/qwen3-8b.json models/deepseek-v3.2.json --kv-dtype fp8 --context 32768 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  JsonValue doc = parse_json(r.out, "stdout");
  ASSERT_TRUE(doc.is_array());
  ASSERT_EQ(doc.array().size(), 2u);
  const JsonValue& q = doc.array()[0];
  for (const char* key : {"name", "kv_bytes_per_token", "window_bytes_max", "state_bytes_per_request", "params",
                          "weight_bytes", "block_size", "contexts"})
    EXPECT_NE(q.find(key), nullptr) << key;
  EXPECT_EQ(q.find("name")->str(), "qwen3-8b");
  EXPECT_EQ(q.find("kv_bytes_per_token")->integer(), 73728);  // FP8: 2 x 36 x 8 x 128 x 1
  const JsonValue& c = q.find("contexts")->array()[0];
  EXPECT_EQ(c.find("tokens")->integer(), 32768);
  EXPECT_EQ(c.find("bytes")->integer(), 32768LL * 73728);                  // 2.25 GiB
  EXPECT_EQ(doc.array()[1].find("kv_bytes_per_token")->integer(), 48068);  // DeepSeek-V3.2 fp8_ds_mla
}

TEST(SizeOutput, CapacityOnH100WithEssayRule) {
  // Essay: 0.9 x 79.6 GiB = 71.6 GiB; minus 15.3 GiB of weights = 56 GiB; 8K requests of 1.125 GiB
  // each: at most 50 (no activation reserve counted, as in the essay's upper bound).
  auto r = run_kvsim(
      "size models/qwen3-8b.json --gpu h100-sxm --gpu-memory-utilization 0.9 --activation-reserve 0 --context 8192 "
      "--format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  JsonValue doc = parse_json(r.out, "stdout");
  EXPECT_EQ(doc.array()[0].find("contexts")->array()[0].find("max_concurrent")->integer(), 50);
  // With the default 3.5 GiB activation reserve: (56.43 - 3.5) / 1.125 = 47.05 -> 47.
  auto r2 =
      run_kvsim("size models/qwen3-8b.json --gpu h100-sxm --gpu-memory-utilization 0.9 --context 8192 --format json");
  JsonValue doc2 = parse_json(r2.out, "stdout");
  EXPECT_EQ(doc2.array()[0].find("contexts")->array()[0].find("max_concurrent")->integer(), 47);
}

TEST(SizeOutput, SideBySideTableAndCsv) {
  auto r = run_kvsim("size models/qwen3-8b.json models/llama-2-7b.json --context 131072");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("147,456"), std::string::npos);
  EXPECT_NE(r.out.find("524,288"), std::string::npos);
  EXPECT_NE(r.out.find("18.00 GiB"), std::string::npos);  // Qwen3-8B at 131,072 tokens
  auto c = run_kvsim("size models/qwen3-8b.json models/llama-2-7b.json --context 131072 --format csv");
  ASSERT_EQ(c.exit_code, 0);
  EXPECT_EQ(count_lines(c.out), 3);  // header + one row per model
  EXPECT_NE(c.out.find("qwen3-8b,\"36 full\",bf16,147456"), std::string::npos) << c.out;
}

TEST(SizeOutput, HelpDocumentsEveryOption) {
  auto r = run_kvsim("size --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt : {"--kv-dtype", "--state-dtype", "--weight-dtype", "--context", "--images", "--image-size",
                          "--tp", "--dcp", "--gpu", "--engine", "--gpu-memory-utilization", "--block-size", "--link",
                          "--format", "--cla", "--yoco-window"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

TEST(SizeOutput, EssaySideBySideTableOfAllTwelveModels) {
  // `kvsim size models/*.json --context 131072`: the essay's table, BF16 cache except DeepSeek-V3.2
  // in vLLM's fp8_ds_mla layout (its default), states in BF16 as the essay shows them.
  auto r = testing::run_kvsim("size models/*.json --context 131072 --state-dtype bf16 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const JsonValue doc = parse_json(r.out, "stdout");
  ASSERT_EQ(doc.array().size(), 12u);
  const std::map<std::string, int64_t> per_token = {{"qwen3-8b", 2 * 36 * 8 * 128 * 2},
                                                    {"llama-2-7b", 2 * 32 * 32 * 128 * 2},
                                                    {"falcon-7b", 2 * 1 * 64 * 2 * 32},
                                                    {"deepseek-v3", 576 * 2 * 61},
                                                    {"deepseek-v3.2", (656 + 132) * 61},
                                                    {"gpt-oss-120b", 18 * 2 * 8 * 64 * 2},
                                                    {"qwen3-30b-a3b", 2 * 4 * 128 * 2 * 48},
                                                    {"nemotron-h-8b", 4 * 2 * 8 * 128 * 2},
                                                    {"qwen3-next-80b-a3b", 12 * 2 * 2 * 256 * 2},
                                                    {"qwen3-vl-8b", 2 * 36 * 8 * 128 * 2},
                                                    {"rwkv6-1b6", 0},
                                                    {"qwen3.5-4b", 8 * 2 * 4 * 256 * 2}};
  for (const JsonValue& m : doc.array()) {
    const std::string name = m.find("name")->str();
    ASSERT_TRUE(per_token.count(name)) << name;
    EXPECT_EQ(m.find("kv_bytes_per_token")->integer(), per_token.at(name)) << name;
  }
  // 131,072-token totals: Qwen3-8B 18 GiB; gpt-oss 36,864 x 131,072 + 4.5 MiB of windows; Nemotron-H
  // 16,384 x 131,072 + 49.41 MiB of BF16 state (51,806,208 B).
  for (const JsonValue& m : doc.array()) {
    const int64_t bytes = m.find("contexts")->array()[0].find("bytes")->integer();
    const std::string name = m.find("name")->str();
    if (name == "qwen3-8b") {
      EXPECT_EQ(bytes, 18LL << 30);
    }
    if (name == "gpt-oss-120b") {
      EXPECT_EQ(bytes, 36864LL * 131072 + 4718592);
    }
    if (name == "nemotron-h-8b") {
      EXPECT_EQ(bytes, 16384LL * 131072 + 51806208);
    }
  }
}

}  // namespace
}  // namespace kvsim
