// ParallelTerms (sim/perf/parallel_terms.h) and the layout terms of the roofline model: the MoE
// all-to-all bytes per token per layer, the all-gather / reduce-scatter of DP without dispatch kernels,
// the split of all-to-all traffic between NVLink and the NIC, and a multi-node TP all-reduce priced by
// NCCL's model over the NIC. Expected values are hand formulas over the inputs written out in each test.
#include "sim/perf/parallel_terms.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "sim/core/errors.h"
#include "sim/perf/roofline_model.h"

namespace kvsim {
namespace {

// NVLink4 and IB NDR as models/hardware/links.yaml prices them: 450 GB/s x 0.8 + 5 us; 50 GB/s x 0.7 + 17 us.
ParallelPlan hgx_plan(int tp, int dp, bool ep, const std::string& backend) {
  ParallelPlan p;
  p.tp = tp;
  p.dp = dp;
  p.expert_parallel = ep;
  p.all2all_backend = backend;
  p.gpus_per_node = 8;
  p.intra = {450e9 * 0.8, 5e-6};
  p.inter = {50e9 * 0.7, 17e-6};
  return p;
}

TEST(AllToAll, DispatchBytesPerTokenPerLayerFollowTheDerivation) {
  // DeepSeek-V3 shapes: h 7168, top-8 of 256 experts. EP = DP 16 x TP 1 = 16: a token's hidden state
  // (7168 x 2 B) goes to each of its 8 experts, 15 of 16 of which live on another rank:
  // 7168 x 2 x 8 x 15 / 16 = 107,520 B; the combine returns as many.
  const ParallelTerms t(hgx_plan(1, 16, true, "deepep_low_latency"), 7168, 8, 256, 58);
  EXPECT_EQ(t.ep(), 16);
  EXPECT_DOUBLE_EQ(t.dispatch_bytes_per_token(), 107520.0);
  // EP 2 (DP 2 x TP 1): half the copies stay local: 7168 x 2 x 8 / 2 = 57,344 B.
  EXPECT_DOUBLE_EQ(ParallelTerms(hgx_plan(1, 2, true, "pplx"), 7168, 8, 256, 58).dispatch_bytes_per_token(), 57344.0);
}

TEST(AllToAll, TrafficSplitsBetweenNvlinkAndTheNic) {
  // EP 16 over two 8-GPU nodes: of a token's 8 expert copies, 7/16 go to the 7 peers on its node and
  // 8/16 to the 8 on the other. 64 tokens: 64 x 7168 x 2 x 8 = 7,340,032 B in all,
  // NVLink 3,211,264 B / 360 GB/s, NIC 3,670,016 B / 35 GB/s (the slower), latency the NIC's 17 us.
  const ParallelTerms t(hgx_plan(1, 16, true, "deepep_high_throughput"), 7168, 8, 256, 58);
  const double per_layer = 17e-6 + std::max(3211264.0 / 360e9, 3670016.0 / 35e9);
  EXPECT_NEAR(t.moe_comm_seconds(64), 58 * 2 * per_layer, 1e-12);  // dispatch + combine, 58 MoE layers
  // Within one node (EP 8): all 7/8 of the copies on NVLink at its 5 us.
  const ParallelTerms one(hgx_plan(1, 8, true, "deepep_high_throughput"), 7168, 8, 256, 58);
  EXPECT_NEAR(one.moe_comm_seconds(64), 58 * 2 * (5e-6 + 7340032.0 * 7 / 8 / 360e9), 1e-12);
}

TEST(AllToAll, DefaultBackendGathersAndReduceScattersOverDpRanks) {
  // vLLM's default allgather_reducescatter (and DP without EP): each GPU receives the other 3 DP ranks'
  // 100 tokens x 4096 x 2 B = 2,457,600 B, and reduce-scatters as many back, on NVLink (8 GPUs, one node).
  const double bytes = 3 * 100 * 4096 * 2.0;
  const double expect = 48 * 2 * (5e-6 + bytes / 360e9);
  EXPECT_NEAR(ParallelTerms(hgx_plan(2, 4, true, "allgather_reducescatter"), 4096, 8, 128, 48).moe_comm_seconds(100),
              expect, 1e-12);
  EXPECT_NEAR(ParallelTerms(hgx_plan(2, 4, false, "allgather_reducescatter"), 4096, 8, 128, 48).moe_comm_seconds(100),
              expect, 1e-12);
}

TEST(AllToAll, AGatherAcrossNodesUsesTheNicsOfTheDpGroupOnANode) {
  // DP 16 x TP 1 over two 8-GPU nodes: rank 0's DP ring has 8 GPUs on each node, whose 8 NICs carry it
  // (NCCL spreads a ring's channels over them): min(360, 8 x 35 = 280) GB/s at the NIC's 17 us. 400
  // tokens a rank, h 2048: 15 x 400 x 2048 x 2 B each way per layer.
  const double bytes = 15 * 400 * 2048 * 2.0;
  EXPECT_NEAR(ParallelTerms(hgx_plan(1, 16, false, "allgather_reducescatter"), 2048, 8, 128, 48).moe_comm_seconds(400),
              48 * 2 * (17e-6 + bytes / 280e9), 1e-12);
  // DP 2 x TP 8: one GPU of each DP ring per node, one NIC: 35 GB/s.
  const double two = 1 * 400 * 2048 * 2.0;
  EXPECT_NEAR(ParallelTerms(hgx_plan(8, 2, false, "allgather_reducescatter"), 2048, 8, 128, 48).moe_comm_seconds(400),
              48 * 2 * (17e-6 + two / 35e9), 1e-12);
}

TEST(AllToAll, NothingWithoutDataParallelismOrExperts) {
  // TP-only EP combines through the TP all-reduce (vLLM uses all-to-all kernels only when DP > 1).
  EXPECT_EQ(ParallelTerms(hgx_plan(8, 1, true, "deepep_low_latency"), 7168, 8, 256, 58).moe_comm_seconds(64), 0.0);
  EXPECT_EQ(ParallelTerms(hgx_plan(1, 8, false, "naive"), 4096, 0, 0, 0).moe_comm_seconds(64), 0.0);  // dense
}

TEST(AllToAll, UnknownBackendNamesTheKnownOnes) {
  try {
    is_dispatch_combine_backend("nccl", "engine.all2all_backend");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("engine.all2all_backend: unknown all2all backend 'nccl'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("deepep_low_latency"), std::string::npos);
  }
}

LayerSpec gqa_layer() {
  LayerSpec l;
  l.kind = LayerKind::kFullAttention;
  l.attn.num_kv_heads = 2;
  l.attn.head_dim = 128;
  return l;
}

// The roofline test's tiny dense model: h 1024, 4 layers, 126,353,408 parameters.
ModelSpec tiny_model() {
  ModelSpec m;
  m.name = "tiny";
  m.hidden_size = 1024;
  m.num_attention_heads = 16;
  m.head_dim = 128;
  m.vocab_size = 32000;
  m.intermediate_size = 4096;
  for (int i = 0; i < 4; ++i) m.layers.push_back(gqa_layer());
  m.params = 126353408;
  m.active_params = m.params;
  return m;
}

GpuSpec toy_gpu() {
  GpuSpec g;
  g.name = "toy";
  g.bf16_flops = 100e12;
  g.hbm_bandwidth = 1e12;
  g.nvlink_bandwidth = 100e9;
  g.kernel_floor = Duration::us(2);
  g.step_overhead = Duration::ms(1);
  return g;
}

BatchShape decode_batch(int n) {
  BatchShape b;
  b.num_tokens = n;
  b.num_decode_requests = n;
  b.decode_context_tokens = 1000LL * n;
  return b;
}

TEST(MultiNodeTp, AllReduceRunsThroughTheNic) {
  // TP 16 over 8-GPU nodes: two all-reduces per layer through NCCL. The roofline takes NCCL's least
  // latency, Tree LL over 2 nodes of NVLink GPUs: 6.8 + 2 x ((8 - 1) x 0.6 + log2(2) x 5.0) = 25.2 us
  // (NCCL tuning.cc constants), plus the ring's traffic at the bus bandwidth: the channels leave the node
  // through its 8 NICs at once (8 x 35 = 280 GB/s, below NVLink's 360 GB/s, so the NICs bound it):
  // 2 x 15/16 x (100 tokens x 1024 x 2 B) / 280 GB/s; 4 layers.
  const RooflineLatencyModel m(tiny_model(), toy_gpu(), 16, DType::kBf16, DType::kBf16, {},
                               hgx_plan(16, 1, false, "naive"));
  const double per = 25.2e-6 + 2.0 * 15 / 16 * (100 * 1024 * 2.0) / 280e9;
  // With a NIC faster than NVLink / 8 the ring is NVLink-bound: 360 GB/s.
  ParallelPlan fast = hgx_plan(16, 1, false, "naive");
  fast.inter = {100e9, 17e-6};
  const RooflineLatencyModel nvlink_bound(tiny_model(), toy_gpu(), 16, DType::kBf16, DType::kBf16, {}, fast);
  EXPECT_NEAR(nvlink_bound.breakdown(decode_batch(100)).allreduce_s,
              8 * (25.2e-6 + 2.0 * 15 / 16 * (100 * 1024 * 2.0) / 360e9), 1e-12);
  EXPECT_NEAR(m.breakdown(decode_batch(100)).allreduce_s, 8 * per, 1e-12);
  // TP 8 stays on the GPU's NVLink (100 GB/s here) with the 5 us custom all-reduce, as before.
  const RooflineLatencyModel in_node(tiny_model(), toy_gpu(), 8, DType::kBf16, DType::kBf16, {},
                                     hgx_plan(8, 1, false, "naive"));
  EXPECT_NEAR(in_node.breakdown(decode_batch(100)).allreduce_s, 8 * (5e-6 + 2.0 * 7 / 8 * 204800.0 / 100e9), 1e-12);
}

TEST(MultiNodeTp, TheCalibratedModelsAllReduceIsNcclsModel) {
  // ParallelTerms prices one cross-node all-reduce with NCCL's model over the TP group's layout: TP 64 on
  // 8 nodes of 8 NVLink GPUs, a decode-sized message (4 tokens x 7168 x 2 B): Tree LL's latency
  // 6.8 + 2 x (7 x 0.6 + 3 x 5.0) = 45.2 us plus the traffic 2 x 63/64 x 57,344 B / 280 GB/s at
  // Tree LL's share of the bus bandwidth, 0.92 / 3.8 (the other five choices are slower here: Tree
  // LL128 82.5 us, Ring LL 156.4 us before their traffic).
  const ParallelTerms t(hgx_plan(64, 1, false, "naive"), 7168, 8, 256, 58);
  ASSERT_TRUE(t.tp_crosses_nodes());
  const double traffic = 2.0 * 63 / 64 * 57344.0 / 280e9;
  EXPECT_NEAR(t.cross_node_allreduce_seconds(57344.0), 45.2e-6 + traffic / (0.92 / 3.8), 1e-12);
  EXPECT_NEAR(t.cross_node_allreduce_traffic_seconds(57344.0), traffic, 1e-15);
  // Within a node there is nothing to price here (the custom all-reduce tables do it).
  EXPECT_EQ(ParallelTerms(hgx_plan(8, 1, false, "naive"), 7168, 8, 256, 58).cross_node_allreduce_seconds(1.0), -1.0);
}

TEST(MultiNodeTp, WithoutANodeSizeEveryGpuSharesNvlink) {
  // The default plan (gpus_per_node 0) keeps the model as before the layout: TP 16 on the GPU's NVLink.
  const RooflineLatencyModel m(tiny_model(), toy_gpu(), 16, DType::kBf16, DType::kBf16);
  EXPECT_NEAR(m.breakdown(decode_batch(100)).allreduce_s, 8 * (5e-6 + 2.0 * 15 / 16 * 204800.0 / 100e9), 1e-12);
}

TEST(MultiNodeTp, NeedsAnInterNodeLink) {
  ParallelPlan p = hgx_plan(16, 1, false, "naive");
  p.inter = {};
  EXPECT_THROW(RooflineLatencyModel(tiny_model(), toy_gpu(), 16, DType::kBf16, DType::kBf16, {}, p), InputError);
}

TEST(DataParallelMoe, ExpertsSeeEveryDpRanksTokens) {
  // One MoE layer of 64 experts, top-2, moe_intermediate 512, h 1024; 1 decode token per DP rank.
  // Expert bytes per GPU read in a step: touched experts E (1 - (1 - k/E)^(DP x N)) x 3 h I x 2 B / (DP x TP).
  ModelSpec m = tiny_model();
  m.layers.resize(1);
  m.layers[0].moe = true;
  m.num_experts = 64;
  m.experts_per_token = 2;
  m.moe_intermediate_size = 512;
  const double expert = 3.0 * 1024 * 512;
  m.params = static_cast<int64_t>(64 * expert) + 2 * 32000 * 1024 + 4000000;
  m.active_params = m.params;
  const RooflineLatencyModel dp1(m, toy_gpu(), 1, DType::kBf16, DType::kBf16);
  const RooflineLatencyModel dp4(m, toy_gpu(), 1, DType::kBf16, DType::kBf16, {}, hgx_plan(1, 4, true, "naive"));
  const auto touched = [](double tokens) { return 64 * (1 - std::pow(1 - 2.0 / 64, tokens)); };
  const double fixed = dp1.breakdown(decode_batch(1)).weight_bytes - touched(1) * expert * 2;
  // DP 4 x TP 1 with EP: 16 experts per GPU, the 4 ranks' 4 tokens touch 64 (1 - (62/64)^4) of all experts.
  EXPECT_NEAR(dp4.breakdown(decode_batch(1)).weight_bytes, fixed + touched(4) * expert * 2 * 16 / 64, 1e-3);
}

}  // namespace
}  // namespace kvsim
