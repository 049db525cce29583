#pragma once
// NCCL's own cost model of one all-reduce across nodes: what a TP group wider than a node pays for each
// of its two all-reduces per layer (engines' custom all-reduce kernels stop at the node; across nodes
// vLLM, SGLang and TensorRT-LLM call NCCL).
//
// From NCCL's tuner (NVIDIA/nccl@5067397c, 2026-06-11, src/graph/tuning.cc): ncclTopoTuneModel's
// latency of each algorithm and protocol, and ncclTopoGetAlgoTime's time = latency + bytes / bandwidth,
// NCCL then running the (algorithm, protocol) whose time is least. Latencies, microseconds
// (ncclTunerConstantsDefaults: baseLatencies; hwLatencies of NVLINK or PCI within the node, NET across):
//   Ring:  base + (2 (n - 1) - 2 (N - 1)) * max(intra, net_overhead) + 2 (N - 1) * inter
//          (net_overhead = 1 us, NCCL's value for Intel and non-x86 hosts, x3 for Simple; Simple's latency
//          x1.4 across nodes on compute capability >= 8.0, the "plateau effect of ring")
//   Tree:  base + 2 ((n / N - 1) * intra + log2(N) * inter)
// with n ranks on N nodes; inter is the NET latency of the algorithm (of Tree when one rank per node).
// Bandwidth: the ring's bus bandwidth bw (the slower of one GPU's NVLink and the node's NICs,
// parallel_terms.h) carries 2 (n - 1) / n * bytes, scaled by NCCL's per-protocol refinements: Ring LL
// x0.5, Ring LL128 x0.92; Tree x0.92, Tree LL x0.92 / 3.8, Tree LL128 x0.92 x 120 / 128.
// Not modelled: the tree correction factors per message size, the per-channel bandwidth caps, NVLS and
// CollNet (NVLink SHARP, SHARP switches), and AMD hosts (net_overhead 2 us).
namespace kvsim {

struct NcclAllReduceLayout {
  int ranks = 1;             // n
  int nodes = 1;             // N (ranks spread evenly)
  bool nvlink_intra = true;  // NVLink inside a node (else PCIe latencies)
  double bus_bandwidth = 0;  // bytes/s, the ring's bottleneck per GPU
};

// One all-reduce of `bytes` per rank: the least time over Tree / Ring x LL / LL128 / Simple, seconds
// (at 0 bytes: the least latency).
double nccl_allreduce_seconds(const NcclAllReduceLayout& l, double bytes);

}  // namespace kvsim
