#include "sim/cluster/router_registry.h"

#include "sim/cluster/impl/routers.h"
#include "sim/core/errors.h"

namespace kvsim {

const std::map<std::string, std::set<std::string>>& router_policy_options() {
  static const std::map<std::string, std::set<std::string>> options = {
      {"round_robin", {}},
      {"random", {}},
      {"least_loaded", {}},
      {"vllm_dp", {}},
      {"session_affinity", {"virtual_nodes"}},
      {"llm_d",
       {"prefix_weight", "queue_weight", "kv_weight", "block_size", "max_prefix_blocks", "lru_capacity", "precise"}},
      {"dynamo", {"overlap_weight", "temperature", "kv_events"}},
      {"sglang",
       {"cache_threshold", "balance_abs_threshold", "balance_rel_threshold", "eviction_interval", "max_tree_size"}},
  };
  return options;
}

std::string router_policy_names() {
  std::string known;
  for (const auto& [name, unused] : router_policy_options()) known += (known.empty() ? "" : ", ") + name;
  return known;
}

std::unique_ptr<IRouter> make_router(const RouterSettings& s, const IClusterView& view, RandomStreams& rng,
                                     const std::string& key) {
  RandomStream& stream = rng.stream("router/" + s.policy);
  if (s.policy == "round_robin") return make_round_robin_router();
  if (s.policy == "random") return make_random_router(stream);
  if (s.policy == "least_loaded") return make_least_loaded_router();
  if (s.policy == "vllm_dp") return make_vllm_dp_router();
  if (s.policy == "session_affinity") return make_session_affinity_router(s, view.num_instances());
  if (s.policy == "llm_d") return make_llm_d_router(s, view, stream);
  if (s.policy == "dynamo") return make_dynamo_router(s, view, stream);
  if (s.policy == "sglang") return make_sglang_router(s, view);
  throw InputError(key + ": unknown router '" + s.policy + "' (known: " + router_policy_names() + ")");
}

}  // namespace kvsim
