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
#include "sim/core/check.h"
#include "sim/core/flat_map.h"

namespace kvsim {
namespace {

// The blocks each worker has active (held by requests the router sent there and that have not
// finished), counted once per hash, with the holders of each hash linked so that counting how many of
// a request's blocks each worker already holds costs O(blocks + holders), not O(blocks x workers).
class ActiveBlocks {
 public:
  explicit ActiveBlocks(int workers) : unique_(static_cast<size_t>(workers), 0) {}
  int64_t unique(int w) const { return unique_[static_cast<size_t>(w)]; }
  void add(int w, uint64_t h) {
    const int32_t n = where_.find(h, w);
    if (n != FlatMap::kAbsent) {
      ++nodes_[static_cast<size_t>(n)].refs;
      return;
    }
    int32_t m;
    if (!free_.empty()) {
      m = free_.back();
      free_.pop_back();
    } else {
      m = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
    }
    const int32_t first = holders_.find(h, -1);
    nodes_[static_cast<size_t>(m)] = Node{h, w, 1, -1, first};
    if (first >= 0) nodes_[static_cast<size_t>(first)].prev = m;
    holders_.put(h, -1, m);
    where_.put(h, w, m);
    ++unique_[static_cast<size_t>(w)];
  }
  void remove(int w, uint64_t h) {
    const int32_t n = where_.find(h, w);
    KVSIM_CHECK(n != FlatMap::kAbsent, "dynamo router: releasing a block it does not track");
    Node& x = nodes_[static_cast<size_t>(n)];
    if (--x.refs > 0) return;
    if (x.prev >= 0) {
      nodes_[static_cast<size_t>(x.prev)].next = x.next;
    } else if (x.next >= 0) {
      holders_.put(h, -1, x.next);
    } else {
      holders_.erase(h, -1);
    }
    if (x.next >= 0) nodes_[static_cast<size_t>(x.next)].prev = x.prev;
    where_.erase(h, w);
    free_.push_back(n);
    --unique_[static_cast<size_t>(w)];
  }
  // held[w] = how many of `hashes` worker w has active.
  void count_held(std::span<const uint64_t> hashes, std::vector<int64_t>& held) const {
    held.assign(unique_.size(), 0);
    for (uint64_t h : hashes)
      for (int32_t n = holders_.find(h, -1); n >= 0; n = nodes_[static_cast<size_t>(n)].next)
        ++held[static_cast<size_t>(nodes_[static_cast<size_t>(n)].worker)];
  }

 private:
  struct Node {
    uint64_t hash;
    int32_t worker;
    int32_t refs;
    int32_t prev;
    int32_t next;
  };
  std::vector<int64_t> unique_;
  std::vector<Node> nodes_;
  std::vector<int32_t> free_;
  FlatMap where_;    // (hash, worker) -> node
  FlatMap holders_;  // (hash, -1) -> first node
};

class DynamoRouter final : public IRouter {
 public:
  DynamoRouter(const RouterSettings& s, const IClusterView& view, RandomStream& ties)
      : s_(s),
        ties_(ties),
        predicted_(capacities(view)),
        prefill_tokens_(static_cast<size_t>(view.num_instances()), 0),
        active_(view.num_instances()) {}

  int route(const RequestSpec& spec, std::span<const int> candidates, const IClusterView& view) override {
    return route_stage(spec, candidates, view, RouteStage::kColocated);
  }

  // Disaggregated (router docs, "disaggregated serving"): the decode stage "disables overlap scoring
  // (overlap_score_weight=0) and prefill-token tracking", pure load balance; the prefill router disables
  // active-block tracking. The classic conditional flow (decider dynamo) routes the decode worker as an
  // aggregated request and decides on its prefix hit: scored as colocated.
  int route_stage(const RequestSpec& spec, std::span<const int> candidates, const IClusterView& view,
                  RouteStage stage) override {
    const bool decode_only = stage == RouteStage::kDecode;
    const double weight = decode_only ? 0.0 : s_.overlap_weight;
    by_size_.clear();
    held_.clear();
    costs_.clear();
    overlaps_.clear();
    double lo = INFINITY, hi = -INFINITY;
    for (int i : candidates) {
      const int bs = view.info(i).block_size;
      const std::vector<uint64_t>& h = hashes_for(spec, bs);
      const int64_t overlap = overlap_blocks(spec, i, view, h);
      overlaps_.push_back(overlap);
      const int64_t new_prefill = std::max<int64_t>(spec.prompt_tokens - overlap * bs, 0);
      const double prefill_blocks = static_cast<double>(prefill_tokens_[static_cast<size_t>(i)] + new_prefill) / bs;
      const int64_t decode_blocks = active_.unique(i) + static_cast<int64_t>(h.size()) - held_for(spec, bs, i);
      const double cost = weight * prefill_blocks + static_cast<double>(decode_blocks);
      costs_.push_back(cost);
      lo = std::min(lo, cost);
      hi = std::max(hi, cost);
    }
    const int pick = s_.temperature > 0 ? sample(candidates, lo, hi) : argmin(candidates, view, lo);
    // Track the request on the chosen worker.
    const int bs = view.info(pick).block_size;
    const std::vector<uint64_t>& h = hashes_for(spec, bs);
    Tracked t;
    t.instance = pick;
    if (stage != RouteStage::kPrefill) t.blocks = h;
    const int64_t full = spec.prompt_tokens / bs;
    const size_t k = static_cast<size_t>(std::find(candidates.begin(), candidates.end(), pick) - candidates.begin());
    if (!decode_only) t.prefill_tokens = std::max<int64_t>(spec.prompt_tokens - overlaps_[k] * bs, 0);
    last_match_ = std::min<int64_t>(overlaps_[k] * bs, spec.prompt_tokens);
    prefill_tokens_[static_cast<size_t>(pick)] += t.prefill_tokens;
    for (uint64_t b : t.blocks) active_.add(pick, b);
    if (!s_.kv_events) predicted_.insert(pick, std::span<const uint64_t>(h.data(), static_cast<size_t>(full)));
    tracked_[spec.id.value()] = std::move(t);
    return pick;
  }

  void on_first_token(RequestId id, int) override {
    const auto it = tracked_.find(id.value());
    if (it == tracked_.end()) return;
    prefill_tokens_[static_cast<size_t>(it->second.instance)] -= it->second.prefill_tokens;
    it->second.prefill_tokens = 0;
  }

  void on_finished(RequestId id, int instance) override {
    on_first_token(id, instance);
    const auto it = tracked_.find(id.value());
    if (it == tracked_.end()) return;
    for (uint64_t b : it->second.blocks) active_.remove(it->second.instance, b);
    tracked_.erase(it);
  }

  std::string name() const override { return "dynamo"; }
  int64_t last_match_tokens() const override { return last_match_; }

 private:
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
  // How many of the request's blocks (at block size bs) worker i already has active; one walk of the
  // active index per block size and route().
  int64_t held_for(const RequestSpec& spec, int bs, int i) {
    auto [it, added] = held_.try_emplace(bs);
    if (added) active_.count_held(hashes_for(spec, bs), it->second);
    return it->second[static_cast<size_t>(i)];
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
  std::vector<int64_t> prefill_tokens_;  // tracked new-prefill tokens per worker
  ActiveBlocks active_;
  std::map<int, std::vector<int64_t>> held_;
  std::unordered_map<int64_t, Tracked> tracked_;  // request id -> tracking; lookup only
  std::map<int, std::vector<uint64_t>> by_size_;
  std::vector<double> costs_;
  std::vector<int64_t> overlaps_;
  std::vector<double> weights_;
  std::vector<int64_t> counts_;
  std::vector<int> ties_buf_;
  int64_t last_match_ = 0;
};

}  // namespace

std::unique_ptr<IRouter> make_dynamo_router(const RouterSettings& s, const IClusterView& view, RandomStream& ties) {
  return std::make_unique<DynamoRouter>(s, view, ties);
}

}  // namespace kvsim
