#include "sim/perf/paged_block_term.h"

#include <gtest/gtest.h>

#include "sim/core/errors.h"
#include "sim/model/config_reader.h"
#include "sim/perf/latency_factory.h"
#include "sim/perf/roofline_model.h"
#include "sim/scenario/hardware_catalog.h"

namespace kvsim {
namespace {

LayerSpec layer(LayerKind kind, int kv_heads, int head_dim = 128, int window = 0) {
  LayerSpec l;
  l.kind = kind;
  l.attn.num_kv_heads = kv_heads;
  l.attn.head_dim = head_dim;
  l.attn.window = window;
  return l;
}

// Qwen3-8B's attention as the term sees it: 36 full-attention layers of 8 KV heads (config.json:
// num_hidden_layers 36, num_key_value_heads 8, head_dim 128).
ModelSpec qwen3_8b_attention() {
  ModelSpec m;
  m.name = "qwen3-8b-attention";
  for (int i = 0; i < 36; ++i) m.layers.push_back(layer(LayerKind::kFullAttention, 8));
  return m;
}

BatchShape decode_batch(int requests, int64_t context) {
  BatchShape b;
  b.num_tokens = requests;
  b.num_decode_requests = requests;
  b.decode_context_tokens = requests * context;
  b.decode_context_tokens_windowed = b.decode_context_tokens;
  return b;
}

TEST(PagedBlockTerm, CostPerPageIsTheSourcesDifferenceOverTheExtraPages) {
  // flash-attention PR #1999: batch 4, seqlen_k 131072, 32 heads; page 1: 9.906083 ms, page 32: 6.344819 ms.
  // Extra pages per head: 4 x 131072 - 4 x 4096 = 507,904; over 32 heads 16,252,928.
  const double by_hand = 3.561264e-3 / 16252928.0;
  EXPECT_NEAR(kPagedGatherSecondsPerPageHead, by_hand, 1e-18);
  EXPECT_NEAR(kPagedGatherSecondsPerPageHead, 2.1912e-10, 0.0001e-10);
}

TEST(PagedBlockTerm, DecodeBatchAtBlock16CostsTheExtraPagesAgainstBlock256) {
  // 64 requests of 4096 tokens: 262,144 context tokens per layer and head.
  // Pages per layer-head: 262,144 / 16 = 16,384 at block 16, 262,144 / 256 = 1,024 at block 256.
  // Extra page-heads: (16,384 - 1,024) x 36 layers x 8 heads = 4,423,680; x 2.1912e-10 s = 0.9693 ms.
  const PagedBlockTerm small(qwen3_8b_attention(), 1, 16, 256);
  const BatchShape b = decode_batch(64, 4096);
  EXPECT_NEAR(small.seconds(b), 4423680.0 * kPagedGatherSecondsPerPageHead, 1e-15);
  EXPECT_NEAR(small.seconds(b), 0.9693e-3, 0.0001e-3);
  // The other way round the same pages are saved.
  const PagedBlockTerm large(qwen3_8b_attention(), 1, 256, 16);
  EXPECT_NEAR(large.seconds(b), -small.seconds(b), 1e-15);
  EXPECT_LT(large.seconds(b), 0.0);
}

TEST(PagedBlockTerm, ZeroAtTheReferenceBlockSize) {
  const PagedBlockTerm at_ref(qwen3_8b_attention(), 1, 64, 64);
  EXPECT_FALSE(at_ref.active());
  EXPECT_EQ(at_ref.seconds(decode_batch(64, 4096)), 0.0);
  EXPECT_EQ(PagedBlockTerm().seconds(decode_batch(64, 4096)), 0.0);
  // One block either side of the reference is not 0.
  EXPECT_GT(PagedBlockTerm(qwen3_8b_attention(), 1, 32, 64).seconds(decode_batch(1, 4096)), 0.0);
  EXPECT_LT(PagedBlockTerm(qwen3_8b_attention(), 1, 128, 64).seconds(decode_batch(1, 4096)), 0.0);
}

TEST(PagedBlockTerm, HeadsFollowTensorParallelSlidingWindowsAndMla) {
  ModelSpec m;
  m.layers = {layer(LayerKind::kFullAttention, 8), layer(LayerKind::kSlidingWindow, 8, 64, 128),
              layer(LayerKind::kMla, 0), layer(LayerKind::kGatedDeltaNet, 0), layer(LayerKind::kNone, 0)};
  // TP 3: ceil(8 / 3) = 3 heads per rank for the full and the sliding layer; MLA reads one latent row.
  const PagedBlockTerm t(m, 3, 16, 32);
  EXPECT_EQ(t.heads_full(), 3 + 1);
  EXPECT_EQ(t.heads_sliding(), 3);
  BatchShape b;
  b.decode_context_tokens = 3200;
  b.decode_context_tokens_windowed = 128;
  b.num_prefill_tokens = 320;  // prefill_context_tokens left 0: each chunk reads its own tokens
  b.prefill_context_tokens_windowed = 0;
  // (1/16 - 1/32) = 1/32 per token: full 4 x (3200 + 320) / 32 = 440, sliding 3 x (128 + 320) / 32 = 42.
  EXPECT_NEAR(t.seconds(b), (440.0 + 42.0) * kPagedGatherSecondsPerPageHead, 1e-18);
  b.prefill_context_tokens = 640;  // supplied: read as given
  EXPECT_NEAR(t.seconds(b), (4 * (3200.0 + 640) / 32 + 42.0) * kPagedGatherSecondsPerPageHead, 1e-18);
}

TEST(PagedBlockTerm, RejectsBlockSizesBelowOne) {
  EXPECT_THROW(PagedBlockTerm(qwen3_8b_attention(), 1, 0, 16), InputError);
  EXPECT_THROW(PagedBlockTerm(qwen3_8b_attention(), 1, 16, 0), InputError);
}

GpuSpec toy_gpu() {
  GpuSpec g;
  g.name = "toy";
  g.bf16_flops = 100e12;
  g.hbm_bandwidth = 1e12;
  g.nvlink_bandwidth = 100e9;
  g.compute_efficiency = 0.5;
  g.memory_efficiency = 0.5;
  g.kernel_floor = Duration::us(2);
  g.step_overhead = Duration::ms(1);
  return g;
}

ModelSpec priced_model() {
  ModelSpec m = qwen3_8b_attention();
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  m.head_dim = 128;
  m.vocab_size = 151936;
  m.intermediate_size = 12288;
  m.params = 8190735360;
  m.active_params = m.params;
  return m;
}

TEST(PagedBlockTerm, RooflineAddsTheTermAndIsUnchangedAtTheReference) {
  const ModelSpec m = priced_model();
  const RooflineLatencyModel plain(m, toy_gpu(), 1, DType::kBf16, DType::kBf16);
  const RooflineLatencyModel at_ref(m, toy_gpu(), 1, DType::kBf16, DType::kBf16, PagedBlockTerm(m, 1, 16, 16));
  const RooflineLatencyModel coarse(m, toy_gpu(), 1, DType::kBf16, DType::kBf16, PagedBlockTerm(m, 1, 256, 16));
  const BatchShape b = decode_batch(64, 4096);
  EXPECT_EQ(at_ref.step_time(b), plain.step_time(b));
  // Block 256 against 16 saves the 0.9693 ms of the decode test above (rounded to whole ns once).
  const int64_t saved = plain.step_time(b).ns() - coarse.step_time(b).ns();
  EXPECT_NEAR(static_cast<double>(saved), 4423680.0 * kPagedGatherSecondsPerPageHead * 1e9, 1.0);
  EXPECT_NEAR(coarse.breakdown(b).block_s, -4423680.0 * kPagedGatherSecondsPerPageHead, 1e-15);
}

// SGLang's attention backends read the page table token by token (page 1 is its default) and measure no
// page-size cost (latency_factory.cpp, block_term_applies), so the factory prices no block term for
// engine kind sglang; vLLM at the same block 1 pays it. Both models, through the factory.
LatencyModelSpec factory_spec(const std::string& model, const std::string& engine, int block_size) {
  LatencyModelSpec s;
  s.name = model;
  s.tables_dir = std::string(KVSIM_SOURCE_DIR) + "/models/latency";
  s.engine_kind = engine;
  s.block_size = block_size;
  s.default_block_size = 16;
  return s;
}

TEST(PagedBlockTerm, FactoryPricesNoTermForSglangPages) {
  const ModelSpec m = priced_model();
  const BatchShape b = decode_batch(64, 4096);
  const GpuSpec g = toy_gpu();
  const auto time = [&](const std::string& engine, int block) {
    return make_latency_model(factory_spec("roofline", engine, block), m, g, "k")->step_time(b).ns();
  };
  // Roofline reference 16: SGLang at page 1 and at 256 costs what it costs at 16.
  EXPECT_EQ(time("sglang", 1), time("sglang", 16));
  EXPECT_EQ(time("sglang", 256), time("sglang", 16));
  // vLLM at block 1 reads 262,144 pages a layer-head instead of 16,384: (262,144 - 16,384) x 36 x 8
  // page-heads = 70,778,880 x 2.1912e-10 s = 15.51 ms more.
  EXPECT_NEAR(static_cast<double>(time("vllm", 1) - time("vllm", 16)),
              70778880.0 * kPagedGatherSecondsPerPageHead * 1e9, 1.0);
}

TEST(PagedBlockTerm, CalibratedSglangDecodeCostsTheSameAtPage1AndAtTheTablesBlock) {
  const std::string root = KVSIM_SOURCE_DIR;
  const ModelSpec m = read_model_config(root + "/models/latency/configs/llama-3.1-8b.json");
  const GpuSpec g = load_hardware_catalog(root + "/models/hardware").gpu("h200");
  const BatchShape b = decode_batch(64, 4096);
  const auto time = [&](const std::string& engine, int block) {
    return make_latency_model(factory_spec("calibrated", engine, block), m, g, "k")->step_time(b).ns();
  };
  // The tables' block is 64: vLLM there and SGLang at any page price the same attention.
  EXPECT_EQ(time("sglang", 1), time("sglang", 64));
  // Llama-3.1-8B: 32 layers x 8 KV heads; 262,144 tokens a layer-head at page 1 against 4,096 pages at 64:
  // (262,144 - 4,096) x 256 = 66,060,288 page-heads x 2.1912e-10 s = 14.48 ms, which vLLM at block 1 pays.
  EXPECT_NEAR(static_cast<double>(time("vllm", 1) - time("vllm", 64)),
              66060288.0 * kPagedGatherSecondsPerPageHead * 1e9, 1.0);
}

}  // namespace
}  // namespace kvsim
