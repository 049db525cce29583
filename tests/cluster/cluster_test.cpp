// The cluster driver with real engine instances: assignment, prefix locality, stale load reports,
// routing latency, invariants and determinism.
#include "sim/cluster/cluster.h"

#include <gtest/gtest.h>

#include "tests/engine/engine_test_util.h"

namespace kvsim {
namespace {

using testing::config_for;
using testing::FixedLatency;
using testing::full_layout;
using testing::make_request;
using testing::RecordingSink;
using testing::text;
using testing::VectorSource;

struct ClusterRun {
  ServingResult result;
  RecordingSink sink;
};

// `n` instances of 16-token blocks and `blocks` blocks each, behind `router`.
ClusterRun run_cluster(int n, const RouterSettings& router, std::vector<RequestSpec> reqs, int64_t blocks = 4000) {
  ClusterRun run;
  SimContext ctx(1);
  FixedLatency lat;
  std::vector<std::unique_ptr<EngineInstance>> engines;
  std::vector<EngineInstance*> ptrs;
  for (int i = 0; i < n; ++i) {
    EngineConfig c = config_for(full_layout(16, blocks));
    c.instance = i;
    engines.push_back(std::make_unique<EngineInstance>(ctx, c, lat, run.sink));
    ptrs.push_back(engines.back().get());
  }
  VectorSource src(std::move(reqs));
  Cluster cluster(ctx, src, ptrs, router);
  run.result = cluster.run();  // checks every instance's invariants
  return run;
}

RouterSettings policy(const std::string& name) {
  RouterSettings s;
  s.policy = name;
  return s;
}

int instance_of(const ClusterRun& r, int64_t id) { return r.sink.requests.at(id).instance; }

TEST(Cluster, RoundRobinAssignsRequestIToInstanceIModN) {
  std::vector<RequestSpec> reqs;
  for (int i = 0; i < 12; ++i) reqs.push_back(make_request(i, i, {text(static_cast<uint64_t>(i), 100)}, 5));
  const ClusterRun r = run_cluster(4, policy("round_robin"), reqs);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(instance_of(r, i), i % 4) << "request " << i;
  EXPECT_EQ(r.result.routed, (std::vector<int64_t>{3, 3, 3, 3}));
  EXPECT_EQ(r.result.finished, 12);
}

// A long shared prefix, then unrelated traffic, then the prefix again: the second copy must go where
// the first one ran (and hit there).
TEST(Cluster, RepeatedPrefixGoesToTheInstanceThatHoldsIt) {
  for (const char* name : {"llm_d", "dynamo", "sglang"}) {
    std::vector<RequestSpec> reqs;
    reqs.push_back(make_request(0, 0, {text(500, 2048), text(1, 64)}, 4));
    for (int i = 1; i <= 6; ++i) reqs.push_back(make_request(i, 100 + i, {text(10 + i, 300)}, 4));
    reqs.push_back(make_request(7, 200, {text(500, 2048), text(2, 64)}, 4));
    const ClusterRun r = run_cluster(4, policy(name), reqs);
    EXPECT_EQ(instance_of(r, 7), instance_of(r, 0)) << name;
    EXPECT_EQ(r.sink.requests.at(7).cached_tokens, 2048) << name;
  }
}

// Two prefix groups interleaved on two instances: each group's requests all land on one instance.
TEST(Cluster, TwoPrefixGroupsEachStayOnOneInstance) {
  for (const char* name : {"llm_d", "dynamo", "sglang"}) {
    std::vector<RequestSpec> reqs;
    for (int i = 0; i < 20; ++i) {
      const uint64_t group = 900 + static_cast<uint64_t>(i % 2);
      reqs.push_back(make_request(i, 50 * i, {text(group, 1024), text(static_cast<uint64_t>(i), 32)}, 3));
    }
    const ClusterRun r = run_cluster(2, policy(name), reqs);
    for (int i = 2; i < 20; ++i) EXPECT_EQ(instance_of(r, i), instance_of(r, i % 2)) << name << " request " << i;
  }
}

// least_loaded with live load spreads four simultaneous long requests 2 / 2; with a 10 s report
// interval it sees the t = 0 snapshot (all idle) for all of them and sends all four to instance 0.
TEST(Cluster, StaleLoadReportsChangeTheChoice) {
  std::vector<RequestSpec> reqs;
  for (int i = 0; i < 4; ++i) reqs.push_back(make_request(i, i, {text(static_cast<uint64_t>(i), 64)}, 50));
  RouterSettings live = policy("least_loaded");
  const ClusterRun a = run_cluster(2, live, reqs);
  EXPECT_EQ(a.result.routed, (std::vector<int64_t>{2, 2}));
  RouterSettings stale = live;
  stale.report_interval_s = 10;
  const ClusterRun b = run_cluster(2, stale, reqs);
  EXPECT_EQ(b.result.routed, (std::vector<int64_t>{4, 0}));
  // A report at 10 ms falls between the first two arrivals of a second batch and the last two.
  std::vector<RequestSpec> late = reqs;
  for (int i = 0; i < 4; ++i) late[static_cast<size_t>(i)].arrival = SimTime::from_ns(i < 2 ? 1000 : 20'000'000);
  stale.report_interval_s = 0.010;
  const ClusterRun c = run_cluster(2, stale, late);
  // Requests 0, 1 see the idle snapshot -> instance 0; requests 2, 3 see the 10 ms one (instance 0
  // running 2) -> instance 1.
  EXPECT_EQ(instance_of(c, 0), 0);
  EXPECT_EQ(instance_of(c, 1), 0);
  EXPECT_EQ(instance_of(c, 2), 1);
  EXPECT_EQ(instance_of(c, 3), 1);
}

TEST(Cluster, RoutingLatencyDelaysTheEngineButLatencyCountsFromArrival) {
  std::vector<RequestSpec> reqs{make_request(0, 0, {text(1, 100)}, 2)};
  const ClusterRun direct = run_cluster(1, policy("round_robin"), reqs);
  RouterSettings slow = policy("round_robin");
  slow.routing_latency_s = 0.005;
  const ClusterRun delayed = run_cluster(1, slow, reqs);
  const RequestRecord& d = direct.sink.requests.at(0);
  const RequestRecord& s = delayed.sink.requests.at(0);
  EXPECT_EQ(s.arrival, d.arrival);
  EXPECT_EQ((*s.first_scheduled - *d.first_scheduled).ns(), 5'000'000);
  EXPECT_EQ((s.first_token - d.first_token).ns(), 5'000'000);
}

TEST(Cluster, SameInputsSameAssignmentAndFingerprint) {
  for (const char* name : {"random", "llm_d", "dynamo", "sglang", "session_affinity"}) {
    std::vector<RequestSpec> reqs;
    for (int i = 0; i < 60; ++i) {
      RequestSpec q = make_request(i, 3 * i, {text(static_cast<uint64_t>(i % 5), 512), text(1000 + i, 40)}, 6);
      q.session = "s" + std::to_string(i % 7);
      reqs.push_back(q);
    }
    const ClusterRun a = run_cluster(5, policy(name), reqs);
    const ClusterRun b = run_cluster(5, policy(name), reqs);
    EXPECT_EQ(a.result.fingerprint, b.result.fingerprint) << name;
    EXPECT_EQ(a.result.routed, b.result.routed) << name;
    for (int i = 0; i < 60; ++i) EXPECT_EQ(instance_of(a, i), instance_of(b, i)) << name;
  }
}

// A cluster of one under round robin is the single-engine driver: same events, same fingerprint,
// whatever policy is named (one candidate).
TEST(Cluster, OneInstanceBehavesLikeTheSingleEngineDriver) {
  std::vector<RequestSpec> reqs;
  for (int i = 0; i < 30; ++i) reqs.push_back(make_request(i, 2 * i, {text(static_cast<uint64_t>(i % 3), 400)}, 8));
  RecordingSink sink;
  const ServingResult single = testing::run_engine(config_for(full_layout(16, 4000)), reqs, sink);
  for (const char* name : {"round_robin", "llm_d", "dynamo", "sglang"}) {
    const ClusterRun r = run_cluster(1, policy(name), reqs);
    EXPECT_EQ(r.result.fingerprint, single.fingerprint) << name;
    EXPECT_EQ(r.result.events, single.events) << name;
  }
}

}  // namespace
}  // namespace kvsim
