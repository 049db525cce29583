// The optional weight_dtype and kv_dtype columns of `kvsim validate`: empty = the model's default,
// a value reaches the point's scenario, a bad value is a one-line error naming file, line and column
// (exit 2). Expected capacities come from the dtype sizes (FP8 = half of BF16 per element).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sim/app/simulation.h"
#include "sim/app/validate_command.h"
#include "tests/app/cli_runner.h"

namespace kvsim {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = std::string(::testing::TempDir()) + name;
  std::ofstream(path) << text;
  return path;
}

const char* kHeader = "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,dtype,weight_dtype,kv_dtype\n";
const char* kRow = "models/qwen3-8b.json,h100-sxm,1,1024,8,1,50,5,";

std::vector<ValidationPoint> points(const std::string& name, const std::string& rows) {
  return read_validation_points(write_temp(name, kHeader + rows), "models/hardware");
}

TEST(ValidateDtypeColumns, EmptyMeansTheModelDefault) {
  const auto ps = points("vdt_empty.csv", std::string(kRow) + ",,\n");
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].dtype, "auto");
  EXPECT_EQ(ps[0].kv_dtype, "auto");
  const Scenario s = validation_scenario(ps[0], ValidationProtocol{}, "models/hardware", "calibrated");
  EXPECT_EQ(s.engine.weight_dtype, "auto");
  EXPECT_EQ(s.engine.kv_cache_dtype, "auto");
}

TEST(ValidateDtypeColumns, WeightDtypeOverridesDtypeAndBothReachTheScenario) {
  const auto ps = points("vdt_set.csv", std::string(kRow) + "fp8,int4,fp8\n" + kRow + "fp8,,\n");
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0].dtype, "int4");  // weight_dtype wins over dtype
  EXPECT_EQ(ps[0].kv_dtype, "fp8");
  EXPECT_EQ(ps[1].dtype, "fp8");  // weight_dtype empty: the dtype column
  // The grouped sets write int4 in both columns; the dtype column's narrower list is not checked then.
  EXPECT_EQ(points("vdt_int4.csv", std::string(kRow) + "int4,int4,\n")[0].dtype, "int4");
  const Scenario s = validation_scenario(ps[0], ValidationProtocol{}, "models/hardware", "calibrated");
  EXPECT_EQ(s.engine.weight_dtype, "int4");
  EXPECT_EQ(s.engine.kv_cache_dtype, "fp8");
}

// An FP8 cache stores each element in 1 byte instead of 2, so the same KV memory holds twice the blocks
// (to within the rounding of the block count).
TEST(ValidateDtypeColumns, Fp8CacheDoublesTheBlocksOfThePoint) {
  const auto ps = points("vdt_kv.csv", std::string(kRow) + ",,bf16\n" + kRow + ",,fp8\n");
  ValidationProtocol proto;
  proto.requests_per_slot = 1;
  proto.warmup_per_slot = 0;
  const SimulationResult bf16 = run_simulation(validation_scenario(ps[0], proto, "models/hardware", "calibrated"));
  const SimulationResult fp8 = run_simulation(validation_scenario(ps[1], proto, "models/hardware", "calibrated"));
  const double b = static_cast<double>(bf16.pools[0].info.usable_blocks + 1);  // + the null block
  const double f = static_cast<double>(fp8.pools[0].info.usable_blocks + 1);
  EXPECT_NEAR(f, 2 * b, 2.0);
}

using testing::count_lines;
using testing::run_kvsim;

void expect_error(const std::string& file, const std::string& rows, const std::string& needle,
                  const std::string& header = kHeader) {
  const std::string p = write_temp(file, header + rows);
  const testing::CliResult r = run_kvsim("validate " + p);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find(p + ":2: " + needle), std::string::npos) << r.out;
}

TEST(ValidateDtypeColumns, BadValuesNameFileLineAndColumn) {
  expect_error("vdt_badkv.csv", std::string(kRow) + ",,int3\n", "column 'kv_dtype': unknown dtype 'int3'");
  expect_error("vdt_badw.csv", std::string(kRow) + ",int3,\n", "column 'weight_dtype': unknown weight dtype 'int3'");
  expect_error("vdt_badd.csv", std::string(kRow) + "int3,,\n", "column 'dtype': unknown weight dtype 'int3'");
}

TEST(ValidateDtypeColumns, TheOlderDtypeColumnTakesWeightDtypesValues) {
  // 39 committed Kimi-K2.5 rows carry dtype int4; without a weight_dtype cell that is their format.
  const auto ps = read_validation_points(
      write_temp("vdt_olddtype.csv", std::string(kHeader) + kRow + "int4,,\n" + kRow + "fp8_block,,\n"),
      "models/hardware");
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0].dtype, "int4");
  EXPECT_EQ(ps[1].dtype, "fp8_block");
}

// aiconfigurator's quant-mode columns: fp8_block in either marks the row's FP8 weights block-scaled, run as
// the engine's weight_dtype fp8_block under --fp8-block-columns (else as the row states them); other modes
// leave the row alone; fp8_block beside weights that are not FP8 is a contradiction, refused naming the
// column.
TEST(ValidateDtypeColumns, Fp8BlockQuantModeRunsBlockScaledFp8) {
  const std::string h =
      "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,weight_dtype,gemm_quant_mode,moe_quant_mode\n";
  const std::string r = kRow;
  const auto ps = read_validation_points(
      write_temp("vdt_block.csv", h + r + "fp8,fp8,fp8_block\n" + r + "fp8,fp8_block,\n" + r + "fp8,fp8,fp8\n" + r +
                                      "nvfp4,nvfp4,nvfp4\n" + r + ",,fp8_block\n"),
      "models/hardware");
  ASSERT_EQ(ps.size(), 5u);
  const bool marked[] = {true, true, false, false, true};  // the last: auto weights with an fp8_block mode
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(ps[i].fp8_block, marked[i]) << i;
  EXPECT_EQ(ps[2].dtype, "fp8");
  EXPECT_EQ(ps[3].dtype, "nvfp4");
  ValidationProtocol on;
  on.fp8_block_columns = true;
  EXPECT_EQ(validation_scenario(ps[0], ValidationProtocol{}, "models/hardware", "calibrated").engine.weight_dtype,
            "fp8");
  EXPECT_EQ(validation_scenario(ps[0], on, "models/hardware", "calibrated").engine.weight_dtype, "fp8_block");
  EXPECT_EQ(validation_scenario(ps[4], on, "models/hardware", "calibrated").engine.weight_dtype, "fp8_block");
  EXPECT_EQ(validation_scenario(ps[2], on, "models/hardware", "calibrated").engine.weight_dtype, "fp8");
  expect_error("vdt_block_bad.csv", r + "nvfp4,,fp8_block\n",
               "column 'moe_quant_mode': fp8_block contradicts the row's weight dtype 'nvfp4'", h);
}

// An `fp4` row whose quant-mode columns name NVFP4 runs as NVFP4 (4.5 bits a weight with its FP8 scale per
// 16) on a checkpoint not stored in FP4, and as the checkpoint stores it on one that is (gpt-oss's MXFP4).
// Its experts then read the measured NVFP4 row as it is: Qwen3.5-397B on B200, TP 4 (moe_tp 4), a decode
// step of 4 tokens reads models/latency/b200/moe_nvfp4_power_law.csv's row
// "4,4096,1024,10,512,4,1,power_law_1.2,0.03152639865875244" (Qwen3.5's exponent 1.2) on each of its 60 MoE
// layers: 60 x 0.0315264 = 1.8916 ms. Plain 4.0-bit fp4 read the same row 4.0 / 4.5 as long.
TEST(ValidateDtypeColumns, Fp4RowsRunAsTheFormatTheirQuantModeNames) {
  const std::string h =
      "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,engine,weight_dtype,gemm_quant_mode,moe_quant_mode\n";
  const std::string q = "models/latency/configs/qwen3.5-397b-a17b.json,b200,4,1000,200,4,100,8,sglang,";
  const std::string g = "models/gpt-oss-120b.json,b200,1,1000,200,4,100,8,vllm,";
  const auto ps = read_validation_points(
      write_temp("vdt_fp4.csv", h + q + "fp4,nvfp4,nvfp4\n" + q + "fp4,,\n" + g + "fp4,nvfp4,nvfp4\n"),
      "models/hardware");
  ASSERT_EQ(ps.size(), 3u);
  EXPECT_EQ(validation_scenario(ps[0], ValidationProtocol{}, "models/hardware", "calibrated").engine.weight_dtype,
            "nvfp4");
  EXPECT_EQ(validation_scenario(ps[1], ValidationProtocol{}, "models/hardware", "calibrated").engine.weight_dtype,
            "fp4");
  EXPECT_EQ(validation_scenario(ps[2], ValidationProtocol{}, "models/hardware", "calibrated").engine.weight_dtype,
            "fp4");  // gpt-oss: MXFP4 as stored
  const testing::CliResult r =
      testing::run_kvsim("validate --explain " + write_temp("vdt_fp4_one.csv", h + q + "fp4,nvfp4,nvfp4\n"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const size_t line = r.out.find("\n       4     1100");
  ASSERT_NE(line, std::string::npos) << r.out;
  std::istringstream f(r.out.substr(line + 1));
  double v[10];
  for (double& x : v) f >> x;
  EXPECT_NEAR(v[9], 60 * 0.03152639865875244, 1e-4) << r.out;  // the moe column
  expect_error("vdt_fp4_bad.csv", q + "fp4,nvfp4,mxfp4\n", "column 'moe_quant_mode': mxfp4 contradicts", h);
}

// The KV dtype rules for rows whose kv_dtype column is empty (point_kv_dtype). aiconfigurator's dates:
// #144 (2025-12-04) is the first generator that passes a KV dtype; until #338 (2026-02-11)
// Task._get_quant_mode gives fp8 to every GPU with FP8; from #338 on the checkpoint decides: fp8 for
// FP8 and NVFP4 weights, the model dtype for MXFP4 (gpt-oss), INT4 and BF16.
TEST(ValidateDtypeColumns, KvRulesFollowTheGeneratorByDateAndTheWeights) {
  using Rule = ValidationProtocol::KvRule;
  ValidationPoint p;
  p.gpu_fp8 = true;
  p.dtype = "fp8";
  EXPECT_EQ(point_kv_dtype(p, Rule::kColumn), "auto");
  EXPECT_EQ(point_kv_dtype(p, Rule::kWeights), "fp8");
  EXPECT_EQ(point_kv_dtype(p, Rule::kAiconfigurator), "auto");  // no date: the engine's default
  p.measured = "2025-12-03";
  EXPECT_EQ(point_kv_dtype(p, Rule::kAiconfigurator), "auto");
  p.measured = "2025-12-04";
  EXPECT_EQ(point_kv_dtype(p, Rule::kAiconfigurator), "fp8");
  p.dtype = "bf16";  // before #338: fp8 whatever the weights
  EXPECT_EQ(point_kv_dtype(p, Rule::kAiconfigurator), "fp8");
  EXPECT_EQ(point_kv_dtype(p, Rule::kWeights), "auto");
  p.measured = "2026-02-11";
  EXPECT_EQ(point_kv_dtype(p, Rule::kAiconfigurator), "auto");
  p.dtype = "fp4";  // NVFP4 on a checkpoint that is not MXFP4
  EXPECT_EQ(point_kv_dtype(p, Rule::kAiconfigurator), "fp8");
  p.checkpoint_quant = "mxfp4";  // gpt-oss: "fp4" is its MXFP4 checkpoint, KV in BF16
  EXPECT_EQ(point_kv_dtype(p, Rule::kAiconfigurator), "auto");
  EXPECT_EQ(point_kv_dtype(p, Rule::kWeights), "auto");
  p.dtype = "int4";
  p.checkpoint_quant = "compressed-tensors";
  EXPECT_EQ(point_kv_dtype(p, Rule::kAiconfigurator), "auto");
  p.dtype = "auto";  // the checkpoint's own FP8
  p.checkpoint_quant = "fp8";
  EXPECT_EQ(point_kv_dtype(p, Rule::kAiconfigurator), "fp8");
  p.gpu_fp8 = false;  // below SM 89: float16 (the model dtype)
  EXPECT_EQ(point_kv_dtype(p, Rule::kAiconfigurator), "auto");
  EXPECT_EQ(point_kv_dtype(p, Rule::kWeights), "auto");
  p.gpu_fp8 = true;
  p.kv_dtype = "bf16";  // a kv_dtype column always wins
  EXPECT_EQ(point_kv_dtype(p, Rule::kAiconfigurator), "bf16");
}

// The rule reaches the scenario, reads the GPU's FP8 peak from the catalog (H100 has one, A100 none) and
// comes from --kv-dtype or the file's protocol line; an unknown value is refused naming the key.
TEST(ValidateDtypeColumns, KvRuleReachesTheScenarioFromTheProtocolLine) {
  const std::string rows = std::string(kRow) + "fp8,,\n" + "models/qwen3-8b.json,a100-80gb,1,1024,8,1,50,5,bf16,,\n";
  const auto ps = points("vdt_rule.csv", rows);
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_TRUE(ps[0].gpu_fp8);
  EXPECT_FALSE(ps[1].gpu_fp8);
  ValidationProtocol w;
  w.kv_rule = ValidationProtocol::KvRule::kWeights;
  EXPECT_EQ(validation_scenario(ps[0], w, "models/hardware", "calibrated").engine.kv_cache_dtype, "fp8");
  EXPECT_EQ(validation_scenario(ps[1], w, "models/hardware", "calibrated").engine.kv_cache_dtype, "auto");
  const std::string ok =
      write_temp("vdt_rule_line.csv", "# protocol: warmup_per_slot=0 requests_per_slot=1 kv_dtype=weights\n" +
                                          std::string(kHeader) + kRow + "fp8,,\n");
  const testing::CliResult r = run_kvsim("validate " + ok);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("FP8 KV cache for FP8 / NVFP4 weights"), std::string::npos) << r.out;
  EXPECT_EQ(run_kvsim("validate " + ok + " --kv-dtype column").out.find("FP8 KV cache"), std::string::npos);
  const std::string bad =
      write_temp("vdt_rule_bad.csv", "# protocol: warmup_per_slot=0 requests_per_slot=1 kv_dtype=fp9\n" +
                                         std::string(kHeader) + kRow + "fp8,,\n");
  const testing::CliResult b = run_kvsim("validate " + bad);
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.out.find(bad + ":1: protocol kv_dtype: unknown value 'fp9'"), std::string::npos) << b.out;
  EXPECT_EQ(run_kvsim("validate " + ok + " --kv-dtype x").exit_code, 2);
}

}  // namespace
}  // namespace kvsim
