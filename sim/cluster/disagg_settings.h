#pragma once
// DisaggSettings: cluster.disaggregation as a scenario states it (scenarios/README.md). Plain data; the
// scenario layer fills and validates it, the Cluster applies it to pools of role prefill and decode.
#include <cstdint>
#include <string>

namespace kvsim {

struct DisaggSettings {
  // When a request is prefilled on a prefill instance (cluster-offload.md G rules 4 and 6), decided after
  // the router picked the decode instance:
  //  llm_d   disaggregate iff prompt - the router's prefix match on that decode instance >= threshold
  //          (prefix_based_pd_decider.go; threshold 16 in the shipped config, 0 never disaggregates);
  //  dynamo  remote prefill iff prompt - match > max_local_prefill (1000) and the prefill queue (requests
  //          waiting on the prefill pool, as reported) < max_prefill_queue (2) (disagg_router.rs);
  //  always  every request; never: none (the decode pool serves everything, prefill pools idle).
  std::string decider = "llm_d";
  int64_t threshold = 16;
  int64_t max_local_prefill = 1000;
  int max_prefill_queue = 2;
  // vLLM's NIXL docs list hybrid (SSM) models as homogeneous-TP only, while tp_mapping.py has the SSM
  // hetero-TP path: true allows it.
  bool hybrid_hetero_tp = false;
  // Network options for the pulls (sim/net/flow_network.h): a per-flow rate cap (one RDMA queue pair,
  // ~28 GB/s on a 400G NIC, MORI #351) and a per-descriptor posting cost (~3 us, vLLM #34054); 0 = none.
  double per_flow_cap = 0;  // bytes/s
  double per_descriptor_s = 0;
  // Layer-wise streaming (LLMServingSim style; vLLM's NIXL connector pulls whole requests after the
  // prefill): the decode instance gets the request when the prefill instance schedules its last prompt
  // chunk, allocates and starts pulling while that step computes; the pull ends no earlier than the
  // prefill. This overlaps the transfer with the last chunk's compute (the whole prefill when the prompt
  // fits one chunk), an upper bound on what per-layer sends hide.
  bool layerwise = false;
  // Link utilisation samples (/timeseries/links) every this many seconds while requests are in flight.
  double utilisation_interval_s = 0.1;
};

}  // namespace kvsim
