#include "sim/perf/roofline_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/core/errors.h"

namespace kvsim {
namespace {

LayerSpec gqa_layer(int kv_heads, int head_dim, LayerKind kind = LayerKind::kFullAttention, int window = 0) {
  LayerSpec l;
  l.kind = kind;
  l.attn.num_kv_heads = kv_heads;
  l.attn.head_dim = head_dim;
  l.attn.window = window;
  return l;
}

// A made-up dense model: h = 1024, 4 full-attention layers, 8 query heads, 2 KV heads of 128,
// MLP 4096, vocab 32000, untied embeddings. Parameters (norms ignored):
//   attention q 1024*1024 + k,v 2*1024*256 + o 1024*1024 = 2,621,440
//   MLP 3*1024*4096 = 12,582,912 -> layer 15,204,352; 4 layers 60,817,408
//   embedding + LM head 2 * 32000*1024 = 65,536,000 -> params 126,353,408
ModelSpec tiny_model() {
  ModelSpec m;
  m.name = "tiny";
  m.hidden_size = 1024;
  m.num_attention_heads = 8;
  m.head_dim = 128;
  m.vocab_size = 32000;
  m.intermediate_size = 4096;
  for (int i = 0; i < 4; ++i) m.layers.push_back(gqa_layer(2, 128));
  m.params = 126353408;
  m.active_params = m.params;
  return m;
}

// A made-up GPU with round numbers: 100 TFLOP/s, 1 TB/s, efficiencies 0.5, floor 2 us, overhead 1 ms.
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

// Llama-3-8B shapes: h 4096, 32 layers, 32 q heads, 8 KV heads of 128, MLP 14336, vocab 128256.
//   per layer: q 16,777,216 + k,v 8,388,608 + o 16,777,216 + MLP 176,160,768 = 218,103,808
//   32 layers 6,979,321,856; embedding + LM head 2 * 525,336,576 -> params 8,029,995,008
ModelSpec llama8b() {
  ModelSpec m;
  m.name = "llama-8b-like";
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  m.head_dim = 128;
  m.vocab_size = 128256;
  m.intermediate_size = 14336;
  for (int i = 0; i < 32; ++i) m.layers.push_back(gqa_layer(8, 128));
  m.params = 8029995008LL;
  m.active_params = m.params;
  return m;
}

// H100 SXM: 989 TFLOP/s BF16, 3.35 TB/s, NVLink 450 GB/s; eta_c 0.7, eta_m 0.8, floor 3 us, overhead 3 ms.
GpuSpec h100() {
  GpuSpec g;
  g.name = "h100-sxm";
  g.bf16_flops = 989e12;
  g.fp8_flops = 1979e12;
  g.hbm_bandwidth = 3.35e12;
  g.nvlink_bandwidth = 450e9;
  g.compute_efficiency = 0.7;
  g.memory_efficiency = 0.8;
  g.kernel_floor = Duration::us(3);
  g.step_overhead = Duration::ms(3);
  return g;
}

BatchShape prefill(int64_t tokens, int64_t before = 0) {
  BatchShape b;
  b.num_tokens = tokens;
  b.num_prefill_tokens = tokens;
  b.num_prefill_requests = 1;
  b.prefill_attn_pairs = static_cast<double>(tokens) * (static_cast<double>(before) + (tokens + 1) / 2.0);
  b.prefill_attn_pairs_windowed = b.prefill_attn_pairs;
  b.prefill_context_tokens = before + tokens;
  b.prefill_context_tokens_windowed = before + tokens;
  return b;
}

BatchShape decode(int requests, int64_t context_each) {
  BatchShape b;
  b.num_tokens = requests;
  b.num_decode_requests = requests;
  b.decode_context_tokens = requests * context_each;
  b.decode_context_tokens_windowed = b.decode_context_tokens;
  return b;
}

}  // namespace

// Prefill of 1000 tokens from scratch on the tiny model, TP 1, BF16 weights and KV:
//   pairs = 1000 * 1001/2 = 500,500
//   F_mm   = 2 * (126,353,408 - 2 * 32,768,000) * 1000 + 2 * 32,768,000 * 1 sample
//          = 121,634,816,000 + 65,536,000
//   F_attn = 4 layers * 4 * 8 heads * 128 * 500,500 = 8,200,192,000
//   t_c    = 129,900,544,000 / (0.5 * 100e12) = 2.59801088 ms
//   bytes  = weights (126,353,408 - 32,768,000) * 2 = 187,170,816
//          + KV read 1000 tokens * 4 layers * (2 * 2 * 128 * 2 = 1024) = 4,096,000 + KV write 4,096,000
//   t_m    = 195,362,816 / (0.5 * 1e12) = 0.3907 ms  -> compute-bound
//   floor  = (4 * 8 + 3) kernels * 2 us = 70 us;  total = 2.66801088 ms + 1 ms = 3,668,011 ns
TEST(RooflineModel, PrefillMatchesHandComputedRoofline) {
  const RooflineLatencyModel model(tiny_model(), toy_gpu(), 1, DType::kBf16, DType::kBf16);
  const RooflineBreakdown r = model.breakdown(prefill(1000));
  EXPECT_DOUBLE_EQ(r.matmul_flops, 121634816000.0 + 65536000.0);
  EXPECT_DOUBLE_EQ(r.attention_flops, 8200192000.0);
  EXPECT_DOUBLE_EQ(r.weight_bytes, 187170816.0);
  EXPECT_DOUBLE_EQ(r.kv_bytes, 8192000.0);
  EXPECT_NEAR(r.compute_s, 2.59801088e-3, 1e-12);
  EXPECT_NEAR(r.memory_s, 3.90725632e-4, 1e-12);
  EXPECT_NEAR(r.floor_s, 70e-6, 1e-15);
  EXPECT_EQ(model.step_time(prefill(1000)).ns(), 3668011);
}

// Decode of 16 requests with 2000 tokens of context each on the tiny model:
//   FLOPs = 2 * 60,817,408 * 16 + 2 * 32,768,000 * 16 + 16,384 * 32,000 = 3,519,021,056
//   bytes = 187,170,816 + 4096 * 32,000 + 4096 * 16 = 318,308,352
// Neither may be beaten at full peak: t >= FLOPs / peak and t >= bytes / bandwidth.
TEST(RooflineModel, NeverBeatsThePhysicalLimit) {
  const GpuSpec g = toy_gpu();
  const RooflineLatencyModel model(tiny_model(), g, 1, DType::kBf16, DType::kBf16);
  const RooflineBreakdown r = model.breakdown(decode(16, 2000));
  const double flops = r.matmul_flops + r.attention_flops + r.state_flops;
  const double bytes = r.weight_bytes + r.kv_bytes + r.state_bytes;
  EXPECT_DOUBLE_EQ(flops, 3519021056.0);
  EXPECT_DOUBLE_EQ(bytes, 318308352.0);
  EXPECT_GE(r.total.seconds(), flops / g.bf16_flops);
  EXPECT_GE(r.total.seconds(), bytes / g.hbm_bandwidth);
  // Same on other shapes, from the breakdown's own FLOPs and bytes, at TP 1 and 2.
  for (int tp : {1, 2}) {
    const RooflineLatencyModel m(tiny_model(), g, tp, DType::kBf16, DType::kBf16);
    for (const BatchShape& b : {prefill(1), prefill(8192), prefill(512, 30000), decode(1, 1), decode(256, 8000)}) {
      const RooflineBreakdown x = m.breakdown(b);
      EXPECT_GE(x.total.seconds(), (x.matmul_flops + x.attention_flops + x.state_flops) / g.bf16_flops);
      EXPECT_GE(x.total.seconds(), (x.weight_bytes + x.kv_bytes + x.state_bytes) / g.hbm_bandwidth);
    }
  }
}

TEST(RooflineModel, GrowsWithTokens) {
  const RooflineLatencyModel model(llama8b(), h100(), 1, DType::kBf16, DType::kBf16);
  Duration prev;
  for (int64_t t : {1, 16, 128, 1024, 4096, 16384}) {
    const Duration d = model.step_time(prefill(t));
    EXPECT_GE(d, prev) << t;
    prev = d;
  }
  EXPECT_GT(model.step_time(prefill(16384)), model.step_time(prefill(1024)));
  prev = Duration();
  for (int n : {1, 8, 64, 256, 1024}) {
    const Duration d = model.step_time(decode(n, 1000));
    EXPECT_GE(d, prev) << n;
    prev = d;
  }
  EXPECT_GT(model.step_time(decode(1024, 1000)), model.step_time(decode(1, 1000)));
}

TEST(RooflineModel, GrowsWithContext) {
  const RooflineLatencyModel model(llama8b(), h100(), 1, DType::kBf16, DType::kBf16);
  Duration prev;
  for (int64_t ctx : {0, 1000, 10000, 100000, 1000000}) {
    const Duration d = model.step_time(decode(32, ctx));
    EXPECT_GE(d, prev) << ctx;
    prev = d;
  }
  EXPECT_GT(model.step_time(decode(32, 100000)), model.step_time(decode(32, 1000)));
  EXPECT_GT(model.step_time(prefill(2048, 60000)), model.step_time(prefill(2048, 0)));
}

// Llama-3-8B-like decode, batch 1, 1000 tokens of context, H100, BF16:
//   weight bytes = (8,029,995,008 - 525,336,576) * 2 = 15,009,316,864
//   t = 15,009,316,864 / (0.8 * 3.35e12) = 5.6005 ms + floor (32 * 8 + 3) * 3 us = 0.777 ms + 3 ms
//     = 9.3775 ms; KV (1000 * 32 * 4096 bytes = 131 MB, +0.05 ms) is the only other term, < 1 %.
TEST(RooflineModel, DenseDecodeAtBatchOneIsWeightStreaming) {
  const RooflineLatencyModel model(llama8b(), h100(), 1, DType::kBf16, DType::kBf16);
  EXPECT_DOUBLE_EQ(model.weight_bytes_dense(), 15009316864.0);
  const double expected = 15009316864.0 / (0.8 * 3.35e12) + 259 * 3e-6 + 3e-3;
  const double got = model.step_time(decode(1, 1000)).seconds();
  EXPECT_NEAR(got, expected, 0.01 * expected);
  EXPECT_GT(got, expected);  // the KV read only adds
  const RooflineBreakdown r = model.breakdown(decode(1, 1000));
  EXPECT_GT(r.memory_s, 10 * r.compute_s);
}

// FP8 halves the layers' weights; the LM head (128,256 x 4096 = 525,336,576) stays BF16, as vLLM keeps
// lm_head unquantised: layers 6,979,321,856 x 2 + LM head 1,050,673,152 = 15,009,316,864 bytes (BF16)
// against 6,979,321,856 + 1,050,673,152 = 8,029,995,008 (FP8).
TEST(RooflineModel, Fp8WeightsHalveWeightStreaming) {
  const RooflineLatencyModel bf16(llama8b(), h100(), 1, DType::kBf16, DType::kBf16);
  const RooflineLatencyModel fp8(llama8b(), h100(), 1, DType::kFp8, DType::kBf16);
  EXPECT_DOUBLE_EQ(bf16.weight_bytes_dense(), 15009316864.0);
  EXPECT_DOUBLE_EQ(fp8.weight_bytes_dense(), 8029995008.0);
  EXPECT_LT(fp8.step_time(prefill(8192)), bf16.step_time(prefill(8192)));  // FP8 peak for GEMMs
}

// 8192-token prefill: ~1.2e14 FLOPs -> ~178 ms at TP 1; TP 2 halves it and adds
// 64 all-reduces of 8192 * 4096 * 2 bytes (~10 ms over NVLink).
TEST(RooflineModel, TensorParallelTwoIsFasterForALargeBatch) {
  const RooflineLatencyModel tp1(llama8b(), h100(), 1, DType::kBf16, DType::kBf16);
  const RooflineLatencyModel tp2(llama8b(), h100(), 2, DType::kBf16, DType::kBf16);
  const RooflineBreakdown a = tp1.breakdown(prefill(8192));
  const RooflineBreakdown b = tp2.breakdown(prefill(8192));
  EXPECT_LT(b.total, a.total);
  EXPECT_EQ(a.allreduce_s, 0.0);
  // 64 * (5 us + 2 * (1/2) * 8192 * 4096 * 2 / 450e9)
  EXPECT_NEAR(b.allreduce_s, 64 * (5e-6 + 8192.0 * 4096 * 2 / 450e9), 1e-9);
  EXPECT_LT(tp2.step_time(decode(256, 2000)), tp1.step_time(decode(256, 2000)));
}

// MoE: 2 layers of 8 experts, top-2, expert MLP 512 on h = 1024 (3 * 1024 * 512 = 1,572,864 params).
//   params = attention 2 * 2,621,440 + experts 2 * 8 * 1,572,864 + embeddings 65,536,000 = 95,944,704
//   non-expert weight bytes = (5,242,880 + 32,768,000 LM head) * 2 = 76,021,760
//   1 token touches 8 * (1 - (1 - 2/8)^1) = 2 experts per layer: + 2 * 2 * 3,145,728 = 88,604,672
//   many tokens touch all 8: 76,021,760 + 2 * 8 * 3,145,728 = 126,353,408
TEST(RooflineModel, MoeReadsOnlyTheExpertsTouched) {
  ModelSpec m = tiny_model();
  m.layers.resize(2);
  for (auto& l : m.layers) l.moe = true;
  m.num_experts = 8;
  m.experts_per_token = 2;
  m.moe_intermediate_size = 512;
  m.params = 95944704;
  m.active_params = 5242880 + 2 * 2 * 1572864 + 65536000;
  const RooflineLatencyModel model(m, toy_gpu(), 1, DType::kBf16, DType::kBf16);
  EXPECT_DOUBLE_EQ(model.breakdown(decode(1, 10)).weight_bytes, 88604672.0);
  EXPECT_NEAR(model.breakdown(decode(1000, 10)).weight_bytes, 126353408.0, 1.0);
  EXPECT_LT(model.breakdown(decode(4, 10)).weight_bytes, model.breakdown(decode(16, 10)).weight_bytes);
}

// One full and one sliding layer (2 KV heads of 128, BF16: 1024 bytes per token each): the sliding
// layer reads only its window. 100,000 tokens of context, window-capped at 4096:
//   KV = 1024 * 100,000 + 1024 * 4096 + write 2 * 1024 * 1 token = 106,596,352
TEST(RooflineModel, SlidingLayersReadOnlyTheWindow) {
  ModelSpec m = tiny_model();
  m.layers = {gqa_layer(2, 128), gqa_layer(2, 128, LayerKind::kSlidingWindow, 4096)};
  const RooflineLatencyModel model(m, toy_gpu(), 1, DType::kBf16, DType::kBf16);
  BatchShape b = decode(1, 100000);
  b.decode_context_tokens_windowed = 4096;
  EXPECT_DOUBLE_EQ(model.breakdown(b).kv_bytes, 106596352.0);
}

// MLA rows are replicated on every TP rank; GQA heads are split (and replicated below one per rank).
TEST(RooflineModel, KvBytesPerRankFollowTensorParallelSplit) {
  ModelSpec m = tiny_model();
  m.layers = {gqa_layer(2, 128)};
  EXPECT_DOUBLE_EQ(RooflineLatencyModel(m, toy_gpu(), 1, DType::kBf16, DType::kBf16).kv_read_bytes_per_token_full(),
                   1024.0);
  EXPECT_DOUBLE_EQ(RooflineLatencyModel(m, toy_gpu(), 2, DType::kBf16, DType::kBf16).kv_read_bytes_per_token_full(),
                   512.0);
  EXPECT_DOUBLE_EQ(RooflineLatencyModel(m, toy_gpu(), 4, DType::kBf16, DType::kBf16).kv_read_bytes_per_token_full(),
                   512.0);
  LayerSpec mla;
  mla.kind = LayerKind::kMla;
  mla.attn.kv_lora_rank = 512;
  mla.attn.qk_rope_head_dim = 64;
  m.layers = {mla};
  EXPECT_DOUBLE_EQ(RooflineLatencyModel(m, toy_gpu(), 4, DType::kBf16, DType::kBf16).kv_read_bytes_per_token_full(),
                   1152.0);
}

// A Mamba2 layer: state 8 heads x 64 x 128 = 65,536 elements (BF16), conv 2048 x 3 rows (BF16).
// One request reads and writes it: 2 * (65,536 * 2 + 6,144 * 2) = 286,720 bytes; FLOPs are linear
// in tokens: 6 * 65,536 + 2 * 2048 * 4 = 409,600 per token.
TEST(RooflineModel, StateLayersCostStateBytesAndLinearFlops) {
  ModelSpec m = tiny_model();
  LayerSpec s;
  s.kind = LayerKind::kMamba2;
  s.state.conv_dim = 2048;
  s.state.conv_rows = 3;
  s.state.ssm_heads = 8;
  s.state.ssm_head_dim = 64;
  s.state.ssm_state_dim = 128;
  m.layers = {gqa_layer(2, 128), s};
  const RooflineLatencyModel model(m, toy_gpu(), 1, DType::kBf16, DType::kBf16);
  BatchShape b = decode(1, 100);
  b.state_requests = 1;
  const RooflineBreakdown r = model.breakdown(b);
  EXPECT_DOUBLE_EQ(r.state_bytes, 286720.0);
  EXPECT_DOUBLE_EQ(r.state_flops, 409600.0);
  BatchShape p = prefill(1000);
  EXPECT_DOUBLE_EQ(model.breakdown(p).state_flops, 409600.0 * 1000);
}

TEST(RooflineModel, SparseMlaReadsTopKRowsButEveryIndexerKey) {
  // The tiny model with one sparse MLA layer: latent 512 + rope 64 = 576 B per token in FP8, indexer key 128 B; no
  // other layer. Decode at context 100,000 with top-k 2,048 reads 2,048 x 576 + 100,000 x 128 bytes of cache (+ 704 B
  // written for the new token), not 100,000 x 704.
  ModelSpec m = tiny_model();
  LayerSpec l;
  l.kind = LayerKind::kSparseMla;
  l.attn.kv_lora_rank = 512;
  l.attn.qk_rope_head_dim = 64;
  l.attn.index_head_dim = 128;
  l.attn.index_n_heads = 64;
  l.attn.index_topk = 2048;
  m.layers = {l};
  const RooflineLatencyModel model(m, toy_gpu(), 1, DType::kBf16, DType::kFp8);
  BatchShape b;
  b.num_tokens = 1;
  b.num_decode_requests = 1;
  b.decode_context_tokens = 100000;
  b.decode_context_tokens_sparse = 2048;
  EXPECT_DOUBLE_EQ(model.breakdown(b).kv_bytes, 2048.0 * 576 + 100000.0 * 128 + 704);
  // Without the sparse aggregates the layer is priced dense: every row read.
  b.decode_context_tokens_sparse = 0;
  EXPECT_DOUBLE_EQ(model.breakdown(b).kv_bytes, 100000.0 * 704 + 704);
}

TEST(RooflineModel, EmptyBatchCostsNothing) {
  const RooflineLatencyModel model(tiny_model(), toy_gpu(), 1, DType::kBf16, DType::kBf16);
  EXPECT_EQ(model.step_time(BatchShape{}).ns(), 0);
  EXPECT_EQ(model.name(), "roofline");
}

TEST(RooflineModel, RejectsSpecsItCannotPrice) {
  EXPECT_THROW(RooflineLatencyModel(tiny_model(), toy_gpu(), 0, DType::kBf16, DType::kBf16), InputError);
  ModelSpec no_params = tiny_model();
  no_params.params = 0;
  EXPECT_THROW(RooflineLatencyModel(no_params, toy_gpu(), 1, DType::kBf16, DType::kBf16), InputError);
  GpuSpec no_link = toy_gpu();
  no_link.nvlink_bandwidth = 0;
  no_link.pcie_bandwidth = 0;
  EXPECT_NO_THROW(RooflineLatencyModel(tiny_model(), no_link, 1, DType::kBf16, DType::kBf16));
  EXPECT_THROW(RooflineLatencyModel(tiny_model(), no_link, 2, DType::kBf16, DType::kBf16), InputError);
}

}  // namespace kvsim
