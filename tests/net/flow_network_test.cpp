// FlowNetwork: latency first, then max-min fair sharing, re-solved per component, with exact timing.
// Expected times are computed by hand from the round catalog (fast 10 GB/s, slow 2 GB/s, 1 us a hop).
#include "sim/net/flow_network.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/net/topology.h"
#include "tests/net/net_test_util.h"

namespace kvsim {
namespace {

using net_test::link;
using net_test::make_spec;

// a, c -> s1 -> b: flows a->b and c->b share the directed link s1->b. d hangs off s1 by a slow link.
Topology star() {
  return Topology::build(make_spec({"a", "b", "c", "d"}, {"s1"},
                                   {link("a", "s1"), link("s1", "b"), link("c", "s1"), link("d", "s1", "slow")}),
                         net_test::round_catalog());
}

int link_id(const Topology& t, const std::string& name) {
  for (int l = 0; l < t.num_links(); ++l) {
    if (t.link(l).name == name) return l;
  }
  ADD_FAILURE() << "no link " << name;
  return -1;
}

// Completion times are rounded up to the nanosecond: allow the exact value or one more.
void expect_ns(SimTime got, int64_t exact) {
  EXPECT_GE(got.ns(), exact);
  EXPECT_LE(got.ns(), exact + 1);
}

// a->b 1 GB and c->b 2 GB start together: 2 us latency, then 5 GB/s each on s1->b. The first ends
// at 2 us + 1 GB / 5 GB/s = 200.002 ms; the second then has 2 - 1 = 1 GB left at 10 GB/s: +100 ms.
TEST(FlowNetwork, FlowEndingLeavesItsShareAndTheOtherSpeedsUp) {
  const Topology t = star();
  SimContext ctx(1);
  FlowNetwork net(ctx, t);
  std::vector<SimTime> done(2);
  const int a = *t.find_gpu("a"), b = *t.find_gpu("b"), c = *t.find_gpu("c");
  EXPECT_EQ(net.start(a, b, 1'000'000'000, 1, [&] { done[0] = ctx.now(); }), 0);
  EXPECT_EQ(net.start(c, b, 2'000'000'000, 2, [&] { done[1] = ctx.now(); }), 1);
  EXPECT_EQ(net.active_flows(), 2);
  const int shared = link_id(t, "s1->b");
  double rate_at_1ms = 0, flow_rate_at_1ms = 0, bytes_at_1ms = 0;
  ctx.queue.schedule(SimTime::from_ns(1'000'000), Phase::kSample, 0, [&] {
    rate_at_1ms = net.link_rate(shared);
    flow_rate_at_1ms = net.flow_rate(0);
    bytes_at_1ms = net.link_bytes(shared);
  });
  while (ctx.queue.run_one()) {
  }
  EXPECT_DOUBLE_EQ(rate_at_1ms, 10e9);
  EXPECT_DOUBLE_EQ(flow_rate_at_1ms, 5e9);
  EXPECT_NEAR(bytes_at_1ms, 10e9 * (1e-3 - 2e-6), 1.0);  // 10 GB/s since the flows began at 2 us
  expect_ns(done[0], 200'002'000);
  expect_ns(done[1], 300'002'000);
  EXPECT_EQ(net.active_flows(), 0);
  // Bytes conserved: what the sources sent is what the shared link carried and the sink received.
  EXPECT_NEAR(net.link_bytes(shared), 3e9, 1e-3);
  EXPECT_NEAR(net.link_bytes(link_id(t, "a->s1")), 1e9, 1e-3);
  EXPECT_NEAR(net.link_bytes(link_id(t, "c->s1")), 2e9, 1e-3);
  EXPECT_DOUBLE_EQ(net.stats().bytes_done, 3e9);
  EXPECT_EQ(net.stats().flows_done, 2);
  EXPECT_DOUBLE_EQ(net.link_rate(shared), 0.0);
}

// Two flows of one size that begin together end together: a->b and c->b, 1,000,000,007 B each at
// 5 GB/s on s1->b, both end at 2 us + ceil(200,000,001.4 ns). When the first ends, the second's rate
// changes at the instant it is done too: it must end at that instant, not a nanosecond later (two
// P/D pulls into one decode instance then reach the same step). Peaks count only rates that held for
// some time: a->s1 carried 5 GB/s throughout, never the 10 GB/s of the moment between the two
// flows' starts; s1->b 10 GB/s.
TEST(FlowNetwork, EqualFlowsThatBeginTogetherEndTogetherAndPeaksIgnoreInstants) {
  const Topology t = star();
  SimContext ctx(1);
  FlowNetwork net(ctx, t);
  std::vector<SimTime> done(2);
  const int a = *t.find_gpu("a"), b = *t.find_gpu("b"), c = *t.find_gpu("c");
  net.start(a, b, 1'000'000'007, 1, [&] { done[0] = ctx.now(); });
  net.start(c, b, 1'000'000'007, 2, [&] { done[1] = ctx.now(); });
  while (ctx.queue.run_one()) {
  }
  EXPECT_EQ(done[0].ns(), 2'000 + 200'000'002);
  EXPECT_EQ(done[1].ns(), done[0].ns());
  EXPECT_DOUBLE_EQ(net.link_peak_rate(link_id(t, "a->s1")), 5e9);
  EXPECT_DOUBLE_EQ(net.link_peak_rate(link_id(t, "c->s1")), 5e9);
  EXPECT_DOUBLE_EQ(net.link_peak_rate(link_id(t, "s1->b")), 10e9);
}

// d->b crosses the 2 GB/s link d->s1, so it gets 2 and a->b gets the other 8 of s1->b:
// a->b 0.8 GB ends at 2 us + 0.1 s; d->b 0.4 GB at 2 us + 0.2 s (never faster than its slow link).
TEST(FlowNetwork, FlowLimitedBySlowLinkLeavesItsShareToTheOther) {
  const Topology t = star();
  SimContext ctx(1);
  FlowNetwork net(ctx, t);
  SimTime ta, td;
  net.start(*t.find_gpu("a"), *t.find_gpu("b"), 800'000'000, 1, [&] { ta = ctx.now(); });
  net.start(*t.find_gpu("d"), *t.find_gpu("b"), 400'000'000, 2, [&] { td = ctx.now(); });
  ctx.queue.run_until(SimTime::from_ns(10'000));
  EXPECT_DOUBLE_EQ(net.flow_rate(0), 8e9);
  EXPECT_DOUBLE_EQ(net.flow_rate(1), 2e9);
  while (ctx.queue.run_one()) {
  }
  expect_ns(ta, 100'002'000);
  expect_ns(td, 200'002'000);
}

// A rate cap of 1 GB/s on a->b leaves 9 to c->b; options.per_flow_cap applies to every flow.
TEST(FlowNetwork, RateCapAndPerFlowCapBoundAFlow) {
  const Topology t = star();
  SimContext ctx(1);
  FlowNetwork net(ctx, t);
  net.start(*t.find_gpu("a"), *t.find_gpu("b"), 1'000'000, 1, nullptr, 1e9);
  net.start(*t.find_gpu("c"), *t.find_gpu("b"), 1'000'000, 2, nullptr);
  ctx.queue.run_until(SimTime::from_ns(5'000));
  EXPECT_DOUBLE_EQ(net.flow_rate(0), 1e9);
  EXPECT_DOUBLE_EQ(net.flow_rate(1), 9e9);

  SimContext ctx2(1);
  FlowNetwork capped(ctx2, t, FlowOptions{3e9});
  SimTime done;
  capped.start(*t.find_gpu("a"), *t.find_gpu("b"), 3'000'000, 1, [&] { done = ctx2.now(); });
  ctx2.queue.run_until(SimTime::from_ns(5'000));
  EXPECT_DOUBLE_EQ(capped.flow_rate(0), 3e9);
  while (ctx2.queue.run_one()) {
  }
  expect_ns(done, 2'000 + 1'000'000);  // 3 MB at 3 GB/s = 1 ms after the 2 us latency
}

// Latency = path latency (2 hops x 1 us) + extra latency + descriptors x per-descriptor cost; zero
// bytes and src == dst pay the latency only.
TEST(FlowNetwork, LatencyIsPaidBeforeBytesMove) {
  const Topology t = star();
  SimContext ctx(1);
  FlowNetwork net(ctx, t, FlowOptions{0, Duration::us(3)});
  const int a = *t.find_gpu("a"), b = *t.find_gpu("b");
  SimTime t_bytes, t_zero, t_self;
  net.start(
      a, b, 10'000, 1, [&] { t_bytes = ctx.now(); }, 0, Duration::us(10), 4);
  net.start(
      a, b, 0, 2, [&] { t_zero = ctx.now(); }, 0, Duration::us(10));
  net.start(
      a, a, 1'000'000, 3, [&] { t_self = ctx.now(); }, 0, Duration::us(7));
  EXPECT_EQ(net.active_flows(), 3);
  ctx.queue.run_until(SimTime::from_ns(23'000));
  EXPECT_DOUBLE_EQ(net.flow_rate(0), 0.0);  // still in its latency phase (2 + 10 + 4 x 3 = 24 us)
  while (ctx.queue.run_one()) {
  }
  expect_ns(t_bytes, 24'000 + 1'000);  // 10 kB at 10 GB/s = 1 us
  EXPECT_EQ(t_zero.ns(), 12'000);
  EXPECT_EQ(t_self.ns(), 7'000);
  EXPECT_EQ(net.stats().flows_done, 3);
}

// Two islands a-s1-b and c-s2-d joined by s1-s2: a->b and c->d share no link, so each flow's start
// and end re-solves only itself. Work is counted in flow-link incidences (2 per flow here).
TEST(FlowNetwork, FlowsInDisjointComponentsDoNotResolveEachOther) {
  const Topology t =
      Topology::build(make_spec({"a", "b", "c", "d"}, {"s1", "s2"},
                                {link("a", "s1"), link("s1", "b"), link("c", "s2"), link("s2", "d"), link("s1", "s2")}),
                      net_test::round_catalog());
  SimContext ctx(1);
  FlowNetwork net(ctx, t);
  net.start(*t.find_gpu("a"), *t.find_gpu("b"), 1'000'000, 1, nullptr);
  net.start(*t.find_gpu("c"), *t.find_gpu("d"), 2'000'000, 2, nullptr);
  while (ctx.queue.run_one()) {
  }
  EXPECT_EQ(net.stats().solves, 4);             // 2 begins + 2 ends
  EXPECT_EQ(net.stats().solve_flow_visits, 4);  // each begin solves its own flow alone; ends solve none

  // The same two flows over a shared link: the second begin and the first end re-solve both.
  const Topology s = star();
  SimContext ctx2(1);
  FlowNetwork shared(ctx2, s);
  shared.start(*s.find_gpu("a"), *s.find_gpu("b"), 1'000'000, 1, nullptr);
  shared.start(*s.find_gpu("c"), *s.find_gpu("b"), 2'000'000, 2, nullptr);
  while (ctx2.queue.run_one()) {
  }
  EXPECT_EQ(shared.stats().solves, 4);
  EXPECT_EQ(shared.stats().solve_flow_visits, 2 + 4 + 2 + 0);
}

// Every flow's done runs exactly once, however often its rate changed (outdated events ignored),
// and the same starts give the same event fingerprint.
TEST(FlowNetwork, ManyOverlappingFlowsFinishOnceAndDeterministically) {
  const Topology t = star();
  auto run = [&](std::vector<int>& calls) {
    SimContext ctx(1);
    FlowNetwork net(ctx, t);
    const int srcs[3] = {*t.find_gpu("a"), *t.find_gpu("c"), *t.find_gpu("d")};
    int64_t total = 0;
    for (int i = 0; i < 30; ++i) {
      ctx.queue.schedule(SimTime::from_ns(i * 7'000), Phase::kArrival, 1, [&, i] {
        const int64_t bytes = 50'000 + 13'000 * (i % 5);
        total += bytes;
        net.start(srcs[i % 3], *t.find_gpu("b"), bytes, i, [&calls, i] { ++calls[i]; });
      });
    }
    while (ctx.queue.run_one()) {
    }
    EXPECT_NEAR(net.link_bytes(link_id(t, "s1->b")), static_cast<double>(total), 1e-3 * 30);
    EXPECT_EQ(net.active_flows(), 0);
    return ctx.queue.fingerprint();
  };
  std::vector<int> calls1(30), calls2(30);
  const uint64_t f1 = run(calls1), f2 = run(calls2);
  EXPECT_EQ(f1, f2);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(calls1[i], 1) << i;
}

TEST(FlowNetwork, UnreachableDestinationThrows) {
  const Topology t = Topology::build(make_spec({"a", "b", "c", "d"}, {"s1", "s2"},
                                               {link("a", "s1"), link("s1", "b"), link("c", "s2"), link("s2", "d")}),
                                     net_test::round_catalog());
  SimContext ctx(1);
  FlowNetwork net(ctx, t);
  EXPECT_THROW(net.start(*t.find_gpu("a"), *t.find_gpu("c"), 1, 0, nullptr), std::logic_error);
  EXPECT_THROW(net.start(*t.find_gpu("a"), *t.find_gpu("b"), -1, 0, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace kvsim
