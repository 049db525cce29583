// sglang: SGLang router's cache_aware policy (cluster-offload.md B.3, rule 7; sgl-router
// src/policies/cache_aware.rs, defaults of sglang_router's router_args.py):
//  1. loads = requests the router has in flight on each instance; imbalanced iff
//     max - min > balance_abs_threshold and max > min * balance_rel_threshold: route to the least
//     loaded (ties: lowest id), and still insert the prompt into its tree;
//  2. otherwise the radix tree's longest match: match rate = matched tokens / prompt tokens (SGLang:
//     characters); above cache_threshold the instance holding the match, else the instance with the
//     smallest tree ("most available cache"); insert the prompt under the chosen instance.
//  3. every eviction_interval each instance's tree is cut to max_tree_size tokens, least recently used
//     leaves first (SGLang runs it on a background thread; kvsim at the first routing decision after each
//     interval, which is what the routing decisions can see).
// P/D (the PD router with one policy, cluster-offload.md B.3): the prefill stage is cache-aware as above,
// the decode stage of an always-disaggregated request least-load (fewest in flight, ties the lowest id).
// The prefill stage has a tree of its own, so that its matches only name prefill instances; a decode
// choice that may keep the request local (deciders llm_d, dynamo) is cache-aware over the other tree.
#include <algorithm>

#include "sim/cluster/impl/radix_tree.h"
#include "sim/cluster/impl/routers.h"
#include "sim/engine/block_hasher.h"

namespace kvsim {
namespace {

class SglangRouter final : public IRouter {
 public:
  SglangRouter(const RouterSettings& s, const IClusterView& view)
      : s_(s),
        tree_(view.num_instances()),
        prefill_tree_(view.num_instances()),
        in_flight_(static_cast<size_t>(view.num_instances()), 0),
        interval_ns_(std::max<int64_t>(duration_from_seconds(s.eviction_interval_s).ns(), 1)),
        next_eviction_ns_(interval_ns_) {}

  int route(const RequestSpec& spec, std::span<const int> candidates, const IClusterView& view) override {
    return cache_aware(spec, candidates, view, tree_);
  }

  int route_stage(const RequestSpec& spec, std::span<const int> candidates, const IClusterView& view,
                  RouteStage stage) override {
    if (stage == RouteStage::kPrefill) return cache_aware(spec, candidates, view, prefill_tree_);
    if (stage != RouteStage::kDecode) return cache_aware(spec, candidates, view, tree_);
    const int pick = least_loaded(candidates);
    ++in_flight_[static_cast<size_t>(pick)];
    return pick;
  }

  void on_finished(RequestId, int instance) override { --in_flight_[static_cast<size_t>(instance)]; }
  std::string name() const override { return "sglang"; }

 private:
  int least_loaded(std::span<const int> candidates) const {
    int pick = candidates[0];
    for (int i : candidates)
      if (in_flight_[static_cast<size_t>(i)] < in_flight_[static_cast<size_t>(pick)]) pick = i;
    return pick;
  }

  int cache_aware(const RequestSpec& spec, std::span<const int> candidates, const IClusterView& view, RadixTree& tree) {
    const int64_t now = view.now().ns();
    if (now >= next_eviction_ns_) {
      tree_.evict_to(s_.max_tree_size);
      prefill_tree_.evict_to(s_.max_tree_size);
      next_eviction_ns_ = (now / interval_ns_ + 1) * interval_ns_;
    }
    pieces_.clear();
    const TokenSequence seq(spec.prompt);
    for (const TokenRun& r : seq.runs()) pieces_.push_back({r.content_id, r.offset, r.length});
    const int least = least_loaded(candidates);
    const int64_t lo = in_flight_[static_cast<size_t>(least)];
    int64_t hi = INT64_MIN;
    for (int i : candidates) hi = std::max(hi, in_flight_[static_cast<size_t>(i)]);
    int pick = -1;
    const bool imbalanced = hi - lo > s_.balance_abs_threshold &&
                            static_cast<double>(hi) > static_cast<double>(lo) * s_.balance_rel_threshold;
    if (imbalanced) {
      pick = least;
    } else {
      const RadixTree::Match m = tree.match(pieces_);
      const double rate = seq.size() > 0 ? static_cast<double>(m.tokens) / static_cast<double>(seq.size()) : 0.0;
      if (rate > s_.cache_threshold && std::binary_search(candidates.begin(), candidates.end(), m.tenant)) {
        pick = m.tenant;
      } else {
        int64_t smallest = INT64_MAX;
        for (int i : candidates) {
          if (tree.tenant_size(i) < smallest) {
            smallest = tree.tenant_size(i);
            pick = i;
          }
        }
      }
    }
    tree.insert(pieces_, pick, now);
    ++in_flight_[static_cast<size_t>(pick)];
    return pick;
  }

  RouterSettings s_;
  RadixTree tree_;
  RadixTree prefill_tree_;  // P/D: the prefill stage's own tree
  std::vector<int64_t> in_flight_;
  int64_t interval_ns_;
  int64_t next_eviction_ns_;
  std::vector<TokenPiece> pieces_;
};

}  // namespace

std::unique_ptr<IRouter> make_sglang_router(const RouterSettings& s, const IClusterView& view) {
  return std::make_unique<SglangRouter>(s, view);
}

}  // namespace kvsim
