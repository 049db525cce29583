// Disaggregated points of `kvsim validate` (sim/app/validate_disagg.h): a row with prefill and decode
// worker columns runs as a prefill pool and a decode pool under the decider `always`; rows without them
// are the colocated point they were; bad values and points that do not fit are one-line errors naming
// file, line and column. Expected values come from the inputs and from Qwen3-8B's config (36 layers x
// 8 KV heads x 128 x 2 (K, V) x 2 B = 144 KiB per token, latency-model.md section 4.1), never from a run.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "sim/app/simulation.h"
#include "sim/app/validate_command.h"
#include "sim/core/errors.h"
#include "tests/app/cli_runner.h"

namespace kvsim {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = std::string(::testing::TempDir()) + name;
  std::ofstream(path) << text;
  return path;
}

const char* kHeader =
    "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,prefill_workers,prefill_tp,decode_workers,decode_tp,topology\n";
const char* kRow = "models/qwen3-8b.json,h100-sxm,1,1024,8,1,50,5,";

std::vector<ValidationPoint> points(const std::string& name, const std::string& rows) {
  return read_validation_points(write_temp(name, kHeader + rows), "models/hardware");
}

ValidationProtocol one_request_per_client() {
  ValidationProtocol p;
  p.requests_per_slot = 2;
  p.warmup_per_slot = 0;
  return p;
}

TEST(ValidateDisagg, RowWithoutTheColumnsIsColocated) {
  const auto ps = points("vd_colocated.csv", std::string(kRow) + ",,,,\n");
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_FALSE(ps[0].disagg.has_value());
  const Scenario s = validation_scenario(ps[0], one_request_per_client(), "models/hardware", "calibrated");
  EXPECT_FALSE(s.cluster.present);
}

TEST(ValidateDisagg, DefaultTopologyPutsEachSideOnItsOwnNode) {
  const auto ps = points("vd_default.csv", std::string(kRow) + "1,,1,,\n");
  ASSERT_TRUE(ps[0].disagg.has_value());
  const DisaggregatedPoint& d = *ps[0].disagg;
  EXPECT_EQ(d.topology, "hgx-h100-2node-ib-ndr");
  EXPECT_EQ(d.prefill_tp, 1);  // the row's tp
  EXPECT_EQ(d.prefill_gpus, (std::vector<std::string>{"node0/gpu0"}));
  EXPECT_EQ(d.decode_gpus, (std::vector<std::string>{"node1/gpu0"}));
}

TEST(ValidateDisagg, DefaultTopologyGrowsToTheNodesNeeded) {
  // 2 x TP8 prefill + 1 x TP8 decode: 3 nodes, more than the 2-node fabric has.
  const auto ps = points("vd_three_nodes.csv", std::string(kRow) + "2,8,1,8,\n");
  const DisaggregatedPoint& d = *ps[0].disagg;
  EXPECT_EQ(d.topology, "hgx-4node-ib-ndr");
  ASSERT_EQ(d.prefill_gpus.size(), 16u);
  EXPECT_EQ(d.prefill_gpus.front(), "node0/gpu0");
  EXPECT_EQ(d.prefill_gpus.back(), "node1/gpu7");
  ASSERT_EQ(d.decode_gpus.size(), 8u);
  EXPECT_EQ(d.decode_gpus.front(), "node2/gpu0");
  // 3 x TP8 + 2 x TP8: 5 nodes, more than the 4-node fabric has.
  EXPECT_EQ(points("vd_five_nodes.csv", std::string(kRow) + "3,8,2,8,\n")[0].disagg->topology,
            "hgx-h100-16node-ib-ndr");
}

TEST(ValidateDisagg, GivenTopologyIsPackedNodeByNode) {
  const auto ps = points("vd_nvlink.csv", std::string(kRow) + "1,2,2,1,hgx-h100-1node\n");
  const DisaggregatedPoint& d = *ps[0].disagg;
  EXPECT_EQ(d.prefill_gpus, (std::vector<std::string>{"node0/gpu0", "node0/gpu1"}));
  EXPECT_EQ(d.decode_gpus, (std::vector<std::string>{"node0/gpu2", "node0/gpu3"}));
}

TEST(ValidateDisagg, PointRunsAsPrefillAndDecodePoolsWithAPull) {
  const auto ps = points("vd_run.csv", std::string(kRow) + "1,,1,,\n");
  const ValidationProtocol proto = one_request_per_client();
  const Scenario s = validation_scenario(ps[0], proto, "models/hardware", "calibrated");
  ASSERT_TRUE(s.cluster.disaggregated);
  ASSERT_EQ(s.cluster.pools.size(), 2u);
  EXPECT_EQ(s.cluster.pools[0].role, "prefill");
  EXPECT_EQ(s.cluster.pools[1].role, "decode");
  EXPECT_EQ(s.cluster.disaggregation.decider, "always");
  const SimulationResult r = run_simulation(s);
  ASSERT_EQ(r.collector->requests().size(), 2u);
  EXPECT_EQ(r.summary.disaggregation.requests, 2);  // every request prefilled remotely
  const double kv_per_token = 36.0 * 8 * 128 * 2 * 2;
  for (const RequestRow& q : r.collector->requests()) {
    ASSERT_TRUE(q.finished);
    EXPECT_EQ(q.prefill_instance, 0);
    EXPECT_EQ(q.instance, 1);
    EXPECT_GT(q.transfer_end, q.transfer_start);
    EXPECT_GE(q.first_token, q.transfer_end);  // the pull is inside the TTFT
    // The prompt's cache crosses once (GQA, TP1 -> TP1), to within a 16-token block.
    EXPECT_NEAR(static_cast<double>(q.transfer_bytes), kv_per_token * 1024, kv_per_token * 16);
  }
  // The same point colocated: no pull and no second step before the first token.
  ValidationPoint colocated = ps[0];
  colocated.disagg.reset();
  const SimulationResult c = run_simulation(validation_scenario(colocated, proto, "models/hardware", "calibrated"));
  EXPECT_GT(measured_means(*r.collector, 0).ttft_ms, measured_means(*c.collector, 0).ttft_ms);
}

using testing::count_lines;
using testing::run_kvsim;

void expect_error(const std::string& file, const std::string& rows, const std::string& needle) {
  const std::string p = write_temp(file, kHeader + rows);
  const testing::CliResult r = run_kvsim("validate " + p);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find(p + ":2: " + needle), std::string::npos) << r.out;
}

TEST(ValidateDisagg, BadValuesNameFileLineAndColumn) {
  expect_error("vd_tp0.csv", std::string(kRow) + "1,0,1,,\n",
               "column 'prefill_tp': must be a whole number >= 1 (got 0)");
  expect_error("vd_workers.csv", std::string(kRow) + "1,,1.5,,\n",
               "column 'decode_workers': must be a whole number >= 1 (got 1.5)");
  expect_error("vd_nan.csv", std::string(kRow) + "x,,1,,\n", "column 'prefill_workers': not a number ('x')");
  expect_error("vd_half.csv", std::string(kRow) + ",4,,,\n",
               "column 'prefill_tp': a disaggregated point needs prefill_workers and decode_workers");
}

TEST(ValidateDisagg, PointThatDoesNotFitNamesTheColumn) {
  // One node of 8: 1 x TP8 prefill fills it, the decode instance has no room.
  expect_error("vd_full.csv", std::string(kRow) + "1,8,1,8,hgx-h100-1node\n",
               "column 'topology': topology 'hgx-h100-1node' (8 GPUs) has no room for decode instance 0");
  // TP 16 spans two HGX nodes.
  expect_error("vd_tp16.csv", std::string(kRow) + "1,16,1,,\n", "column 'prefill_tp': must be <= 8");
  // 9 + 9 nodes of TP8 with a node per side: more than the 16-node fabric.
  expect_error("vd_18nodes.csv", std::string(kRow) + "9,8,9,8,\n", "column 'decode_workers': 9 prefill x TP 8");
  expect_error("vd_unknown.csv", std::string(kRow) + "1,,1,,no-such-fabric\n",
               "column 'topology': no topology 'no-such-fabric'");
  expect_error("vd_a100.csv", "models/qwen3-8b.json,a100-80gb,1,1024,8,1,50,5,1,,1,,\n",
               "column 'prefill_workers': no built-in topology for GPU 'a100-80gb'");
}

TEST(ValidateDisagg, CommandReportsTheSplitAndThePull) {
  const std::string p = write_temp("vd_cli.csv", std::string(kHeader) + kRow + ",,,,\n" + kRow + "1,,1,,\n");
  const testing::CliResult r = run_kvsim("validate " + p + " --requests-per-slot 1 --warmup-per-slot 0");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("P/D 1xTP1 -> 1xTP1 on hgx-h100-2node-ib-ndr, 1 remote prefill(s), mean pull"),
            std::string::npos)
      << r.out;
  const size_t l2 = r.out.find("\n2 ");  // the colocated row keeps its plain line
  ASSERT_NE(l2, std::string::npos) << r.out;
  EXPECT_EQ(r.out.substr(l2 + 1, r.out.find('\n', l2 + 1) - l2 - 1).find("P/D"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nall "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace kvsim
