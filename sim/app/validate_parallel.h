#pragma once
// Parallel layouts of `kvsim validate` points: the optional columns dp, pp, ep, enable_expert_parallel,
// nodes and all2all_backend, and the engine keys a point with them runs under (scenarios/README.md,
// "Parallelism").
//  - dp: data_parallel_size (attention DP; each DP rank an engine of its own with its own KV cache,
//    behind vLLM's DP load balancer, router vllm_dp); the row's concurrency is the whole deployment's.
//  - pp: pipeline_parallel_size.
//  - ep: the EP size as aiconfigurator's rows state it; 1 = no expert parallelism, otherwise it turns
//    enable_expert_parallel on and must divide dp x tp; below dp x tp (SGLang --ep-size, TensorRT-LLM
//    moe_expert_parallel_size: experts tensor-split dp x tp / ep ways) it becomes the engine key
//    expert_parallel_size, which kind vllm refuses (vLLM's EP size is dp x tp). enable_expert_parallel
//    (true/false) turns EP on; without an ep cell its size is dp x tp.
//  - moe_tp: the ways each expert is tensor-split, as aiconfigurator's rows record it; checked against
//    the layout (dp x tp / ep, dp x tp without EP), never a setting of its own.
//  - nodes: the nodes the point's dp x pp x tp GPUs span, evenly: gpus_per_node = dp x pp x tp / nodes
//    (empty: 8 per node, an HGX node). TP above gpus_per_node runs its all-reduce on the NIC.
//  - all2all_backend: vLLM's name (empty: allgather_reducescatter, vLLM's default).
// GPUs = dp x pp x tp, vLLM's convention. SGLang's `--tp T --dp D --enable-dp-attention` runs D attention
// ranks of TP T / D inside T GPUs; such a row is dp D, tp T / D here (its MoE then spans D x T / D = T GPUs).
// Empty cells take the defaults, which leave a point exactly as without the columns.
#include <optional>
#include <string>

#include "sim/model/sizing.h"
#include "sim/perf/csv_file.h"

namespace kvsim {

struct ParallelColumns {
  int dp = 1, pp = 1;
  bool expert_parallel = false;
  int ep = 0;  // with expert_parallel: an EP size below dp x tp; 0 = dp x tp
  std::optional<int> gpus_per_node;
  std::string all2all_backend;  // empty: the engine default
  bool any() const { return dp > 1 || pp > 1 || expert_parallel || gpus_per_node || !all2all_backend.empty(); }
};

// Throws InputError "<file>:<line>: column '<name>': ..." for a bad value.
// `engine` is the row's (an EP size below dp x tp is refused on a vllm row).
ParallelColumns read_parallel_columns(const CsvFile& f, size_t row, int tp, EngineKind engine);

// After a row with the columns: "  layout DP2 x PP1 x TP4, EP8, 8 GPUs/node, deepep_low_latency" (EP4 x
// moe-TP2 for an EP size below dp x tp); empty
// without them.
std::string parallel_suffix(const ParallelColumns& c, int tp);

// Engine keys (YAML lines indented two spaces under "engine:"); empty when nothing is set.
std::string parallel_engine_yaml(const ParallelColumns& c);

}  // namespace kvsim
