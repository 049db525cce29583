// Unit tests of the validate protocol: warm-up exclusion in the means and the per-point scenario.
// Expected values are computed by hand from the inputs.
#include <gtest/gtest.h>

#include "sim/app/validate_command.h"
#include "sim/metrics/run_collector.h"

namespace kvsim {
namespace {

RequestRecord done(int64_t id, int64_t arrival_ms, int64_t first_ms, int64_t finish_ms, int64_t out,
                   bool finished = true) {
  RequestRecord r;
  r.id = RequestId(id);
  r.arrival = SimTime::zero() + Duration::ms(arrival_ms);
  r.first_scheduled = r.arrival;
  r.first_token = SimTime::zero() + Duration::ms(first_ms);
  r.finish = SimTime::zero() + Duration::ms(finish_ms);
  r.output_tokens = out;
  r.requested_output_tokens = out;
  r.finished = finished;
  return r;
}

RunCollector four_requests() {
  RunCollector c;
  c.on_request_done(done(0, 0, 100, 200, 11));    // warm-up: TTFT 100, TPOT 100/10 = 10
  c.on_request_done(done(1, 0, 10, 50, 5));       // TTFT 10, TPOT 40/4 = 10
  c.on_request_done(done(2, 20, 50, 110, 4));     // TTFT 30, TPOT 60/3 = 20
  c.on_request_done(done(3, 0, 40, 40, 1));       // TTFT 40, no TPOT (one token)
  c.on_request_done(done(4, 0, 5, 9, 3, false));  // unfinished: excluded
  return c;
}

TEST(ValidateProtocol, MeansExcludeWarmupRequestsById) {
  const PointMeans m = measured_means(four_requests(), 1);
  EXPECT_EQ(m.requests, 3);
  EXPECT_NEAR(m.ttft_ms, (10.0 + 30.0 + 40.0) / 3.0, 1e-9);
  EXPECT_NEAR(m.tpot_ms, (10.0 + 20.0) / 2.0, 1e-9);
}

TEST(ValidateProtocol, NoWarmupMeansAllFinishedRequests) {
  const PointMeans m = measured_means(four_requests(), 0);
  EXPECT_EQ(m.requests, 4);
  EXPECT_NEAR(m.ttft_ms, (100.0 + 10.0 + 30.0 + 40.0) / 4.0, 1e-9);
  EXPECT_NEAR(m.tpot_ms, (10.0 + 10.0 + 20.0) / 3.0, 1e-9);
}

ValidationPoint llama_point() {
  ValidationPoint p;
  p.model = "models/latency/configs/llama-3.1-8b.json";
  p.gpu = "h100-sxm";
  p.engine = "trtllm";
  p.isl = 1024;
  p.osl = 128;
  p.concurrency = 8;
  p.ttft_ms = 1;
  p.tpot_ms = 1;
  return p;
}

TEST(ValidateProtocol, ScenarioSendsWarmupPlusMeasuredRequestsPerSlot) {
  ValidationPoint p = llama_point();
  p.max_num_batched_tokens = 8 + 1024 + 1500;  // aiconfigurator rule: max_batch_size + isl + 1500
  p.max_num_seqs = 8;
  p.enable_chunked_prefill = false;
  ValidationProtocol proto;  // 2 warm-up + 10 measured per slot
  const Scenario s = validation_scenario(p, proto, "models/hardware", "calibrated");
  ASSERT_TRUE(s.workload.synthetic.has_value());
  EXPECT_EQ(s.workload.synthetic->groups, (2 + 10) * 8);
  EXPECT_EQ(s.workload.synthetic->concurrency, 8);
  EXPECT_EQ(s.engine.max_num_batched_tokens, 2532);
  EXPECT_EQ(s.engine.max_num_seqs, 8);
  EXPECT_FALSE(s.engine.enable_chunked_prefill);
  EXPECT_FALSE(s.engine.enable_prefix_caching);
}

TEST(ValidateProtocol, EngineDefaultsIgnoreTheRowColumnsAndExtraClientsRaiseConcurrency) {
  ValidationPoint p = llama_point();
  p.max_num_batched_tokens = 2532;
  p.max_num_seqs = 8;
  p.enable_chunked_prefill = false;
  ValidationProtocol proto;
  proto.use_engine_columns = false;
  proto.requests_per_slot = 4;
  proto.warmup_per_slot = 0;
  proto.extra_clients = 1;
  const Scenario s = validation_scenario(p, proto, "models/hardware", "calibrated");
  EXPECT_EQ(s.workload.synthetic->groups, 4 * 8);
  EXPECT_EQ(s.workload.synthetic->concurrency, 9);
  EXPECT_FALSE(s.engine.max_num_batched_tokens.has_value());
  EXPECT_EQ(s.engine.max_num_seqs, 256);  // max(concurrency, 256) when the row's setting is ignored
  EXPECT_TRUE(s.engine.enable_chunked_prefill);
}

// aiconfigurator's generator flags by date (the rules quoted in generator_deployment's comments):
// TRT-LLM max_num_tokens = c + isl + 1500, rounded up to 32 from 2026-01-29; vLLM's only from 2026-01-08;
// SGLang max_prefill_tokens = isl + 1500 from 2025-12-04 and enable_mixed_chunk from 2026-01-19.
TEST(ValidateProtocol, GeneratorDeploymentFollowsTheRulesInForceOnTheMeasuredDate) {
  ValidationPoint p = llama_point();  // TRT-LLM, c 8, isl 1024
  p.measured = "2025-10-20";
  DeploymentFlags f = generator_deployment(p);
  EXPECT_EQ(f.max_num_batched_tokens, 8 + 1024 + 1500);  // 2532, before the rounding rule
  EXPECT_EQ(f.enable_chunked_prefill, false);
  EXPECT_FALSE(f.max_prefill_tokens.has_value());
  p.measured = "2026-03-01";
  EXPECT_EQ(generator_deployment(p).max_num_batched_tokens, 2560);  // 2532 rounded up to 80 x 32
  p.measured = "";                                                  // date unknown: engine defaults
  EXPECT_FALSE(generator_deployment(p).max_num_batched_tokens.has_value());

  p.engine = "vllm";
  p.measured = "2026-01-07";  // the rule existed, run.sh did not pass it yet
  EXPECT_FALSE(generator_deployment(p).max_num_batched_tokens.has_value());
  EXPECT_FALSE(generator_deployment(p).max_model_len.has_value());
  p.measured = "2026-01-08";
  f = generator_deployment(p);
  EXPECT_EQ(f.max_num_batched_tokens, 2532);
  EXPECT_EQ(f.max_model_len, 1024 + 128 + 1500);  // --max-model-len isl + osl + 1500, the same change
  ValidationProtocol generator;
  generator.deployment = ValidationProtocol::Deployment::kAiconfigurator;
  EXPECT_EQ(validation_scenario(p, generator, "models/hardware", "calibrated").engine.max_model_len, 2652);
  EXPECT_FALSE(validation_scenario(p, ValidationProtocol{}, "models/hardware", "calibrated").engine.max_model_len);
  EXPECT_FALSE(f.enable_chunked_prefill.has_value());  // vLLM keeps chunked prefill on

  p.engine = "sglang";
  p.measured = "2026-01-18";
  f = generator_deployment(p);
  EXPECT_EQ(f.max_prefill_tokens, 1024 + 1500);
  EXPECT_FALSE(f.enable_mixed_chunk.has_value());
  EXPECT_FALSE(f.max_num_batched_tokens.has_value());
  p.measured = "2026-01-19";
  EXPECT_EQ(generator_deployment(p).enable_mixed_chunk, true);
  p.parallel.dp = 2;  // not the rules' single-worker agg branch
  EXPECT_FALSE(generator_deployment(p).max_prefill_tokens.has_value());
}

TEST(ValidateProtocol, AiconfiguratorDeploymentFillsOnlyTheEmptyColumns) {
  ValidationPoint p = llama_point();
  p.engine = "sglang";
  p.measured = "2026-04-01";
  p.max_prefill_tokens = 4000;  // the row's column wins
  ValidationProtocol proto;
  proto.deployment = ValidationProtocol::Deployment::kAiconfigurator;
  Scenario s = validation_scenario(p, proto, "models/hardware", "calibrated");
  EXPECT_EQ(s.engine.max_prefill_tokens, 4000);
  EXPECT_EQ(s.engine.enable_mixed_chunk, true);
  EXPECT_FALSE(s.engine.max_num_batched_tokens.has_value());
  proto.deployment = ValidationProtocol::Deployment::kEngineDefaults;
  s = validation_scenario(p, proto, "models/hardware", "calibrated");
  EXPECT_EQ(s.engine.max_prefill_tokens, 4000);
  EXPECT_FALSE(s.engine.enable_mixed_chunk.has_value());
  proto.deployment = ValidationProtocol::Deployment::kAiconfigurator;
  proto.use_engine_columns = false;  // --engine-defaults: neither columns nor generator flags
  s = validation_scenario(p, proto, "models/hardware", "calibrated");
  EXPECT_FALSE(s.engine.max_prefill_tokens.has_value());
  EXPECT_FALSE(s.engine.enable_mixed_chunk.has_value());
}

}  // namespace
}  // namespace kvsim
