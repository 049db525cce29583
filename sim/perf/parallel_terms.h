#pragma once
// ParallelTerms: what data, expert and pipeline parallelism and multi-node tensor parallelism add to
// one step of one engine (one DP rank), per GPU. Both latency models read it; with its defaults
// (DP = PP = 1, no EP, TP within a node) every term is 0 and the models are unchanged.
//
// Layout (vLLM; sim/model/parallel_layout.h): EP = DP x TP with enable_expert_parallel; MoE layers
// shard over all DP x TP GPUs either way (FusedMoEParallelConfig.make, fused_moe/config.py). SGLang's
// --ep-size and TensorRT-LLM's moe_expert_parallel_size give an EP size below DP x TP, each expert then
// tensor-split DP x TP / EP ways; only the gather backends price it (the dispatch / combine kernels are
// vLLM's, whose EP is DP x TP). Every
// DP rank is its own engine with its own batch; kvsim assumes the other DP ranks carry a batch of the
// same size (vLLM runs DP ranks of a MoE model in lock-step, padding idle ranks with dummy batches;
// the padding and the wait for the slowest rank are not modelled).
//
// Per MoE layer, for a DP rank of N tokens, DP > 1 (vllm/config/parallel.py all2all_backend):
//   allgather_reducescatter (vLLM's default; also the path DP without EP takes) and naive:
//     each GPU gathers the other DP ranks' hidden states before the experts and reduce-scatters the
//     outputs after: (DP - 1) * N * h * a bytes each way over a ring of the DP ranks,
//     t = 2 * (alpha + (DP - 1) * N * h * a / bw)
//   dispatch / combine kernels (deepep_*, pplx, mori_*, nixl_ep, flashinfer_*), EP = DP x TP:
//     each GPU sends its N / TP tokens (the DP rank's tokens split over its TP ranks, as vLLM's
//     sequence-parallel MoE does) to the ranks holding their k experts. Under uniform routing and
//     vLLM's linear expert placement an expert lies on another rank with probability (EP - 1) / EP, so
//       dispatch bytes per token per layer = h * a * k * (EP - 1) / EP, combine the same,
//     of which (G_ep - 1) / EP go over NVLink and (EP - G_ep) / EP over the NIC (G_ep = EP ranks on
//     one node); t = 2 * (alpha + max(bytes_nvlink / bw_nvlink, bytes_nic / bw_nic)).
//   a = 2 (BF16 activations; DeepEP's FP8 dispatch is not modelled), per-rank deduplication of a
//   token sent to several experts of one rank is not modelled either (an upper bound for DeepEP).
//   With DP = 1 there is no all-to-all: vLLM uses its all-to-all kernels only when DP > 1
//   (use_all2all_kernels); TP-only EP combines through the TP all-reduce already priced.
//
// TP across nodes (TP > GPUs per node G): the two all-reduces per layer go through NCCL (the engines'
// custom all-reduce kernels stop at the node), priced by NCCL's own tuner model (nccl_allreduce.h): the
// least of Tree and Ring x LL / LL128 / Simple, each a latency from NCCL's constants (6.8 + 2 ((G - 1)
// 0.6 + log2(N) 5.0) us for Tree LL over N nodes of NVLink GPUs) plus the ring traffic
// 2 (TP - 1) / TP * S at NCCL's per-protocol share of the bus bandwidth. NCCL runs one ring per channel
// and spreads the channels over the node's G NICs (one per GPU), so a node's inter-node share leaves
// through G NICs at once while every byte still crosses each GPU's NVLink:
//   bus bandwidth = min(bw_nvlink, G * bw_nic),  S = N * h * 2.
// (Until this stop an all-reduce cost the NIC's send/recv latency alpha_nic, 17 us on IB NDR, plus the
// traffic: about a third of NCCL's Tree LL latency across 8 nodes.)
//
// Pipeline send between stages (vLLM IntermediateTensors of the decoder models: hidden_states and
// residual, BF16): S = 2 * m * h * 2 bytes per boundary for a micro-batch of m tokens; each TP rank sends
// its S / TP slice over its own link (NVLink when both stages are on one node, else its NIC) and the
// receiving TP group all-gathers them over NVLink: t = alpha + S / (TP bw) + alpha_nvl + (TP - 1) / TP *
// S / bw_nvl (vLLM gpu_worker.py send_tensor_dict(..., all_gather_group=get_tp_group())).
//
// MoE all-gather / reduce-scatter over the DP ranks (no dispatch / combine kernel): (DP - 1) * N * h * a
// per GPU per layer each way, over NVLink inside a node; across nodes NCCL spreads the ring's channels
// over the NICs of the DP group's GPUs on the node: min(bw_nvlink, G_dp * bw_nic).
#include <string>

#include "sim/model/sizing.h"
#include "sim/perf/i_latency_model.h"
#include "sim/perf/nccl_allreduce.h"

namespace kvsim {

// One link as the parallel terms price it: t = latency + bytes / bandwidth (effective bytes/s).
struct LinkCost {
  double bandwidth = 0;
  double latency_s = 0;
  double seconds(double bytes) const { return bytes > 0 ? latency_s + bytes / bandwidth : 0.0; }
};

struct ParallelPlan {
  int tp = 1;
  int dp = 1;
  int pp = 1;
  bool expert_parallel = false;
  int ep = 0;  // with expert_parallel: the EP size (divides dp x tp); 0 = dp x tp (vLLM's)
  std::string all2all_backend = "allgather_reducescatter";
  // GPUs sharing NVLink; 0: all of them (one node, the models' behaviour before the layout existed).
  // The composition root sets it from engine.gpus_per_node (default 8).
  int gpus_per_node = 0;
  LinkCost intra;            // NVLink (or the GPU's fastest peer link), per GPU per direction
  LinkCost inter;            // one NIC per GPU
  bool intra_nvlink = true;  // the intra-node link is NVLink (NCCL's latencies then NVLINK's, else PCI's)
  int node_size() const { return gpus_per_node > 0 ? gpus_per_node : dp * pp * tp; }
  // The layout as sizing states it (sim/model/parallel_layout.h), with TP `tp_size`.
  Parallel layout(int tp_size) const { return {tp_size, 1, dp, pp, expert_parallel, ep}; }
};

// vLLM's all2all_backend names; true for those that dispatch and combine (all-to-all), false for
// allgather_reducescatter and naive. Throws InputError for an unknown name (listing the known ones).
bool is_dispatch_combine_backend(const std::string& name, const std::string& key);

class ParallelTerms {
 public:
  ParallelTerms() = default;
  // hidden and topk of the model; moe_layers: its MoE layers (on this stage).
  ParallelTerms(const ParallelPlan& plan, double hidden, int topk, int num_experts, int moe_layers);

  // EP size (plan.ep, or DP x TP, with EP on a MoE model, else 1).
  int ep() const { return ep_; }
  // Bytes one GPU sends per token per MoE layer in the dispatch (the same again in the combine):
  // h * a * k * (EP - 1) / EP. 0 unless the backend dispatches and combines with EP > 1.
  double dispatch_bytes_per_token() const { return dispatch_bytes_per_token_; }
  // Seconds of MoE communication per step for a DP rank of `tokens` tokens (all MoE layers).
  double moe_comm_seconds(double tokens) const;
  // Seconds of one TP all-reduce of `bytes` (NCCL's model) when TP > GPUs per node; -1 otherwise.
  double cross_node_allreduce_seconds(double bytes) const;
  // Its traffic alone at the full bus bandwidth, 2 (TP - 1) / TP * bytes / bw (the roofline's slope).
  double cross_node_allreduce_traffic_seconds(double bytes) const;
  bool tp_crosses_nodes() const { return cross_node_tp_; }
  const ParallelPlan& plan() const { return plan_; }

 private:
  NcclAllReduceLayout nccl_layout() const;  // the TP group's, for the cross-node all-reduce
  ParallelPlan plan_;
  double hidden_ = 0;
  int moe_layers_ = 0;
  int ep_ = 1;
  int topk_ = 1;
  bool dispatch_combine_ = false;
  bool cross_node_tp_ = false;
  double dispatch_bytes_per_token_ = 0;
  double intra_fraction_ = 0, inter_fraction_ = 0;  // of the dispatch bytes
  LinkCost dp_ring_;                                // the link of the DP ranks' ring (all-gather)
};

}  // namespace kvsim
