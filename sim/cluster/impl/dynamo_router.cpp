// dynamo: NVIDIA Dynamo's KV router (cluster-offload.md B.2, rule 5; lib/llm/src/kv_router/scheduler.rs
// DefaultWorkerSelector::worker_score, sequence.rs ActiveSequences):
//   new prefill tokens(i) = isl - overlap_blocks(i) * block_size
//   prefill_blocks(i)     = (tracked prefill tokens on i + new prefill tokens(i)) / block_size   (real)
//   decode_blocks(i)      = active blocks on i, counted once per block hash, with this request's blocks
//   cost(i)               = overlap_weight * prefill_blocks(i) + decode_blocks(i)
// temperature 0: argmin, ties to the smaller radix tree (blocks indexed for the instance), then uniform
// from "router/dynamo"; temperature T > 0: sampled from softmax(-(cost / (max - min)) / T), uniform when
// all costs are equal. The router tracks what it forwards: a request's prefill tokens until its first
// token comes back, its blocks until it finishes. The overlap comes from the instances' real caches
// (KV events, the default) or, with kv_events: false, from the router's own prediction (its hashes
// inserted into the chosen instance's entry at routing time, an LRU of the instance's block count).
#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "sim/cluster/impl/approx_prefix_index.h"
#include "sim/cluster/impl/prefix_hashes.h"
#include "sim/cluster/impl/routers.h"

namespace kvsim {
namespace {

class DynamoRouter final : public IRouter {
 public:
  DynamoRouter(const RouterSettings& s, const IClusterView& view, RandomStream& ties)
      : s_(s), ties_(ties), predicted_(capacities(view)), workers_(static_cast<size_t>(view.num_instances())) {}

  int route(const RequestSpec& spec, std::span<const int> candidates, const IClusterView& view) override {
    by_size_.clear();
    costs_.clear();
    overlaps_.clear();
    double lo = INFINITY, hi = -INFINITY;
    for (int i : candidates) {
      const int bs = view.info(i).block_size;
      const std::vector<uint64_t>& h = hashes_for(spec, bs);
      const int64_t overlap = overlap_blocks(spec, i, view, h);
      overlaps_.push_back(overlap);
      const Worker& w = workers_[static_cast<size_t>(i)];
      const int64_t new_prefill = std::max<int64_t>(spec.prompt_tokens - overlap * bs, 0);
      const double prefill_blocks = static_cast<double>(w.prefill_tokens + new_prefill) / bs;
      int64_t decode_blocks = static_cast<int64_t>(w.active.size());
      for (uint64_t b : h) decode_blocks += w.active.count(b) == 0;
      const double cost = s_.overlap_weight * prefill_blocks + static_cast<double>(decode_blocks);
      costs_.push_back(cost);
      lo = std::min(lo, cost);
      hi = std::max(hi, cost);
    }
    const int pick = s_.temperature > 0 ? sample(candidates, lo, hi) : argmin(candidates, view, lo);
    // Track the request on the chosen worker.
    const int bs = view.info(pick).block_size;
    const std::vector<uint64_t>& h = hashes_for(spec, bs);
    Worker& w = workers_[static_cast<size_t>(pick)];
    Tracked t;
    t.instance = pick;
    t.blocks = h;
    const int64_t full = spec.prompt_tokens / bs;
    const size_t k = static_cast<size_t>(std::find(candidates.begin(), candidates.end(), pick) - candidates.begin());
    t.prefill_tokens = std::max<int64_t>(spec.prompt_tokens - overlaps_[k] * bs, 0);
    w.prefill_tokens += t.prefill_tokens;
    for (uint64_t b : h) ++w.active[b];
    if (!s_.kv_events) predicted_.insert(pick, std::span<const uint64_t>(h.data(), static_cast<size_t>(full)));
    tracked_[spec.id.value()] = std::move(t);
    return pick;
  }

  void on_first_token(RequestId id, int) override {
    const auto it = tracked_.find(id.value());
    if (it == tracked_.end()) return;
    workers_[static_cast<size_t>(it->second.instance)].prefill_tokens -= it->second.prefill_tokens;
    it->second.prefill_tokens = 0;
  }

  void on_finished(RequestId id, int instance) override {
    on_first_token(id, instance);
    const auto it = tracked_.find(id.value());
    if (it == tracked_.end()) return;
    Worker& w = workers_[static_cast<size_t>(it->second.instance)];
    for (uint64_t b : it->second.blocks) {
      const auto a = w.active.find(b);
      if (--a->second == 0) w.active.erase(a);
    }
    tracked_.erase(it);
  }

  std::string name() const override { return "dynamo"; }

 private:
  struct Worker {
    int64_t prefill_tokens = 0;
    std::unordered_map<uint64_t, int> active;  // block hash -> requests holding it; lookup and size only
  };
  struct Tracked {
    int instance = 0;
    int64_t prefill_tokens = 0;
    std::vector<uint64_t> blocks;
  };

  static std::vector<int64_t> capacities(const IClusterView& view) {
    std::vector<int64_t> c;
    for (int i = 0; i < view.num_instances(); ++i) c.push_back(std::max<int64_t>(view.info(i).num_blocks, 1));
    return c;
  }
  // Full blocks plus the trailing partial block: the blocks the request will hold.
  const std::vector<uint64_t>& hashes_for(const RequestSpec& spec, int bs) {
    auto [it, added] = by_size_.try_emplace(bs);
    if (added) router_block_hashes(spec, bs, INT64_MAX / bs, /*partial_tail=*/true, it->second);
    return it->second;
  }
  // Leading full blocks of the request that instance i holds, as the router's index sees it.
  int64_t overlap_blocks(const RequestSpec& spec, int i, const IClusterView& view, const std::vector<uint64_t>& h) {
    const int64_t full = spec.prompt_tokens / view.info(i).block_size;
    if (s_.kv_events) return view.cached_prefix_blocks(i, spec, full);
    if (full == 0) return 0;
    predicted_.match_strict_prefix(std::span<const uint64_t>(h.data(), static_cast<size_t>(full)), counts_);
    return counts_[static_cast<size_t>(i)];
  }
  int64_t tree_size(int i, const IClusterView& view) const {
    return s_.kv_events ? view.report(i).hashed_blocks : predicted_.size(i);
  }
  int argmin(std::span<const int> candidates, const IClusterView& view, double lo) {
    ties_buf_.clear();
    int64_t smallest = INT64_MAX;
    for (size_t k = 0; k < candidates.size(); ++k) {
      if (costs_[k] != lo) continue;
      const int64_t t = tree_size(candidates[k], view);
      if (t < smallest) {
        smallest = t;
        ties_buf_.assign(1, candidates[k]);
      } else if (t == smallest) {
        ties_buf_.push_back(candidates[k]);
      }
    }
    if (ties_buf_.size() == 1) return ties_buf_[0];
    return ties_buf_[static_cast<size_t>(ties_.uniform_int(0, static_cast<int64_t>(ties_buf_.size()) - 1))];
  }
  int sample(std::span<const int> candidates, double lo, double hi) {
    if (hi == lo)
      return candidates[static_cast<size_t>(ties_.uniform_int(0, static_cast<int64_t>(candidates.size()) - 1))];
    // softmax(-(cost / range) / T); shifted by the largest exponent, -(lo / range) / T, for stability.
    const double range = hi - lo;
    double total = 0;
    weights_.clear();
    for (double c : costs_) {
      weights_.push_back(std::exp(-((c - lo) / range) / s_.temperature));
      total += weights_.back();
    }
    double u = ties_.uniform() * total;
    for (size_t k = 0; k < candidates.size(); ++k) {
      u -= weights_[k];
      if (u < 0) return candidates[k];
    }
    return candidates.back();
  }

  RouterSettings s_;
  RandomStream& ties_;
  ApproxPrefixIndex predicted_;
  std::vector<Worker> workers_;
  std::unordered_map<int64_t, Tracked> tracked_;  // request id -> tracking; lookup only
  std::map<int, std::vector<uint64_t>> by_size_;
  std::vector<double> costs_;
  std::vector<int64_t> overlaps_;
  std::vector<double> weights_;
  std::vector<int64_t> counts_;
  std::vector<int> ties_buf_;
};

}  // namespace

std::unique_ptr<IRouter> make_dynamo_router(const RouterSettings& s, const IClusterView& view, RandomStream& ties) {
  return std::make_unique<DynamoRouter>(s, view, ties);
}

}  // namespace kvsim
