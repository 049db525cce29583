// llm_d: llm-d EPP's default scheduling profile (cluster-offload.md B.1, rules 1-3):
//   score(i) = prefix_weight * prefix(i) + queue_weight * queue(i) + kv_weight * kv(i), each in [0, 1]
//   prefix(i) = matched blocks / request blocks (prefix/plugin.go)
//   queue(i)  = (maxQ - Q_i) / (maxQ - minQ) over the candidates, 1 when all equal; Q = waiting requests
//               (queuedepth/queue.go)
//   kv(i)     = 1 - KV usage (kvcacheutilization/kvcache_utilization.go)
// max-score-picker: argmax, ties broken uniformly at random (it shuffles before a stable sort), here from
// the stream "router/llm_d".
// The prefix match comes from the approximate index (approximateprefix/): blocks of block_size tokens
// (llm-d hashes 4 characters a token; kvsim hashes token identities), the trailing partial block
// included, at most max_prefix_blocks blocks, one LRU per instance, every hash of the request inserted
// into the chosen instance at routing time (PreRequest), before it runs. With precise: true it reads the
// instances' real cached blocks instead (precise-prefix-cache-scorer, fed by vLLM's KV events), full
// blocks at the instance's own block size.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "sim/cluster/impl/approx_prefix_index.h"
#include "sim/cluster/impl/prefix_hashes.h"
#include "sim/cluster/impl/routers.h"

namespace kvsim {
namespace {

class LlmDRouter final : public IRouter {
 public:
  LlmDRouter(const RouterSettings& s, const IClusterView& view, RandomStream& ties)
      : s_(s), ties_(ties), index_(capacities(s, view)) {}

  int route(const RequestSpec& spec, std::span<const int> candidates, const IClusterView& view) override {
    scores_.assign(static_cast<size_t>(view.num_instances()), 0.0);
    if (s_.precise) matched_.assign(static_cast<size_t>(view.num_instances()), 0);
    by_size_.clear();
    prefix_scores(spec, candidates, view);
    int min_q = INT32_MAX, max_q = INT32_MIN;
    for (int i : candidates) {
      min_q = std::min(min_q, view.report(i).waiting);
      max_q = std::max(max_q, view.report(i).waiting);
    }
    double best = -1;
    ties_buf_.clear();
    for (int i : candidates) {
      const InstanceReport& r = view.report(i);
      const double queue = max_q == min_q ? 1.0 : static_cast<double>(max_q - r.waiting) / (max_q - min_q);
      const double kv = 1.0 - std::clamp(r.kv_usage, 0.0, 1.0);
      const double score = s_.prefix_weight * std::clamp(scores_[static_cast<size_t>(i)], 0.0, 1.0) +
                           s_.queue_weight * queue + s_.kv_weight * kv;
      if (score > best) {
        best = score;
        ties_buf_.assign(1, i);
      } else if (score == best) {
        ties_buf_.push_back(i);
      }
    }
    const int pick =
        ties_buf_.size() == 1
            ? ties_buf_[0]
            : ties_buf_[static_cast<size_t>(ties_.uniform_int(0, static_cast<int64_t>(ties_buf_.size()) - 1))];
    last_match_ = s_.precise
                      ? matched_[static_cast<size_t>(pick)] * view.info(pick).block_size
                      : static_cast<int64_t>(std::llround(scores_[static_cast<size_t>(pick)] *
                                                          static_cast<double>(matchable_blocks(spec, view, pick)))) *
                            block_size(view, pick);
    if (!s_.precise) index_.insert(pick, hashes_for(spec, block_size(view, pick)));
    return pick;
  }
  std::string name() const override { return "llm_d"; }
  int64_t last_match_tokens() const override { return last_match_; }

 private:
  // The block count a score is a fraction of (prefix_scores).
  int64_t matchable_blocks(const RequestSpec& spec, const IClusterView& view, int i) {
    return static_cast<int64_t>(hashes_for(spec, block_size(view, i)).size());
  }
  static std::vector<int64_t> capacities(const RouterSettings& s, const IClusterView& view) {
    std::vector<int64_t> c;
    for (int i = 0; i < view.num_instances(); ++i)
      c.push_back(s.lru_capacity > 0 ? s.lru_capacity : std::max<int64_t>(view.info(i).num_blocks, 1));
    return c;
  }
  int block_size(const IClusterView& view, int i) const {
    return s_.block_size > 0 ? s_.block_size : view.info(i).block_size;
  }
  // The request's hashes at one block size (computed once per route() and block size).
  const std::vector<uint64_t>& hashes_for(const RequestSpec& spec, int bs) {
    auto [it, added] = by_size_.try_emplace(bs);
    if (added) router_block_hashes(spec, bs, s_.max_prefix_blocks, /*partial_tail=*/true, it->second);
    return it->second;
  }

  void prefix_scores(const RequestSpec& spec, std::span<const int> candidates, const IClusterView& view) {
    if (s_.precise) {
      // precise-prefix-cache-scorer: the index's per-pod scores (leading blocks cached; pods without a hit
      // have none), min-max normalised over the pods that have one, 1 when those are all equal, 0 for the
      // others (preciseprefixcache indexedScoresToNormalizedScoredPods).
      int64_t lo = INT64_MAX, hi = 0;
      for (int i : candidates) {
        const int bs = view.info(i).block_size;
        const int64_t total = std::min<int64_t>(spec.prompt_tokens / bs, s_.max_prefix_blocks);
        const int64_t hit = total > 0 ? view.cached_prefix_blocks(i, spec, total) : 0;
        matched_[static_cast<size_t>(i)] = hit;
        if (hit > 0) {
          lo = std::min(lo, hit);
          hi = std::max(hi, hit);
        }
      }
      for (int i : candidates) {
        const int64_t hit = matched_[static_cast<size_t>(i)];
        scores_[static_cast<size_t>(i)] = hit == 0   ? 0.0
                                          : hi == lo ? 1.0
                                                     : static_cast<double>(hit - lo) / static_cast<double>(hi - lo);
      }
      return;
    }
    // One walk of the index per block size among the candidates (pools may differ in block size).
    std::set<int> sizes;
    for (int i : candidates) sizes.insert(block_size(view, i));
    for (const int bs : sizes) {
      const std::vector<uint64_t>& h = hashes_for(spec, bs);
      if (h.empty()) continue;
      index_.match_longest_prefix(h, counts_);
      for (int i : candidates)
        if (block_size(view, i) == bs)
          scores_[static_cast<size_t>(i)] =
              static_cast<double>(counts_[static_cast<size_t>(i)]) / static_cast<double>(h.size());
    }
  }

  RouterSettings s_;
  RandomStream& ties_;
  ApproxPrefixIndex index_;
  std::vector<double> scores_;
  std::vector<int64_t> matched_;  // precise: leading blocks each candidate caches
  std::vector<int64_t> counts_;
  std::vector<int> ties_buf_;
  std::map<int, std::vector<uint64_t>> by_size_;
  int64_t last_match_ = 0;
};

}  // namespace

std::unique_ptr<IRouter> make_llm_d_router(const RouterSettings& s, const IClusterView& view, RandomStream& ties) {
  return std::make_unique<LlmDRouter>(s, view, ties);
}

}  // namespace kvsim
