#include "sim/perf/calibrated_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "sim/core/errors.h"
#include "sim/model/config_reader.h"
#include "sim/model/sizing.h"
#include "sim/perf/csv_file.h"
#include "sim/perf/fit.h"
#include "sim/perf/gemm_table.h"
#include "sim/perf/latency_tables.h"
#include "sim/scenario/hardware_catalog.h"

namespace kvsim {
namespace {

const std::string kRoot = KVSIM_SOURCE_DIR;

// A made-up GPU: 100 TFLOP/s, 1 TB/s. SOL of (m, n, k) = max(2mnk / 1e14, 2 (mk + nk + mn) / 1e12).
PeakRates round_peak() { return {100e12, 1e12, 2.0}; }

// A 2 x 2 x 2 grid, m in {1, 16}, n and k in {1024, 4096}, with made-up latencies.
std::vector<GemmPoint> tiny_grid() {
  std::vector<GemmPoint> p;
  for (double m : {1.0, 16.0})
    for (double n : {1024.0, 4096.0})
      for (double k : {1024.0, 4096.0}) p.push_back({m, n, k, 1e-5 * (m == 1 ? 1.0 : 2.0) * (n / 1024) * (k / 1024)});
  return p;
}

TEST(GemmTable, MeasuredPointsComeBackExactly) {
  const GemmTable t(tiny_grid(), round_peak());
  for (const auto& p : tiny_grid()) EXPECT_DOUBLE_EQ(t.seconds(p.m, p.n, p.k), p.seconds);
}

TEST(GemmTable, RealH100TablePointsComeBackExactly) {
  const LatencyTables tables = load_latency_tables(kRoot + "/models/latency", "h100-sxm");
  ASSERT_TRUE(tables.has_gemm());
  const GemmTable t(tables.gemm, {989e12, 3.35e12, 2.0});
  for (size_t i = 0; i < tables.gemm.size(); i += 97) {
    const auto& p = tables.gemm[i];
    EXPECT_DOUBLE_EQ(t.seconds(p.m, p.n, p.k), p.seconds) << p.m << "x" << p.n << "x" << p.k;
  }
}

TEST(GemmTable, LinearInTokensBetweenMeasuredM) {
  const GemmTable t(tiny_grid(), round_peak());
  // m = 8.5 is halfway between 1 and 16: (1e-5 + 2e-5) / 2 at n = k = 1024.
  EXPECT_NEAR(t.seconds(8.5, 1024, 1024), 1.5e-5, 1e-12);
}

TEST(GemmTable, HoldsBoundaryUtilisationBeyondTheGrid) {
  const GemmTable t(tiny_grid(), round_peak());
  // m = 32 > 16: t(16) * SOL(32) / SOL(16). n = k = 4096: SOL(16) = max(2*16*4096^2/1e14 = 5.37e-6,
  // 2*(16*4096*2 + 4096^2)/1e12 = 3.3817e-5) = 3.3817e-5; SOL(32) = 2*(32*4096*2 + 4096^2)/1e12 = 3.4079e-5.
  const double sol16 = 2.0 * (16.0 * 4096 * 2 + 4096.0 * 4096) / 1e12;
  const double sol32 = 2.0 * (32.0 * 4096 * 2 + 4096.0 * 4096) / 1e12;
  EXPECT_NEAR(t.seconds(32, 4096, 4096), 2e-5 * 16 * sol32 / sol16, 1e-12);
}

TEST(GemmTable, NeverBeatsTheHardwareLimit) {
  const LatencyTables tables = load_latency_tables(kRoot + "/models/latency", "h100-sxm");
  const PeakRates peak{989e12, 3.35e12, 2.0};
  const GemmTable t(tables.gemm, peak);
  for (double m : {1.0, 7.0, 100.0, 3000.0, 50000.0, 200000.0})
    for (double n : {100.0, 4096.0, 20000.0, 100000.0})
      for (double k : {10.0, 4096.0, 70000.0})
        EXPECT_GE(t.seconds(m, n, k), gemm_sol_seconds(m, n, k, peak) * 0.999999);
}

TEST(Curve1D, LinearBetweenPointsAndProportionalBeyond) {
  const Curve1D c({1, 3}, {10, 20});
  EXPECT_DOUBLE_EQ(c(1), 10);
  EXPECT_DOUBLE_EQ(c(2), 15);
  EXPECT_DOUBLE_EQ(c(6), 40);  // 20 * 6 / 3
}

TEST(Fit, RecoversExactCoefficients) {
  // y = 2 + 3 x, no noise.
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (double v : {1.0, 2.0, 5.0, 10.0}) {
    x.push_back({1.0, v});
    y.push_back(2 + 3 * v);
  }
  const auto c = fit_relative_nonnegative(x, y);
  EXPECT_NEAR(c[0], 2.0, 1e-9);
  EXPECT_NEAR(c[1], 3.0, 1e-9);
}

TEST(Fit, NegativeCoefficientIsDroppedAndRefitted) {
  // y = 4 x exactly but with a constant column; a tiny negative intercept must not survive.
  std::vector<std::vector<double>> x{{1, 1}, {1, 2}, {1, 4}};
  std::vector<double> y{3.9, 8.0, 16.1};
  const auto c = fit_relative_nonnegative(x, y);
  EXPECT_GE(c[0], 0.0);
  EXPECT_GT(c[1], 0.0);
}

TEST(CsvFile, MissingColumnAndBadNumberNameFileLineColumn) {
  const CsvFile f = parse_csv_text("a,b\n1,2\n3,x\n", "t.csv");
  try {
    f.column("c");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "t.csv:1: missing column 'c'");
  }
  try {
    f.number(1, 1);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "t.csv:3: column 'b': not a number ('x')");
  }
}

TEST(CsvFile, ByteOrderMarksLineEndsNulsAndHexAreCaughtOrSkipped) {
  // A UTF-8 BOM is skipped (the first column is 'a', not "\xEF\xBB\xBFa"); CRLF rows parse.
  const CsvFile bom = parse_csv_text(
      "\xEF\xBB\xBF"
      "a,b\r\n1,2\r\n",
      "t.csv");
  EXPECT_EQ(bom.column("a"), 0);
  EXPECT_DOUBLE_EQ(bom.number(0, 1), 2.0);
  const auto error = [](const std::string& text) {
    try {
      const CsvFile f = parse_csv_text(text, "t.csv");
      f.number(0, 1);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // CR-only line ends joined every line into one header (zero rows, no error).
  EXPECT_EQ(error("a,b\r1,2\r"),
            "t.csv:1: a carriage return without a line feed (old Mac line ends?); save the file "
            "with LF or CRLF line ends");
  EXPECT_EQ(error(std::string("a,b\n1,2\0", 8)), "t.csv:2: a NUL byte (not a text file?)");
  EXPECT_EQ(error("\xFF\xFE"
                  "a"),
            "t.csv: UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8");
  EXPECT_EQ(error("a,b\n1,0x10\n"), "t.csv:2: column 'b': not a number ('0x10')");
  EXPECT_EQ(error("a,b\n1,inf\n"), "t.csv:2: column 'b': not a number ('inf')");
  EXPECT_EQ(error("a,b\n1,1e3\n"), "no error");
}

TEST(EngineOverheads, ASecondRowForOneEngineIsRefused) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kvsim_overhead_dup_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "overhead.csv")
      << "engine,c0_ms,c1_ms_per_request,eager_prefill_ms_per_layer,eager_prefill_before,source\n"
         "vllm,1.0,0.01,0,,a\nvllm,50.0,0.01,0,,b\n";
  try {
    load_engine_overheads(dir.string());
    ADD_FAILURE() << "a duplicate engine row was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("overhead.csv:3: column 'engine': engine 'vllm' has a row already"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

class CalibratedH100 : public ::testing::Test {
 protected:
  void SetUp() override {
    hw_ = load_hardware_catalog(kRoot + "/models/hardware");
    spec_ = read_model_config(kRoot + "/models/qwen3-8b.json");
    tables_ = load_latency_tables(kRoot + "/models/latency", "h100-sxm");
    overhead_ = engine_overhead(kRoot + "/models/latency", "vllm");
  }
  HardwareCatalog hw_;
  ModelSpec spec_;
  LatencyTables tables_;
  EngineOverhead overhead_;
};

BatchShape decode_batch(int requests, int64_t context_each) {
  BatchShape b;
  b.num_tokens = requests;
  b.num_decode_requests = requests;
  b.decode_context_tokens = requests * context_each;
  b.decode_context_tokens_windowed = b.decode_context_tokens;
  return b;
}

BatchShape prefill_batch(int64_t tokens) {
  BatchShape b;
  b.num_tokens = tokens;
  b.num_prefill_tokens = tokens;
  b.num_prefill_requests = 1;
  b.prefill_attn_pairs = tokens * (tokens + 1) / 2.0;
  b.prefill_attn_pairs_windowed = b.prefill_attn_pairs;
  b.prefill_context_tokens = tokens;
  return b;
}

TEST_F(CalibratedH100, StepTimeGrowsWithTokensAndContext) {
  const CalibratedLatencyModel m(spec_, hw_.gpu("h100-sxm"), 1, DType::kBf16, DType::kBf16, tables_, overhead_);
  ASSERT_TRUE(m.uses_tables());
  Duration prev;
  for (int64_t n = 1; n <= 65536; n = n * 3 / 2 + 1) {
    const Duration t = m.step_time(prefill_batch(n));
    EXPECT_GE(t, prev) << n;
    prev = t;
  }
  prev = Duration();
  for (int64_t ctx = 1; ctx <= 131072; ctx *= 2) {
    const Duration t = m.step_time(decode_batch(32, ctx));
    EXPECT_GE(t, prev) << ctx;
    prev = t;
  }
  EXPECT_GT(m.step_time(decode_batch(64, 4096)), m.step_time(decode_batch(8, 4096)));
}

TEST_F(CalibratedH100, AllReduceIsLogInterpolatedInBytesAtTheStepsOwnSize) {
  // Qwen3-8B at TP 2, a 3,000-token prefill: each all-reduce moves 3000 x 4096 x 2 = 24,576,000 B, between
  // h100-sxm/allreduce.csv rows (2, 16,777,216, 0.0823014 ms) and (2, 33,554,432, 0.158437 ms):
  // w = ln(24,576,000 / 16,777,216) / ln 2, t = (1 - w) 0.0823014 + w 0.158437 ms; 2 x 36 layers of them.
  const CalibratedLatencyModel m(spec_, hw_.gpu("h100-sxm"), 2, DType::kBf16, DType::kBf16, tables_, overhead_);
  const double w = std::log(24576000.0 / 16777216.0) / std::log(2.0);
  const double one = ((1 - w) * 0.0823014 + w * 0.158437) * 1e-3;
  EXPECT_NEAR(m.breakdown(prefill_batch(3000)).allreduce_s, 72 * one, 1e-12);
}

TEST_F(CalibratedH100, NeverBeatsTheHardwareLimit) {
  // A decode step reads every weight once: step >= weight bytes / HBM bandwidth. A prefill step does
  // 2 x active params FLOPs per token: step >= that / BF16 peak.
  const GpuSpec& g = hw_.gpu("h100-sxm");
  const CalibratedLatencyModel m(spec_, g, 1, DType::kBf16, DType::kBf16, tables_, EngineOverhead{});
  const double weights = static_cast<double>(weight_bytes(spec_, DType::kBf16));
  EXPECT_GE(m.step_time(decode_batch(1, 100)).seconds(), weights / g.hbm_bandwidth);
  const double flops = 2.0 * static_cast<double>(spec_.active_params) * 8192;
  EXPECT_GE(m.step_time(prefill_batch(8192)).seconds(), flops / g.bf16_flops);
  for (double mm : {1.0, 64.0, 4096.0, 100000.0})
    EXPECT_GE(m.gemm_seconds(mm, 12288, 4096), gemm_sol_seconds(mm, 12288, 4096, m.peak_rates()) * 0.999999);
}

TEST_F(CalibratedH100, RooflineFallbackNeverBeatsTheHardwareLimit) {
  // Without tables (LatencyTables{}) GEMMs are priced by the roofline with the GPU file's efficiencies (<= 1).
  const GpuSpec& g = hw_.gpu("b200");
  const CalibratedLatencyModel m(spec_, g, 1, DType::kBf16, DType::kBf16, LatencyTables{}, EngineOverhead{});
  EXPECT_FALSE(m.uses_tables());
  for (double mm : {1.0, 64.0, 4096.0, 100000.0})
    EXPECT_GE(m.gemm_seconds(mm, 12288, 4096), gemm_sol_seconds(mm, 12288, 4096, {g.bf16_flops, g.hbm_bandwidth, 2}));
}

TEST_F(CalibratedH100, OverheadIsAddedPerStepAndPerRequest) {
  const GpuSpec& g = hw_.gpu("h100-sxm");
  const CalibratedLatencyModel none(spec_, g, 1, DType::kBf16, DType::kBf16, tables_, EngineOverhead{});
  const CalibratedLatencyModel with(spec_, g, 1, DType::kBf16, DType::kBf16, tables_,
                                    EngineOverhead{"x", 1e-3, 1e-5, ""});
  // 1 ms + 8 requests x 10 us = 1.08 ms.
  EXPECT_EQ((with.step_time(decode_batch(8, 1000)) - none.step_time(decode_batch(8, 1000))).ns(), 1080000);
  EXPECT_EQ(none.step_time(BatchShape{}).ns(), 0);
}

TEST_F(CalibratedH100, AttentionFitMatchesItsTableShape) {
  // Qwen3-8B at TP 1: 32 query heads, 8 KV heads of 128 per GPU, a shape the H100 tables hold.
  const auto p = fit_prefill_attention(tables_, 32, 8, 128, 0);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->table_heads, 32);
  EXPECT_EQ(p->table_kv_heads, 8);
  EXPECT_LT(p->error.median, 0.10);
  const auto d = fit_decode_attention(tables_, 32, 8, 128, 0);
  ASSERT_TRUE(d);
  EXPECT_LT(d->error.median, 0.15);
}

TEST(CausalPairs, FullAndWindowed) {
  EXPECT_DOUBLE_EQ(causal_pairs(4, 0), 10);  // 1 + 2 + 3 + 4
  EXPECT_DOUBLE_EQ(causal_pairs(4, 2), 7);   // 1 + 2 + 2 + 2
  EXPECT_DOUBLE_EQ(experts_touched(1, 2, 8), 2);
}

}  // namespace
}  // namespace kvsim
