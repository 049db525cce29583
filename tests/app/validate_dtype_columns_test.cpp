// The optional weight_dtype and kv_dtype columns of `kvsim validate`: empty = the model's default,
// a value reaches the point's scenario, a bad value is a one-line error naming file, line and column
// (exit 2). Expected capacities come from the dtype sizes (FP8 = half of BF16 per element).
#include <gtest/gtest.h>

#include <fstream>
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

}  // namespace
}  // namespace kvsim
