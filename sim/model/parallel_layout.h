#pragma once
// How one engine's GPUs split a model beyond tensor parallelism: attention data parallelism (DP),
// expert parallelism (EP), pipeline stages (PP), and where the GPUs sit (GPUs per node). Follows vLLM:
//  * MoE layers shard over all DP x TP GPUs of the DP group (vllm/model_executor/layers/fused_moe/
//    config.py, FusedMoEParallelConfig.make / flatten_tp_across_dp_and_pcp): without EP every expert
//    is tensor-split DP x TP ways; with enable_expert_parallel EP = DP x TP and each GPU holds whole
//    experts (tp = 1 inside the expert), experts per rank as determine_expert_map gives them.
//  * Attention and dense layers are replicated per DP rank, each DP rank holding its own KV cache and
//    requests (vllm/config/parallel.py, data_parallel_size).
//  * Pipeline stages take contiguous layers, the remainder going to the stages before the last
//    (vllm/distributed/utils.py get_pp_indices); the embedding sits on the first stage, the LM head
//    on the last (and, with tied embeddings, the embedding there too, as vLLM's llama.py builds it).
// Sizing (weights and KV capacity per GPU) and the latency models both read this layout.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/model/dtype.h"
#include "sim/model/model_spec.h"
#include "sim/model/sizing.h"

namespace kvsim {

// One pipeline stage: layers [first, first + count).
struct StageRange {
  int first = 0;
  int count = 0;
};
// vLLM get_pp_indices: L // PP layers each, the L % PP extra layers on the stages before the last.
std::vector<StageRange> pipeline_stages(int num_layers, int pp);

// The part of `model` one stage runs, as a ModelSpec the sizing and latency code can price: its
// layers, its share of the non-embedding parameters (whole layers' worth, pro rata by layer count),
// and the embedding / LM head only where the stage holds them (vocab_size 0 on a middle stage, so
// the LM head costs nothing there).
ModelSpec stage_model(const ModelSpec& model, const StageRange& stage, bool last);

// EP size: par.ep (DP x TP when 0) with enable_expert_parallel and a MoE model, else 1.
int expert_parallel_size(const ModelSpec& model, const Parallel& par);
// The ways each expert is tensor-split: DP x TP / EP (1 under vLLM's EP, DP x TP without EP).
int moe_tensor_parallel_size(const ModelSpec& model, const Parallel& par);
// Experts on the busiest EP rank: ceil(E / EP) (determine_expert_map gives the remainder to the first
// ranks). E when EP is 1.
int experts_per_rank(const ModelSpec& model, const Parallel& par);
// The share of one MoE layer's expert weights on the busiest GPU: ceil(E / EP) / E / moe_tp, i.e.
// 1 / (DP x TP) without EP and ceil(E / EP) / E under vLLM's EP. Sizing and both latency models read it.
double expert_weight_share(const ModelSpec& model, const Parallel& par);

// Parameters of the routed experts (moe layers x E x 3 x hidden x moe_intermediate_size) and of the
// embedding table plus LM head (one table when tied).
int64_t expert_params(const ModelSpec& model);
int64_t embedding_params(const ModelSpec& model);

// Weight bytes on the most loaded GPU: per stage, the stage's layer body on one TP rank (modules vLLM
// replicates whole, K / V projections over min(TP, KV heads), the rest / TP) + (stage expert weights) x
// the busiest expert rank's share, the embedding on the first stage, the LM head on the last (/ TP).
// Checkpoint weights: each part in its stored bytes (experts in theirs, tables 16-bit); one --weight-dtype:
// the average bytes per parameter. TP 1 without DP, PP or EP: exactly weight_bytes.
int64_t weight_bytes_per_gpu(const ModelSpec& model, std::optional<DType> weight, const Parallel& par);
// The same for each pipeline stage (one entry when PP = 1).
std::vector<int64_t> weight_bytes_per_stage(const ModelSpec& model, std::optional<DType> weight, const Parallel& par);

// Blocks of one engine under PP: each stage's GPUs hold the cache of their own layers in the bytes
// `stage_available[i]` their weights leave; vLLM gives every worker the smallest block count among them
// (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs). Includes the null block, as build_kv_layout.
int64_t pipeline_kv_blocks(const ModelSpec& model, int block_size, DType kv, const StateDtypes& dt, const Parallel& par,
                           const std::vector<int64_t>& stage_available);
// Cache bytes per token on one GPU of the stage that stores the most (kv_bytes_per_token at PP = 1).
int64_t pipeline_kv_bytes_per_token(const ModelSpec& model, DType kv, const Parallel& par);

// Why an explicit EP size `ep` (par.ep > 0 style, before any default) cannot be built on `engine` with
// dp x tp GPUs, or "": it must divide dp x tp, and vLLM's EP group is always all dp x tp GPUs
// (fused_moe/config.py FusedMoEParallelConfig.make); only SGLang (--ep-size; server_args.py
// moe_tp_size = tp_size // ep_size) and TensorRT-LLM (llm_args.py moe_expert_parallel_size x
// moe_tensor_parallel_size) split them into EP x moe-TP. Callers prefix the flag, key or column.
std::string explicit_ep_problem(int ep, int64_t dp_tp, EngineKind engine);

// Throws InputError naming the flag when the layout cannot be built (PP above the layer count, EP above
// the expert count or not dividing dp x tp, sizes < 1). Wraps check_parallel for TP and DCP.
void check_layout(const ModelSpec& model, const Parallel& par);

}  // namespace kvsim
