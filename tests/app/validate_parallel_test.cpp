// Parallel points of `kvsim validate` (sim/app/validate_parallel.h) end to end: the optional columns dp,
// pp, ep, nodes turn into the engine keys, a DP point runs as DP ranks behind vLLM's load balancer, PP
// and multi-node TP points run, and a row without the columns is the point it was. Expected values come
// from the inputs and from the configs' shapes (Qwen3-30B-A3B: 48 MoE layers x 128 experts x 3 x 2048 x
// 768), never from a run; comparisons between runs check directions the formulas fix.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "sim/app/simulation.h"
#include "sim/app/validate_command.h"
#include "sim/model/config_reader.h"
#include "sim/model/parallel_layout.h"

namespace kvsim {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = std::string(::testing::TempDir()) + name;
  std::ofstream(path) << text;
  return path;
}

const char* kHeader = "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,dp,pp,ep,nodes\n";

ValidationPoint point(const std::string& name, const std::string& row) {
  const auto ps = read_validation_points(write_temp(name, kHeader + row + "\n"), "models/hardware");
  EXPECT_EQ(ps.size(), 1u);
  return ps.at(0);
}

ValidationProtocol two_requests_per_client() {
  ValidationProtocol p;
  p.requests_per_slot = 2;
  p.warmup_per_slot = 0;
  return p;
}

TEST(ValidateParallel, EmptyColumnsLeaveThePointAsItWas) {
  const ValidationPoint p = point("vp_empty.csv", "models/qwen3-8b.json,h100-sxm,1,256,8,2,50,5,,,,");
  EXPECT_FALSE(p.parallel.any());
  EXPECT_EQ(parallel_engine_yaml(p.parallel), "");
  const Scenario s = validation_scenario(p, two_requests_per_client(), "models/hardware", "calibrated");
  EXPECT_EQ(s.engine.data_parallel_size, 1);
  EXPECT_EQ(s.engine.pipeline_parallel_size, 1);
  EXPECT_FALSE(s.engine.enable_expert_parallel);
  EXPECT_EQ(s.cluster.pools.at(0).instances, 1);
}

TEST(ValidateParallel, ExpertWeightsOfTheMoeModel) {
  const ModelSpec m = read_model_config("models/qwen3-30b-a3b.json");
  EXPECT_EQ(expert_params(m), 48LL * 128 * 3 * 2048 * 768);  // 28,991,029,248
}

TEST(ValidateParallel, DpPointRunsAsDpRanksBehindTheLoadBalancer) {
  // DP 2 x TP 1 with EP 2 (= dp x tp): two engines, each with its own cache and half the clients.
  const ValidationPoint p = point("vp_dp.csv", "models/qwen3-30b-a3b.json,h100-sxm,1,256,8,4,50,5,2,,2,");
  EXPECT_EQ(p.parallel.dp, 2);
  EXPECT_TRUE(p.parallel.expert_parallel);
  const Scenario s = validation_scenario(p, two_requests_per_client(), "models/hardware", "calibrated");
  ASSERT_EQ(s.cluster.pools.size(), 1u);
  EXPECT_EQ(s.cluster.pools[0].instances, 2);
  EXPECT_EQ(s.cluster.router.policy, "vllm_dp");
  const SimulationResult r = run_simulation(s);
  ASSERT_EQ(r.collector->requests().size(), 8u);
  int per_instance[2] = {0, 0};
  for (const RequestRow& q : r.collector->requests()) {
    ASSERT_TRUE(q.finished);
    ASSERT_TRUE(q.instance == 0 || q.instance == 1);
    ++per_instance[q.instance];
  }
  EXPECT_EQ(per_instance[0], 4);  // 4 clients, 8 requests, balanced by 4 x waiting + running
  EXPECT_EQ(per_instance[1], 4);
  // Same point, same seed: the same run.
  EXPECT_EQ(run_simulation(s).fingerprint, r.fingerprint);
  // Each DP rank's GPU holds half the experts: more room for its own cache than one engine at TP 1.
  ValidationPoint single = p;
  single.parallel = {};
  const SimulationResult one =
      run_simulation(validation_scenario(single, two_requests_per_client(), "models/hardware", "calibrated"));
  EXPECT_GT(r.engine.layout.num_blocks, one.engine.layout.num_blocks);
}

// aiconfigurator's SGLang / TensorRT-LLM rows record EP x moe-TP layouts: tp 4, ep 2, moe_tp 2 is
// --tp 4 --ep-size 2, each expert split 4 / 2 = 2 ways. It becomes expert_parallel_size 2 and runs.
TEST(ValidateParallel, EpTimesMoeTpRowBecomesExpertParallelSize) {
  const auto ps = read_validation_points(
      write_temp("vp_moe_tp.csv",
                 "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,engine,ep,moe_tp,enable_expert_parallel\n"
                 "models/qwen3-30b-a3b.json,h100-sxm,4,256,8,2,50,5,sglang,2,2,1\n"),
      "models/hardware");
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_TRUE(ps[0].parallel.expert_parallel);
  EXPECT_EQ(ps[0].parallel.ep, 2);
  EXPECT_EQ(parallel_suffix(ps[0].parallel, 4), "  layout DP1 x PP1 x TP4, EP2 x moe-TP2, 8 GPUs/node");
  const Scenario s = validation_scenario(ps[0], two_requests_per_client(), "models/hardware", "calibrated");
  EXPECT_EQ(s.engine.expert_parallel_size, 2);
  const SimulationResult r = run_simulation(s);
  ASSERT_EQ(r.collector->requests().size(), 4u);
  for (const RequestRow& q : r.collector->requests()) EXPECT_TRUE(q.finished);
  // ep = dp x tp is vLLM's EP: no expert_parallel_size key.
  const auto full =
      read_validation_points(write_temp("vp_full_ep.csv",
                                        "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,engine,ep,moe_tp\n"
                                        "models/qwen3-30b-a3b.json,h100-sxm,4,256,8,2,50,5,vllm,4,1\n"),
                             "models/hardware");
  EXPECT_EQ(full.at(0).parallel.ep, 0);
  EXPECT_EQ(parallel_engine_yaml(full.at(0).parallel), "  enable_expert_parallel: true\n");
}

TEST(ValidateParallel, PipelineAndMultiNodeTpPointsRun) {
  const ValidationPoint pp = point("vp_pp.csv", "models/qwen3-8b.json,h100-sxm,2,256,8,2,50,5,,2,,");
  const SimulationResult rp =
      run_simulation(validation_scenario(pp, two_requests_per_client(), "models/hardware", "calibrated"));
  for (const RequestRow& q : rp.collector->requests()) EXPECT_TRUE(q.finished);
  EXPECT_GT(measured_means(*rp.collector, 0).tpot_ms, 0);
  // TP 16 over 2 nodes (gpus_per_node 8: the all-reduce on IB NDR) is slower per token than TP 16 on one
  // 16-GPU NVLink domain (nodes 1).
  const auto tpot = [](const std::string& name, const std::string& row) {
    const ValidationPoint p = point(name, row);
    return measured_means(
               *run_simulation(validation_scenario(p, two_requests_per_client(), "models/hardware", "calibrated"))
                    .collector,
               0)
        .tpot_ms;
  };
  EXPECT_EQ(point("vp_tp16.csv", "models/qwen3-8b.json,h100-sxm,16,256,8,2,50,5,,,,2").parallel.gpus_per_node, 8);
  EXPECT_GT(tpot("vp_tp16_2.csv", "models/qwen3-8b.json,h100-sxm,16,256,8,2,50,5,,,,2"),
            tpot("vp_tp16_1.csv", "models/qwen3-8b.json,h100-sxm,16,256,8,2,50,5,,,,1"));
}

}  // namespace
}  // namespace kvsim
