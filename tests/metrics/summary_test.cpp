#include "sim/metrics/summary.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/metrics/run_collector.h"
#include "sim/model/json.h"

namespace kvsim {
namespace {

RunSummary sample_summary() {
  RunCollector c;
  for (int i = 0; i < 5; ++i) {
    RequestRecord r;
    r.id = RequestId(i);
    r.arrival = SimTime::zero() + Duration::ms(10 * i);
    r.first_scheduled = r.arrival + Duration::ms(1);
    r.first_token = r.arrival + Duration::ms(30 + i);
    r.finish = r.first_token + Duration::ms(100);
    r.prompt_tokens = 200;
    r.output_tokens = 11;
    r.cached_tokens = 16 * i;
    r.finished = true;
    c.on_request_done(r);
    c.on_tokens(r.id, r.first_token, 1);
    c.on_tokens(r.id, r.finish, 10);
  }
  return c.summarize({.events = 1234, .wall_s = 0.5, .fingerprint = 0x0123456789abcdefULL, .kv_blocks_total = 4096});
}

}  // namespace

TEST(Summary, JsonHasEveryRequiredKey) {
  const std::string json = summary_to_json(sample_summary());
  const JsonValue v = parse_json(json, "summary");
  ASSERT_TRUE(v.is_object());
  for (const char* k : {"count", "finished", "unfinished"}) EXPECT_NE(v.find("requests")->find(k), nullptr) << k;
  for (const char* d : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "queue_ms"}) {
    ASSERT_NE(v.find(d), nullptr) << d;
    for (const char* k : {"mean", "p50", "p90", "p99"}) EXPECT_NE(v.find(d)->find(k), nullptr) << d << "." << k;
  }
  for (const char* k : {"requests_per_s", "output_tokens_per_s"}) EXPECT_NE(v.find("throughput")->find(k), nullptr);
  const JsonValue* pc = v.find("prefix_cache");
  ASSERT_NE(pc, nullptr);
  for (const char* k :
       {"prompt_tokens", "hit_tokens", "token_hit_rate", "queries", "hits", "hit_rate", "preempted_queries",
        "preempted_hits", "queries_blocks", "hits_blocks", "block_hit_rate", "hit_requests"}) {
    EXPECT_NE(pc->find(k), nullptr) << k;
  }
  const JsonValue* lost = pc->find("lost_tokens_by_cause");
  ASSERT_NE(lost, nullptr);
  for (int c = 0; c < kNumMissCauses; ++c) {
    const auto cause = static_cast<MissCause>(c);
    EXPECT_EQ(lost->find(miss_cause_name(cause)) != nullptr, !is_what_if(cause)) << miss_cause_name(cause);
  }
  // The what-if is named as such, apart from the losses.
  ASSERT_NE(pc->find("what_if_lost_tokens"), nullptr);
  EXPECT_NE(pc->find("what_if_lost_tokens")->find("different_image"), nullptr);
  EXPECT_NE(v.find("concurrency")->find("peak"), nullptr);
  EXPECT_NE(v.find("concurrency")->find("mean"), nullptr);
  ASSERT_NE(v.find("preemptions"), nullptr);
  EXPECT_NE(v.find("kv_blocks")->find("total"), nullptr);
  EXPECT_NE(v.find("kv_blocks")->find("peak_used"), nullptr);
  const JsonValue* sim = v.find("sim");
  EXPECT_EQ(sim->find("events")->integer(), 1234);
  EXPECT_NE(sim->find("wall_s"), nullptr);
  EXPECT_EQ(sim->find("fingerprint")->str(), "0123456789abcdef");
  // Spot-check values: TTFT 30..34 ms -> p50 32; each request 10 ITL gaps: one of 100 ms, nine of 0.
  EXPECT_DOUBLE_EQ(v.find("ttft_ms")->find("p50")->number(), 32);
  EXPECT_DOUBLE_EQ(v.find("tpot_ms")->find("mean")->number(), 10);
  EXPECT_DOUBLE_EQ(v.find("itl_ms")->find("mean")->number(), 10);
  EXPECT_EQ(v.find("itl_ms")->find("count")->integer(), 50);
}

TEST(Summary, JsonIsByteIdenticalForIdenticalInputs) {
  EXPECT_EQ(summary_to_json(sample_summary()), summary_to_json(sample_summary()));
}

TEST(Summary, WallTimeCanBeOmittedForDeterminismChecks) {
  RunSummary a = sample_summary();
  RunSummary b = sample_summary();
  b.sim.wall_s = 7.25;
  EXPECT_NE(summary_to_json(a), summary_to_json(b));
  const SummaryJsonOptions no_wall{.include_wall_time = false};
  EXPECT_EQ(summary_to_json(a, no_wall), summary_to_json(b, no_wall));
  EXPECT_EQ(summary_to_json(a, no_wall).find("wall_s"), std::string::npos);
}

TEST(Summary, EmptyDistributionsAreNull) {
  RunSummary s;
  const std::string json = summary_to_json(s);
  EXPECT_NE(json.find("\"p99\": null"), std::string::npos);
  EXPECT_NO_THROW(parse_json(json, "summary"));
}

TEST(Summary, TextTableNamesTheHeadlineFigures) {
  const std::string text = summary_to_text(sample_summary());
  for (const char* k : {"ttft", "tpot", "itl", "e2e", "throughput", "prefix cache", "concurrency"}) {
    EXPECT_NE(text.find(k), std::string::npos) << k;
  }
}

TEST(Summary, DifferentImageIsReportedAsAWhatIfNotAsLostReuse) {
  RunSummary s = sample_summary();
  s.prefix_cache.lost_tokens_by_cause = {};
  s.prefix_cache.lost_tokens_by_cause[static_cast<size_t>(MissCause::kEvicted)] = 7;
  s.prefix_cache.lost_tokens_by_cause[static_cast<size_t>(MissCause::kDifferentImage)] = 95;
  const std::string text = summary_to_text(s);
  EXPECT_NE(text.find("lost reuse   evicted 7 tokens\n"), std::string::npos) << text;
  EXPECT_NE(text.find("what-if      different_image 95 tokens"), std::string::npos) << text;
  const JsonValue v = parse_json(summary_to_json(s), "summary");
  const JsonValue* pc = v.find("prefix_cache");
  EXPECT_EQ(pc->find("lost_tokens_by_cause")->find("different_image"), nullptr);
  EXPECT_EQ(pc->find("what_if_lost_tokens")->find("different_image")->integer(), 95);
}

TEST(Summary, VllmNamesViewUsesVllmsPrometheusNamesAndUnits) {
  // sample_summary(): 5 requests of 200 prompt tokens and 11 outputs, TTFT 30..34 ms, E2E 130..134 ms,
  // TPOT 100 ms / 10 = 10 ms, queue 1 ms. A 6th request, rejected without output, adds no prompt tokens
  // to vllm:prompt_tokens (vLLM counts a prompt when its first token comes out).
  RunCollector c;
  for (int i = 0; i < 5; ++i) {
    RequestRecord r;
    r.id = RequestId(i);
    r.arrival = SimTime::zero() + Duration::ms(10 * i);
    r.first_scheduled = r.arrival + Duration::ms(1);
    r.first_token = r.arrival + Duration::ms(30 + i);
    r.finish = r.first_token + Duration::ms(100);
    r.prompt_tokens = 200;
    r.output_tokens = 11;
    r.prefix_queries = 200;
    r.prefix_hits = 16 * i;
    r.preemptions = i == 2 ? 1 : 0;
    r.finished = true;
    c.on_request_done(r);
  }
  RequestRecord rejected;
  rejected.id = RequestId(9);
  rejected.prompt_tokens = 5000;
  rejected.rejected = RejectReason::kPromptTooLong;
  c.on_request_done(rejected);
  const JsonValue v = parse_json(summary_to_json(c.summarize({})), "summary");
  const JsonValue* n = v.find("vllm_names");
  ASSERT_NE(n, nullptr);
  const JsonValue* ttft = n->find("vllm:time_to_first_token_seconds");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->find("count")->integer(), 5);
  EXPECT_NEAR(ttft->find("sum")->number(), 0.160, 1e-12);  // 0.030 + ... + 0.034
  EXPECT_NEAR(ttft->find("p50")->number(), 0.032, 1e-12);
  EXPECT_NEAR(n->find("vllm:e2e_request_latency_seconds")->find("sum")->number(), 0.660, 1e-12);
  EXPECT_NEAR(n->find("vllm:request_time_per_output_token_seconds")->find("mean")->number(), 0.010, 1e-12);
  EXPECT_NEAR(n->find("vllm:request_queue_time_seconds")->find("sum")->number(), 0.005, 1e-12);
  EXPECT_NE(n->find("vllm:inter_token_latency_seconds"), nullptr);
  EXPECT_EQ(n->find("vllm:prefix_cache_queries")->integer(), 1000);
  EXPECT_EQ(n->find("vllm:prefix_cache_hits")->integer(), 160);  // 16 x (0 + 1 + 2 + 3 + 4)
  EXPECT_EQ(n->find("vllm:num_preemptions")->integer(), 1);
  EXPECT_EQ(n->find("vllm:prompt_tokens")->integer(), 1000);
  EXPECT_EQ(n->find("vllm:generation_tokens")->integer(), 55);
  EXPECT_EQ(n->find("vllm:request_success")->integer(), 5);
}

TEST(Summary, MissCauseNamesAreDistinctSnakeCase) {
  EXPECT_STREQ(miss_cause_name(MissCause::kNone), "none");
  EXPECT_STREQ(miss_cause_name(MissCause::kNoSavedState), "no_saved_state");
  EXPECT_STREQ(miss_cause_name(MissCause::kStateEvicted), "state_evicted");
}

}  // namespace kvsim
