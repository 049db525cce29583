// Parallel layouts (sim/model/parallel_layout.h): pipeline stage splits as vLLM's get_pp_indices makes
// them, weights per GPU under EP, DP and PP, and KV bytes per token per GPU under PP. Every expected value
// is worked out by hand in the comments from the made-up model's shapes, not read from a run.
#include "sim/model/parallel_layout.h"

#include <gtest/gtest.h>

#include "sim/core/errors.h"
#include "sim/model/config_reader.h"

namespace kvsim {
namespace {

std::vector<int> counts(const std::vector<StageRange>& s) {
  std::vector<int> out;
  for (const auto& r : s) out.push_back(r.count);
  return out;
}

TEST(PipelineStages, RemainderGoesToTheStagesBeforeTheLast) {
  // vllm/distributed/utils.py get_pp_indices: L // PP each, then partitions[-i] += 1 for i = 2 .. r + 1.
  EXPECT_EQ(counts(pipeline_stages(61, 4)), (std::vector<int>{15, 15, 16, 15}));  // 61 = 4 x 15 + 1
  EXPECT_EQ(counts(pipeline_stages(22, 4)), (std::vector<int>{5, 6, 6, 5}));      // 22 = 4 x 5 + 2
  EXPECT_EQ(counts(pipeline_stages(61, 2)), (std::vector<int>{31, 30}));
  EXPECT_EQ(counts(pipeline_stages(4, 3)), (std::vector<int>{1, 2, 1}));
  EXPECT_EQ(counts(pipeline_stages(36, 1)), (std::vector<int>{36}));
  const auto s = pipeline_stages(61, 4);
  EXPECT_EQ(s[3].first, 46);  // 15 + 15 + 16
}

LayerSpec moe_layer() {
  LayerSpec l;
  l.kind = LayerKind::kFullAttention;
  l.attn.num_kv_heads = 2;
  l.attn.head_dim = 128;
  l.moe = true;
  return l;
}

// A made-up MoE model: h 1024, 4 MoE layers of 8 experts (moe_intermediate 512), vocab 1000, untied.
//   experts   4 x 8 x 3 x 1024 x 512                 = 50,331,648
//   embedding + LM head 2 x 1000 x 1024              =  2,048,000
//   the rest (attention, router, norms) 4 x 4,000,000 = 16,000,000  -> params 68,379,648
ModelSpec toy_moe() {
  ModelSpec m;
  m.name = "toy-moe";
  m.hidden_size = 1024;
  m.num_attention_heads = 8;
  m.head_dim = 128;
  m.vocab_size = 1000;
  m.num_experts = 8;
  m.experts_per_token = 2;
  m.moe_intermediate_size = 512;
  for (int i = 0; i < 4; ++i) m.layers.push_back(moe_layer());
  m.params = 68379648;
  m.active_params = m.params;
  return m;
}

TEST(WeightsPerGpu, WithoutDpPpOrEpItIsTheTpShare) {
  const ModelSpec m = toy_moe();
  EXPECT_EQ(expert_params(m), 50331648);
  EXPECT_EQ(embedding_params(m), 2048000);
  // BF16: 2 x 68,379,648 = 136,759,296 B over TP 2.
  EXPECT_EQ(weight_bytes_per_gpu(m, DType::kBf16, Parallel{2, 1}), 68379648);
}

TEST(WeightsPerGpu, ExpertsShardOverDpTimesTp) {
  const ModelSpec m = toy_moe();
  // DP 4 x TP 2, EP 8: one whole expert per GPU. Dense part (16,000,000 + 2,048,000) / TP 2 = 9,024,000;
  // experts 50,331,648 / 8 = 6,291,456; x 2 bytes = 30,630,912.
  Parallel ep{2, 1, 4, 1, true};
  EXPECT_EQ(expert_parallel_size(m, ep), 8);
  EXPECT_EQ(experts_per_rank(m, ep), 1);
  EXPECT_EQ(weight_bytes_per_gpu(m, DType::kBf16, ep), 30630912);
  // Without EP vLLM tensor-splits every expert DP x TP = 8 ways: the same bytes.
  Parallel no_ep{2, 1, 4, 1, false};
  EXPECT_EQ(expert_parallel_size(m, no_ep), 1);
  EXPECT_EQ(weight_bytes_per_gpu(m, DType::kBf16, no_ep), 30630912);
}

TEST(WeightsPerGpu, UnevenExpertSplitLoadsTheBusiestRank) {
  const ModelSpec m = toy_moe();
  // DP 3 x TP 2 = EP 6 over 8 experts: ranks hold 2, 2, 1, 1, 1, 1 (determine_expert_map), busiest 2 / 8.
  // 2 x (9,024,000 + 50,331,648 x 2 / 8) = 2 x (9,024,000 + 12,582,912) = 43,213,824.
  Parallel ep{2, 1, 3, 1, true};
  EXPECT_EQ(experts_per_rank(m, ep), 2);
  EXPECT_EQ(weight_bytes_per_gpu(m, DType::kBf16, ep), 43213824);
  // TP-split experts instead: 2 x (9,024,000 + 50,331,648 / 6) = 2 x 17,412,608 = 34,825,216.
  EXPECT_EQ(weight_bytes_per_gpu(m, DType::kBf16, Parallel{2, 1, 3, 1, false}), 34825216);
}

TEST(WeightsPerGpu, EpTimesMoeTpSplitsEachExpertInsideItsEpGroup) {
  const ModelSpec m = toy_moe();
  // DP 3 x TP 2 = 6 GPUs, EP 3 (SGLang --ep-size / TensorRT-LLM moe_expert_parallel_size): moe-TP 6 / 3 = 2,
  // ceil(8 / 3) = 3 experts on the busiest EP rank, each split 2 ways: 3 / 8 / 2 = 3 / 16 of the experts.
  // 2 x (9,024,000 + 50,331,648 x 3 / 16) = 2 x (9,024,000 + 9,437,184) = 36,922,368.
  const Parallel ep3{2, 1, 3, 1, true, 3};
  EXPECT_EQ(expert_parallel_size(m, ep3), 3);
  EXPECT_EQ(moe_tensor_parallel_size(m, ep3), 2);
  EXPECT_EQ(experts_per_rank(m, ep3), 3);
  EXPECT_DOUBLE_EQ(expert_weight_share(m, ep3), 3.0 / 16);
  EXPECT_EQ(weight_bytes_per_gpu(m, DType::kBf16, ep3), 36922368);
  // EP 2 x moe-TP 3: 4 experts a rank split 3 ways, 4 / 8 / 3 = 1 / 6, as the plain DP x TP split.
  const Parallel ep2{2, 1, 3, 1, true, 2};
  EXPECT_EQ(moe_tensor_parallel_size(m, ep2), 3);
  EXPECT_EQ(weight_bytes_per_gpu(m, DType::kBf16, ep2), 34825216);
  // TP 4, EP 2 x moe-TP 2: dense 18,048,000 / 4 = 4,512,000; experts 4 / 8 / 2 = 1 / 4 of 50,331,648 =
  // 12,582,912; x 2 bytes = 34,189,824.
  EXPECT_EQ(weight_bytes_per_gpu(m, DType::kBf16, Parallel{4, 1, 1, 1, true, 2}), 34189824);
  // ep 0 is vLLM's EP = DP x TP; moe-TP 1.
  EXPECT_EQ(moe_tensor_parallel_size(m, Parallel{2, 1, 3, 1, true}), 1);
  EXPECT_EQ(moe_tensor_parallel_size(m, Parallel{2, 1, 3, 1, false}), 6);
}

TEST(WeightsPerGpu, PipelineStagesHoldTheirLayersAndTheEmbeddingEnds) {
  const ModelSpec m = toy_moe();
  // PP 3 over 4 layers: [1, 2, 1]. Per layer: rest 4,000,000, experts 12,582,912; one table 1,024,000.
  //   stage 0: 4,000,000 + 12,582,912 + embedding 1,024,000 = 17,606,912 -> 35,213,824 B
  //   stage 1: 2 x (4,000,000 + 12,582,912)                 = 33,165,824 -> 66,331,648 B
  //   stage 2: like stage 0 with the LM head                               -> 35,213,824 B
  const Parallel pp{1, 1, 1, 3, false};
  EXPECT_EQ(weight_bytes_per_stage(m, DType::kBf16, pp), (std::vector<int64_t>{35213824, 66331648, 35213824}));
  EXPECT_EQ(weight_bytes_per_gpu(m, DType::kBf16, pp), 66331648);
}

TEST(WeightsPerGpu, AMixedCheckpointShardsItsExpertsInTheirOwnDtype) {
  // gpt-oss-120b's checkpoint: MXFP4 routed experts, everything else BF16 (modules_to_not_convert).
  //   experts: 36 layers x 128 x (2880 x 5760 + 2880 x 2880) = 114,661,785,600 params;
  //            MXFP4 = 4 bits + an E8M0 byte per 32: 57,330,892,800 + 3,583,180,800 = 60,914,073,600 B;
  //            their BF16 biases 36 x 128 x (5760 + 2880) = 39,813,120 params = 79,626,240 B.
  //   the rest: 116,829,156,672 - 114,661,785,600 - 39,813,120 = 2,127,557,952 params = 4,255,115,904 B.
  // DP 8 with EP (EP 8, 16 experts a rank): every rank holds the rest whole and an eighth of the experts:
  //   4,255,115,904 + (60,914,073,600 + 79,626,240) / 8 = 11,879,328,384 B. (The checkpoint's average
  //   0.5585 B per parameter gave 9,215,264,765.)
  const ModelSpec m = read_model_config(std::string(KVSIM_SOURCE_DIR) + "/models/gpt-oss-120b.json");
  EXPECT_EQ(m.params, 116829156672);
  EXPECT_EQ(m.checkpoint_expert_bytes, 60914073600 + 79626240);
  EXPECT_EQ(weight_bytes_per_gpu(m, std::nullopt, Parallel{1, 1, 8, 1, true}), 11879328384);
  // PP 4 over 36 layers: [9, 9, 9, 9]. Of the rest, two 201,088 x 2880 tables (embedding, LM head:
  // 579,133,440 params each) and 2,127,557,952 - 1,158,266,880 = 969,291,072 in the layers, a quarter
  // (242,322,768) a stage. The first stage: (242,322,768 + 579,133,440) x 2 B = 1,642,912,416 B, plus a
  // quarter of the experts (60,914,073,600 + 79,626,240) / 4 = 15,248,424,960 B.
  EXPECT_EQ(weight_bytes_per_gpu(m, std::nullopt, Parallel{1, 1, 1, 4, false}), 1642912416 + 15248424960);
}

TEST(WeightsPerGpu, TensorParallelKeepsReplicatedModulesWholeOnEveryRank) {
  // DeepSeek-V3 at TP 8 (FP8 block-scaled, 128 x 128 FP32 scales): vLLM builds q_a_proj and
  // kv_a_proj_with_mqa as ReplicatedLinear, the router as a replicated gate, and every rank has the
  // norms. Per layer (61): q_a 7168 x 1536 and kv_a 7168 x 576 in FP8 = 15,138,816 B + scales
  // (12 x 56 + 5 x 56) x 4 = 3,808 B; norms 2 x 7168 + 1536 + 512 = 16,384 params = 32,768 B. Per MoE
  // layer (58): router 256 x 7168 + bias 256 = 1,835,264 params = 3,670,528 B. Final norm 14,336 B.
  //   R = 61 x (15,138,816 + 3,808 + 32,768) + 58 x 3,670,528 + 14,336 = 1,138,603,872 B
  // Per GPU: total / 8 + R x 7 / 8 (the K / V projections are MLA's, inside the rest).
  const ModelSpec m = read_model_config(std::string(KVSIM_SOURCE_DIR) + "/models/deepseek-v3.json");
  const int64_t total = 673150582112, r = 61LL * (15138816 + 3808 + 32768) + 58LL * 3670528 + 14336;
  EXPECT_EQ(m.checkpoint_weight_bytes, total);
  EXPECT_EQ(m.tp_replicated.bytes, r);
  EXPECT_NEAR(static_cast<double>(weight_bytes_per_gpu(m, std::nullopt, Parallel{8, 1})),
              static_cast<double>(total) / 8 + static_cast<double>(r) * 7 / 8, 1.0);
}

TEST(KvPerGpu, PipelineStageStoresOnlyItsLayers) {
  const ModelSpec m = toy_moe();
  // 2 KV heads x 128 x 2 (K, V) x 2 B = 1,024 B per layer per token; 4 layers 4,096 B.
  EXPECT_EQ(pipeline_kv_bytes_per_token(m, DType::kBf16, Parallel{1, 1}), 4096);
  // PP 3 [1, 2, 1]: the middle stage stores 2 layers, 2,048 B; at TP 2 one KV head a rank, 1,024 B.
  EXPECT_EQ(pipeline_kv_bytes_per_token(m, DType::kBf16, Parallel{1, 1, 1, 3, false}), 2048);
  EXPECT_EQ(pipeline_kv_bytes_per_token(m, DType::kBf16, Parallel{2, 1, 1, 3, false}), 1024);
}

TEST(KvPerGpu, PipelineBlocksAreTheSmallestStagesCount) {
  const ModelSpec m = toy_moe();
  // Block 16: one block of one layer is 16 x 1,024 = 16,384 B. Stage available bytes 1 MiB, 1 MiB,
  // 1 MiB: stage 0 (1 layer) 64 blocks, stage 1 (2 layers) 32, stage 2 (1 layer) 64 -> 32.
  const Parallel pp{1, 1, 1, 3, false};
  const int64_t blocks = pipeline_kv_blocks(m, 16, DType::kBf16, {}, pp, {1 << 20, 1 << 20, 1 << 20});
  EXPECT_EQ(blocks, 32);
}

TEST(CheckLayout, RejectsMoreStagesThanLayersAndMoreRanksThanExperts) {
  const ModelSpec m = toy_moe();
  EXPECT_NO_THROW(check_layout(m, Parallel{1, 1, 1, 4, false}));
  EXPECT_THROW(check_layout(m, Parallel{1, 1, 1, 5, false}), InputError);
  EXPECT_NO_THROW(check_layout(m, Parallel{2, 1, 4, 1, true}));              // EP 8 = 8 experts
  EXPECT_THROW(check_layout(m, Parallel{2, 1, 8, 1, true}), InputError);     // EP 16 > 8 experts
  EXPECT_NO_THROW(check_layout(m, Parallel{2, 1, 8, 1, false}));             // without EP the experts just split finer
  EXPECT_NO_THROW(check_layout(m, Parallel{2, 1, 3, 1, true, 3}));           // EP 3 divides dp x tp = 6
  EXPECT_THROW(check_layout(m, Parallel{2, 1, 3, 1, true, 4}), InputError);  // EP 4 does not
}

}  // namespace
}  // namespace kvsim
