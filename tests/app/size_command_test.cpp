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

namespace kvsim {
namespace {

std::string write_config(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("kvsim_size_cfg_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

// Mistral-7B-v0.1's shape (every layer slides over 4,096 tokens; 32 layers, 8 KV heads of 128).
const char* kMistral =
    R"({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
        "num_hidden_layers": 32, "num_key_value_heads": 8, "sliding_window": 4096, "max_position_embeddings": 32768,
        "vocab_size": 32000, "tie_word_embeddings": false})";

TEST(SizeQuantized, GptOssWeightsFollowItsMxfp4Config) {
  auto r = testing::run_kvsim("size models/gpt-oss-120b.json --context 8192 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const JsonValue m = parse_json(r.out, "stdout").array()[0];
  // tests/model/quantization_test.cpp: 57,330,892,800 B of 4-bit experts + 3,583,180,800 B of E8M0
  // scales + 2,167,371,072 BF16 parameters x 2.
  EXPECT_EQ(m.find("weight_bytes")->integer(), 57330892800LL + 3583180800LL + 2167371072LL * 2);
  EXPECT_EQ(m.find("weight_dtype")->str(), "mxfp4");
  auto bf16 = testing::run_kvsim("size models/gpt-oss-120b.json --context 8192 --weight-dtype bf16 --format json");
  ASSERT_EQ(bf16.exit_code, 0) << bf16.out;
  EXPECT_EQ(parse_json(bf16.out, "stdout").array()[0].find("weight_bytes")->integer(), 116829156672LL * 2);
}

// SGLang --tp 4 --ep-size 2: EP 2 x moe-TP 2, 128 / 2 = 64 experts a rank, each split 2 ways, i.e. 1 / 4
// of every expert, as the dense part: 61,064,245,248 B of BF16 weights / 4 = 15,266,061,312 B per GPU.
// vLLM has no such layout (its EP size is dp x tp), so --engine vllm refuses it.
TEST(SizeLayout, EpTimesMoeTpPerGpu) {
  auto r = run_kvsim("size models/qwen3-30b-a3b.json --tp 4 --ep 2 --engine sglang --context 8192 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const JsonValue m = parse_json(r.out, "stdout").array()[0];
  EXPECT_EQ(m.find("weight_bytes")->integer(), 61064245248LL);
  // A quarter of everything, plus three quarters of what every TP rank holds whole: per layer the two
  // RMSNorms (2 x 2048), q_norm and k_norm (2 x 128) and the router (2048 x 128), 266,496 params x 48
  // layers + the final norm 2048 = 12,793,856 params = 25,587,712 B; 4 KV heads split over TP 4 evenly.
  EXPECT_EQ(m.find("per_gpu")->find("weight_bytes")->integer(), 61064245248LL / 4 + 25587712LL * 3 / 4);
  auto text = run_kvsim("size models/qwen3-30b-a3b.json --tp 4 --ep 2 --engine sglang --context 8192");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("ep 2 x moe-tp 2 (64 experts per rank)"), std::string::npos) << text.out;
  auto vllm = run_kvsim("size models/qwen3-30b-a3b.json --tp 4 --ep 2 --context 8192");
  EXPECT_EQ(vllm.exit_code, 2);
  EXPECT_NE(vllm.out.find("vLLM's EP size is dp x tp = 4"), std::string::npos) << vllm.out;
}

TEST(SizeLayout, PipelineStagesHoldHalfTheStatesWindowsAndRequestBytes) {
  // Nemotron-H-8B, PP 2 over 52 blocks [26, 26]: each stage holds 12 of the 24 Mamba2 layers. One
  // layer's state: conv (8192 + 2 x 8 groups x 128 = 10,240 channels x 3 rows) in BF16 + SSM (128 heads x
  // 64 x 128) in FP32: 61,440 + 4,194,304 = 4,255,744 B (the essay's 102,137,856 B for 24 layers).
  auto n = run_kvsim("size models/nemotron-h-8b.json --pp 2 --context 8192 --format json");
  ASSERT_EQ(n.exit_code, 0) << n.out;
  const JsonValue nm = parse_json(n.out, "stdout").array()[0];
  EXPECT_EQ(nm.find("state_bytes_per_request")->integer(), 24 * 4255744LL);
  EXPECT_EQ(nm.find("per_gpu")->find("state_bytes_per_request")->integer(), 12 * 4255744LL);
  // gpt-oss-120b, PP 2 over 36 alternating layers [18, 18]: 9 of the 18 sliding and 9 of the 18 full
  // layers a stage, so a stage holds half of every per-request figure.
  auto g = run_kvsim("size models/gpt-oss-120b.json --pp 2 --context 8192 --format json");
  ASSERT_EQ(g.exit_code, 0) << g.out;
  const JsonValue gm = parse_json(g.out, "stdout").array()[0];
  EXPECT_EQ(gm.find("per_gpu")->find("window_bytes_max")->integer(), gm.find("window_bytes_max")->integer() / 2);
  const JsonValue& row = gm.find("contexts")->array()[0];
  EXPECT_EQ(row.find("bytes_per_gpu")->integer(), row.find("bytes")->integer() / 2);
  EXPECT_EQ(row.find("bytes_padded_per_gpu")->integer(), row.find("bytes_padded")->integer() / 2);
}

TEST(SizeBadInput, DecodeContextParallelAndMambaGroupsFollowVllmsChecks) {
  // Qwen3-8B: 8 KV heads, 32 query heads. vLLM needs tp > 8, dcp <= tp / 8 and 4 % dcp == 0.
  for (const char* bad : {"--tp 8 --dcp 8", "--tp 4 --dcp 2", "--tp 16 --dcp 4"}) {
    auto r = run_kvsim(std::string("size models/qwen3-8b.json ") + bad);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.out.find("vLLM needs tp > KV heads"), std::string::npos) << r.out;
  }
  EXPECT_EQ(run_kvsim("size models/qwen3-8b.json --tp 16 --dcp 2").exit_code, 0);
  // Nemotron-H-8B has 8 Mamba groups: TP 16 does not divide them (vLLM MambaMixer2 asserts).
  auto m = run_kvsim("size models/nemotron-h-8b.json --tp 16");
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.out.find("does not divide the 8 Mamba groups"), std::string::npos) << m.out;
  EXPECT_EQ(run_kvsim("size models/nemotron-h-8b.json --tp 8").exit_code, 0);
}

TEST(SizeWarnings, ContextPastMaxPositionEmbeddingsSaysWhichRopeScaling) {
  // Gemma-2-9B's shape: 8,192 positions, no rope_scaling. 131,072 / 8,192 = factor 16.
  const std::string p = write_config("gemma-2-9b.json", R"({"model_type": "gemma2", "hidden_size": 3584,
      "num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256,
      "intermediate_size": 14336, "vocab_size": 256000, "sliding_window": 4096, "max_position_embeddings": 8192})");
  auto r = testing::run_kvsim("size " + p + " --context 131072");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: gemma-2-9b: context 131,072 tokens is longer than max_position_embeddings 8,192"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"factor\": 16.0"), std::string::npos) << r.out;
  // At the limit there is nothing to warn about.
  EXPECT_EQ(testing::run_kvsim("size " + p + " --context 8192").out.find("warning"), std::string::npos);
  // gpt-oss already scales (YaRN 32 over 4,096 = 131,072): 262,144 needs factor 262,144 / 4,096 = 64.
  auto g = testing::run_kvsim("size models/gpt-oss-120b.json --context 262144 --format json");
  ASSERT_EQ(g.exit_code, 0) << g.out;
  const JsonValue doc = parse_json(g.out, "stdout");  // kept: `w` points into it
  const JsonValue& w = *doc.array()[0].find("warnings");
  ASSERT_EQ(w.array().size(), 1u);
  EXPECT_NE(w.array()[0].str().find("rope_scaling (yarn, factor 32)"), std::string::npos) << w.array()[0].str();
  EXPECT_NE(w.array()[0].str().find("\"factor\": 64.0"), std::string::npos) << w.array()[0].str();
}

TEST(SizeFit, ModelThatDoesNotFitSaysSoAndHowManyGpus) {
  // DeepSeek-V3 in FP8 on H100 (81,559 MiB): vLLM share ceil(0.92 x 85,520,809,984) = 78,679,145,186 B,
  // reserve 3.5 GiB (3,758,096,384) leaves 74,921,048,802 B. Weights 673,150,582,112 B; one 8,192-token
  // request is 128 blocks of 64 x 70,272 B = 575,668,224 B plus the null block (4,497,408 B).
  //   9 GPUs: 74,794,509,124 B of weights each, 126,539,678 B left: too little.
  //  10 GPUs: 67,315,058,212 B each, 7.6 GB left: fits. TP must divide the 128 heads: 16.
  auto r = testing::run_kvsim("size models/deepseek-v3.json --gpu h100-sxm --context 8192");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("does not fit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the memory of 10 GPUs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--tp 16 (16 GPUs)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("KV cache -"), std::string::npos) << r.out;  // no negative KV memory
  auto j = testing::run_kvsim("size models/deepseek-v3.json --gpu h100-sxm --context 8192 --format json");
  const JsonValue doc = parse_json(j.out, "stdout");  // kept: `gpu` points into it
  const JsonValue& gpu = *doc.array()[0].find("gpu");
  EXPECT_FALSE(gpu.find("fits")->boolean());
  EXPECT_EQ(gpu.find("gpus_needed")->integer(), 10);
  EXPECT_EQ(gpu.find("tp_needed")->integer(), 16);
  EXPECT_EQ(gpu.find("kv_bytes")->integer(), 0);
  // At --tp 16 it fits, and says nothing of the kind.
  auto ok = testing::run_kvsim("size models/deepseek-v3.json --gpu h100-sxm --context 8192 --tp 16");
  EXPECT_EQ(ok.out.find("does not fit"), std::string::npos) << ok.out;
}

TEST(SizeBadInput, OneFailingConfigStillPrintsTheOthersAndExits2) {
  const std::string bad = write_config("broken.json", R"({"model_type": "llama"})");
  auto r = testing::run_kvsim("size models/qwen3-8b.json " + bad + " models/llama-2-7b.json --context 4096");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("qwen3-8b"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("llama-2-7b"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kvsim: error: " + bad + ": missing key 'hidden_size'"), std::string::npos) << r.out;
  // All failing: the error alone, exit 2.
  auto all = testing::run_kvsim("size " + bad);
  EXPECT_EQ(all.exit_code, 2);
  EXPECT_EQ(count_lines(all.out), 1) << all.out;
}

TEST(SizeOutput, AllSlidingModelShowsBytesPerTokenInsideTheWindow) {
  const std::string p = write_config("mistral-7b-v0.1.json", kMistral);
  auto r = testing::run_kvsim("size " + p + " --context 1000 --context 8192");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // 2 x 8 x 128 x 2 B x 32 layers = 131,072 B per token until 4,096 tokens; the cap 131,072 x 4,096 = 512 MiB.
  EXPECT_NE(r.out.find("131,072*"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KV bytes per token: 131,072 inside the 4,096-token window"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("512.00 MiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("125.00 MiB"), std::string::npos) << r.out;  // 1,000 x 131,072 B
  auto j = testing::run_kvsim("size " + p + " --context 1000 --format json");
  const JsonValue m = parse_json(j.out, "stdout").array()[0];
  EXPECT_EQ(m.find("kv_bytes_per_token")->integer(), 0);
  EXPECT_EQ(m.find("window_bytes_per_token")->integer(), 2 * 8 * 128 * 2 * 32);
  EXPECT_EQ(m.find("window_bytes_max")->integer(), 131072LL * 4096);
}

}  // namespace
}  // namespace kvsim
