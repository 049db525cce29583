// Router policies on worked examples, through a fake cluster view whose reports and real-cache
// matches the test sets by hand (cluster-offload.md B, rules 1-7).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sim/cluster/impl/prefix_hashes.h"
#include "sim/cluster/router_registry.h"
#include "sim/core/errors.h"
#include "sim/core/random.h"
#include "tests/engine/engine_test_util.h"

namespace kvsim {
namespace {

using testing::make_request;
using testing::text;

class FakeView : public IClusterView {
 public:
  explicit FakeView(int n, int block_size = 16, int64_t blocks = 1000) : reports(static_cast<size_t>(n)) {
    for (int i = 0; i < n; ++i) infos.push_back(InstanceInfo{i, 0, block_size, blocks});
    for (int i = 0; i < n; ++i) all.push_back(i);
  }
  int num_instances() const override { return static_cast<int>(infos.size()); }
  const InstanceInfo& info(int i) const override { return infos[static_cast<size_t>(i)]; }
  const InstanceReport& report(int i) const override { return reports[static_cast<size_t>(i)]; }
  int64_t cached_prefix_blocks(int i, const RequestSpec& spec, int64_t max_blocks) const override {
    const auto it = cached.find({i, spec.id.value()});
    return it == cached.end() ? 0 : std::min(it->second, max_blocks);
  }
  SimTime now() const override { return SimTime::zero(); }
  int64_t report_epoch() const override { return epoch; }

  int64_t epoch = -1;  // live reports
  std::vector<InstanceInfo> infos;
  std::vector<InstanceReport> reports;
  std::map<std::pair<int, int64_t>, int64_t> cached;  // (instance, request id) -> leading blocks cached
  std::vector<int> all;
};

std::unique_ptr<IRouter> router(const std::string& policy, const IClusterView& view, RandomStreams& rng,
                                RouterSettings s = {}) {
  s.policy = policy;
  return make_router(s, view, rng, "cluster.router");
}

TEST(RoundRobinRouter, RequestIGoesToInstanceIModN) {
  FakeView view(3);
  RandomStreams rng(1);
  auto r = router("round_robin", view, rng);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(r->route(make_request(i, 0, {text(i, 64)}, 1), view.all, view), i % 3) << "request " << i;
  }
}

TEST(LeastLoadedRouter, FewestWaitingPlusRunningTiesByLowestId) {
  FakeView view(3);
  RandomStreams rng(1);
  auto r = router("least_loaded", view, rng);
  view.reports[0] = {2, 3, 0, 0};  // 5
  view.reports[1] = {0, 4, 0, 0};  // 4
  view.reports[2] = {4, 0, 0, 0};  // 4
  EXPECT_EQ(r->route(make_request(1, 0, {text(1, 16)}, 1), view.all, view), 1);
  view.reports[1].running = 5;
  EXPECT_EQ(r->route(make_request(2, 0, {text(1, 16)}, 1), view.all, view), 2);
}

TEST(SessionAffinityRouter, OneSessionOneInstanceAndNoSessionFallsBackToLeastLoaded) {
  FakeView view(4);
  RandomStreams rng(1);
  auto r = router("session_affinity", view, rng);
  std::map<std::string, int> owner;
  for (int i = 0; i < 40; ++i) {
    RequestSpec spec = make_request(i, 0, {text(i, 16)}, 1);
    spec.session = "conversation-" + std::to_string(i % 8);
    view.reports[static_cast<size_t>(i % 4)].waiting += 3;  // load must not move a session
    const int at = r->route(spec, view.all, view);
    const auto [it, first] = owner.try_emplace(spec.session, at);
    EXPECT_EQ(it->second, at) << spec.session;
  }
  std::set<int> used;
  for (const auto& [s, i] : owner) used.insert(i);
  EXPECT_GT(used.size(), 1u) << "8 sessions all hashed to one of 4 instances";
  view.reports = {{5, 0, 0, 0}, {1, 0, 0, 0}, {0, 2, 0, 0}, {9, 9, 0, 0}};
  EXPECT_EQ(r->route(make_request(99, 0, {text(99, 16)}, 1), view.all, view), 1);
}

// llm-d, three instances, block size 16.
// Request A (64 tokens, 4 blocks): queue {0, 3, 3} -> queue scores {1, 0, 0}, kv 1 each, prefix 0:
//   scores {2*1 + 2*1, 2*0 + 2*1, 2*0 + 2*1} = {4, 2, 2} -> instance 0, which gets A's 4 hashes.
// Request B: A's first 32 tokens, then 32 others (4 blocks, 2 shared).
//   waiting {4, 0, 2}: queue = (4 - Q) / 4 = {0, 1, 0.5}; KV usage {0.5, 0.25, 0}: kv = {0.5, 0.75, 1};
//   prefix = {2/4, 0, 0}.
//   weights (3, 2, 2): {1.5 + 0 + 1, 0 + 2 + 1.5, 0 + 1 + 2} = {2.5, 3.5, 3.0} -> instance 1.
//   prefix weight 10:  {5 + 0 + 1, 3.5, 3.0} = {6, 3.5, 3} -> instance 0.
TEST(LlmDRouter, WeightedScoreOnAWorkedExample) {
  for (const double prefix_weight : {3.0, 10.0}) {
    FakeView view(3);
    RandomStreams rng(1);
    RouterSettings s;
    s.prefix_weight = prefix_weight;
    auto r = router("llm_d", view, rng, s);
    view.reports = {{0, 0, 0, 0}, {3, 0, 0, 0}, {3, 0, 0, 0}};
    ASSERT_EQ(r->route(make_request(1, 0, {text(7, 64)}, 1), view.all, view), 0);
    view.reports = {{4, 0, 0.5, 0}, {0, 0, 0.25, 0}, {2, 0, 0.0, 0}};
    const int b = r->route(make_request(2, 0, {text(7, 32), text(8, 32)}, 1), view.all, view);
    EXPECT_EQ(b, prefix_weight == 3.0 ? 1 : 0) << "prefix weight " << prefix_weight;
  }
}

TEST(LlmDRouter, RepeatedPrefixGoesToTheInstanceThatHoldsItAndTiesAreSeeded) {
  FakeView view(4);
  RandomStreams rng(7);
  auto r = router("llm_d", view, rng);
  // Equal reports: the first request is a four-way tie, broken from the seeded stream.
  const int first = r->route(make_request(1, 0, {text(42, 320)}, 1), view.all, view);
  for (int k = 2; k < 6; ++k) {
    EXPECT_EQ(r->route(make_request(k, 0, {text(42, 256), text(100 + k, 64)}, 1), view.all, view), first);
  }
  // The same draws from the same seed.
  RandomStreams rng2(7);
  FakeView view2(4);
  auto r2 = router("llm_d", view2, rng2);
  EXPECT_EQ(r2->route(make_request(1, 0, {text(42, 320)}, 1), view2.all, view2), first);
}

TEST(LlmDRouter, PreciseReadsTheInstancesRealCache) {
  FakeView view(2);
  RandomStreams rng(1);
  RouterSettings s;
  s.precise = true;
  auto r = router("llm_d", view, rng, s);
  // 160 tokens = 10 full blocks; instance 1 holds 6 of them, the only hit: prefix {0, 1} -> 3 * 1 decides.
  view.cached[{1, 5}] = 6;
  EXPECT_EQ(r->route(make_request(5, 0, {text(3, 160)}, 1), view.all, view), 1);
  // Routing inserted nothing: a later request of the same content gets only what the view says.
  view.cached[{0, 6}] = 10;
  EXPECT_EQ(r->route(make_request(6, 0, {text(3, 160)}, 1), view.all, view), 0);
}

// llm-d's precise scorer normalises the index's per-pod hits min-max over the pods that have one (1 when
// they are equal, 0 without one). 320 tokens = 20 blocks; instance 0 caches 2, waits on 1 request and is
// 25 % full; instance 1 is idle and empty. Instance 0: 3 x 1 + 2 x 0 + 2 x 0.75 = 4.5; instance 1:
// 3 x 0 + 2 x 1 + 2 x 1 = 4: instance 0. (As a fraction of the prompt, 2 / 20, instance 0 scored 1.8.)
TEST(LlmDRouter, PreciseScoresAreMinMaxNormalisedOverTheHits) {
  FakeView view(2);
  RandomStreams rng(1);
  RouterSettings s;
  s.precise = true;
  auto r = router("llm_d", view, rng, s);
  view.cached[{0, 9}] = 2;
  view.reports[0].waiting = 1;
  view.reports[0].kv_usage = 0.25;
  EXPECT_EQ(r->route(make_request(9, 0, {text(4, 320)}, 1), view.all, view), 0);
  EXPECT_EQ(r->last_match_tokens(), 2 * 16);
}

// Dynamo, two instances, block size 16, overlap weight 1.
// A: isl 160 (10 blocks), instance 0 caches 6 of them:
//   cost0 = (160 - 96) / 16 + 10 new active blocks = 4 + 10 = 14; cost1 = 160 / 16 + 10 = 20 -> 0.
// C: isl 160 of other content, no overlap anywhere; instance 0 tracks A's 64 prefill tokens and 10 blocks:
//   cost0 = (64 + 160) / 16 + (10 + 10) = 34; cost1 = 10 + 10 = 20 -> 1.
// After A's first token (its prefill is done) and finish, instance 0 tracks nothing:
// D: isl 160 of a third content: cost0 = 10 + 10 = 20; cost1 = (160 + 160) / 16 + 20 = 40 -> 0.
TEST(DynamoRouter, CostOnAWorkedExample) {
  FakeView view(2);
  RandomStreams rng(1);
  auto r = router("dynamo", view, rng);
  view.cached[{0, 1}] = 6;
  EXPECT_EQ(r->route(make_request(1, 0, {text(1, 160)}, 1), view.all, view), 0);
  EXPECT_EQ(r->route(make_request(2, 0, {text(2, 160)}, 1), view.all, view), 1);
  r->on_first_token(RequestId(1), 0);
  r->on_finished(RequestId(1), 0);
  EXPECT_EQ(r->route(make_request(3, 0, {text(3, 160)}, 1), view.all, view), 0);
}

TEST(DynamoRouter, EqualCostsGoToTheSmallerTreeAndOverlapWeightZeroIgnoresTheCache) {
  FakeView view(3);
  RandomStreams rng(1);
  view.reports[0].hashed_blocks = 500;
  view.reports[1].hashed_blocks = 100;
  view.reports[2].hashed_blocks = 300;
  auto r = router("dynamo", view, rng);
  EXPECT_EQ(r->route(make_request(1, 0, {text(1, 32)}, 1), view.all, view), 1);
  // overlap_weight 0: instance 0's cache no longer lowers its cost; the active blocks decide.
  RouterSettings s;
  s.overlap_weight = 0;
  auto r0 = router("dynamo", view, rng, s);
  view.cached[{0, 2}] = 10;
  EXPECT_EQ(r0->route(make_request(2, 0, {text(2, 160)}, 1), view.all, view), 1);
}

TEST(DynamoRouter, TemperatureSamplesEveryInstanceAndTinyTemperatureIsArgmin) {
  FakeView view(2);
  RandomStreams rng(1);
  RouterSettings hot;
  hot.temperature = 100;
  auto r = router("dynamo", view, rng, hot);
  std::set<int> seen;
  for (int i = 0; i < 200; ++i) {
    const int at = r->route(make_request(i, 0, {text(static_cast<uint64_t>(i), 32)}, 1), view.all, view);
    seen.insert(at);
    r->on_finished(RequestId(i), at);
  }
  EXPECT_EQ(seen.size(), 2u);
  RouterSettings cold;
  cold.temperature = 1e-9;
  auto c = router("dynamo", view, rng, cold);
  view.cached[{1, 500}] = 2;  // cost0 = 2 + 2 = 4, cost1 = 0 + 2 = 2
  EXPECT_EQ(c->route(make_request(500, 0, {text(9, 32)}, 1), view.all, view), 1);
}

// SGLang cache_aware with its CLI defaults (threshold 0.3, balance 64 / 1.5).
TEST(SglangRouter, BestMatchAboveThresholdElseSmallestTreeElseLeastLoadedWhenImbalanced) {
  FakeView view(3);
  RandomStreams rng(1);
  auto r = router("sglang", view, rng);
  // Empty trees: smallest tree, ties by lowest id.
  EXPECT_EQ(r->route(make_request(1, 0, {text(1, 1000)}, 1), view.all, view), 0);
  // 400 of 1000 tokens match instance 0 (0.4 > 0.3): instance 0.
  EXPECT_EQ(r->route(make_request(2, 0, {text(1, 400), text(2, 600)}, 1), view.all, view), 0);
  // 200 of 1000 match (0.2): the smallest tree, instance 1 (0 holds 1600 tokens).
  EXPECT_EQ(r->route(make_request(3, 0, {text(1, 200), text(3, 800)}, 1), view.all, view), 1);
  // Load 100 requests on instance 0 (max - min = 100 > 64, 100 > 1.5 * 0): the least loaded, instance 2,
  // although the prompt matches instance 0 entirely.
  for (int i = 0; i < 100; ++i) r->route(make_request(1000 + i, 0, {text(1, 1000)}, 1), {view.all.data(), 1}, view);
  EXPECT_EQ(r->route(make_request(4, 0, {text(1, 1000)}, 1), view.all, view), 2);
}

// A router hashes token identities: an empty segment adds nothing (and must not end the prompt), so
// 160 + 0 + 160 tokens hash like 160 + 160: 20 full blocks of 16, and the partial tail of 165 tokens.
TEST(RouterHashes, EmptySegmentsDoNotEndThePrompt) {
  std::vector<uint64_t> a, b, c;
  router_block_hashes(make_request(1, 0, {text(42, 160), text(99, 0), text(43, 160)}, 1), 16, 256, true, a);
  router_block_hashes(make_request(2, 0, {text(42, 160), text(43, 160)}, 1), 16, 256, true, b);
  EXPECT_EQ(a.size(), 20u);
  EXPECT_EQ(a, b);
  router_block_hashes(make_request(3, 0, {text(42, 160), text(43, 165)}, 1), 16, 256, true, c);
  ASSERT_EQ(c.size(), 21u);  // 20 full blocks and the 5-token tail
  EXPECT_EQ(std::vector<uint64_t>(c.begin(), c.end() - 1), a);
  router_block_hashes(make_request(4, 0, {text(42, 160), text(43, 165)}, 1), 16, 4, true, c);
  EXPECT_EQ(c.size(), 4u);  // max_prefix_blocks caps the walk, tail included
}

// A prompt shorter than a block is one partial hash; like the full blocks', it depends on the request's
// cache salt and LoRA adapter (they used to be left out: 8 salts of one 10-token text all scored a match).
TEST(RouterHashes, AShortPromptsHashDependsOnItsSaltAndAdapter) {
  std::vector<uint64_t> plain, salted, other_salt, adapter;
  RequestSpec r = make_request(1, 0, {text(42, 10)}, 1);
  router_block_hashes(r, 16, 256, true, plain);
  r.cache_salt = "a";
  router_block_hashes(r, 16, 256, true, salted);
  r.cache_salt = "b";
  router_block_hashes(r, 16, 256, true, other_salt);
  r.cache_salt.clear();
  r.lora = "adapter-1";
  router_block_hashes(r, 16, 256, true, adapter);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_NE(plain, salted);
  EXPECT_NE(salted, other_salt);
  EXPECT_NE(plain, adapter);
}

// vLLM's DP client counts its own picks between stats updates (core_client.py: current_counts[eng][0] +=
// client_count). Instance 0 reports 1 running, instance 1 nothing; three requests at once. Stale
// snapshot: 1 (score 0 < 1), then 0 (instance 1 now 4 x 1 = 4 against 1), then 1 (4 against 4 x 1 + 1 =
// 5). Live reports already hold each pick (here nothing changes between the picks): 1, 1, 1.
TEST(VllmDpRouter, StaleReportsCountTheRoutersOwnPicks) {
  for (int64_t epoch : {int64_t{7}, int64_t{-1}}) {
    FakeView view(2);
    view.reports[0].running = 1;
    view.epoch = epoch;
    RandomStreams rng(1);
    auto r = router("vllm_dp", view, rng);
    std::vector<int> picks;
    for (int i = 0; i < 3; ++i) picks.push_back(r->route(make_request(i, 0, {text(1, 64)}, 1), view.all, view));
    EXPECT_EQ(picks, epoch >= 0 ? (std::vector<int>{1, 0, 1}) : (std::vector<int>{1, 1, 1})) << epoch;
  }
}

TEST(RouterRegistry, UnknownPolicyListsTheKnownOnes) {
  FakeView view(1);
  RandomStreams rng(1);
  try {
    router("fastest", view, rng);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cluster.router: unknown router 'fastest'"), std::string::npos) << m;
    for (const char* name : {"round_robin", "random", "least_loaded", "session_affinity", "llm_d", "dynamo", "sglang"})
      EXPECT_NE(m.find(name), std::string::npos) << name << " not in " << m;
  }
}

}  // namespace
}  // namespace kvsim
