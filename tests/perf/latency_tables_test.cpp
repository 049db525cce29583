#include "sim/perf/latency_tables.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "sim/core/errors.h"
#include "sim/scenario/hardware_catalog.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

// A table directory <tmp>/<gpu>/ holding one CSV file.
class OneTable : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("kvsim_latency_tables_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "gpu");
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& file, const std::string& text) { std::ofstream(root_ / "gpu" / file) << text; }
  // The InputError message of loading the tables, or "" when they load.
  std::string load_error() {
    try {
      load_latency_tables(root_.string(), "gpu");
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  std::string where(const std::string& file, int line, const std::string& col) {
    return (root_ / "gpu" / file).string() + ":" + std::to_string(line) + ": column '" + col + "'";
  }
  fs::path root_;
};

TEST_F(OneTable, GemmLatencyMustBePositiveNotAnInvariantFailure) {
  write("gemm.csv", "m,n,k,latency_ms\n1,1024,1024,0.01\n2,1024,1024,0\n");
  EXPECT_EQ(load_error(), where("gemm.csv", 3, "latency_ms") + ": must be > 0 (got 0)");
  write("gemm.csv", "m,n,k,latency_ms\n1,1024,1024,0.01\n2,1024,1024,0.02\n");
  EXPECT_EQ(load_error(), "");
}

TEST_F(OneTable, GemmSizesMustBePositive) {
  write("gemm.csv", "m,n,k,latency_ms\n0,1024,1024,0.01\n");
  EXPECT_EQ(load_error(), where("gemm.csv", 2, "m") + ": must be > 0 (got 0)");
}

TEST_F(OneTable, AllReduceMessageBytesMustBePositive) {
  // 0 bytes would put log(0) into the log-space interpolation: a NaN step time.
  write("allreduce.csv", "num_gpus,message_bytes,latency_ms\n2,0,0.01\n2,1024,0.02\n");
  EXPECT_EQ(load_error(), where("allreduce.csv", 2, "message_bytes") + ": must be > 0 (got 0)");
  write("allreduce.csv", "num_gpus,message_bytes,latency_ms\n2,1,0.01\n2,1024,0.02\n");
  EXPECT_EQ(load_error(), "");
}

TEST_F(OneTable, IntegerColumnsMustBeWholeNumbersInRange) {
  write("allreduce.csv", "num_gpus,message_bytes,latency_ms\n0,1024,0.01\n");
  EXPECT_EQ(load_error(), where("allreduce.csv", 2, "num_gpus") + ": must be a whole number >= 1 (got 0)");
  write("allreduce.csv", "num_gpus,message_bytes,latency_ms\n2.5,1024,0.01\n");
  EXPECT_EQ(load_error(), where("allreduce.csv", 2, "num_gpus") + ": must be a whole number >= 1 (got 2.5)");
  write("allreduce.csv", "num_gpus,message_bytes,latency_ms\n1e12,1024,0.01\n");
  EXPECT_EQ(load_error(), where("allreduce.csv", 2, "num_gpus") + ": must be a whole number >= 1 (got 1e12)");
}

TEST_F(OneTable, MoeDivisorsMustBeAtLeastOne) {
  write("moe.csv",
        "num_tokens,hidden,inter,topk,num_experts,moe_tp,moe_ep,latency_ms\n"
        "16,4096,1536,8,128,1,0,0.1\n");
  EXPECT_EQ(load_error(), where("moe.csv", 2, "moe_ep") + ": must be a whole number >= 1 (got 0)");
}

TEST_F(OneTable, AttentionWindowMayBeZeroButHeadsMayNot) {
  const std::string header = "batch,isl,num_heads,num_kv_heads,head_dim,window,latency_ms\n";
  write("context_attention.csv", header + "1,4096,32,8,128,0,0.5\n");
  EXPECT_EQ(load_error(), "");
  write("context_attention.csv", header + "1,4096,32,0,128,0,0.5\n");
  EXPECT_EQ(load_error(), where("context_attention.csv", 2, "num_kv_heads") + ": must be a whole number >= 1 (got 0)");
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

// PROVENANCE.md's physical check on every committed table: no GEMM row beats its dtype's peak of the
// GPU file (BF16 rows: 2mnk / t <= bf16_flops; FP8 rows: <= fp8_flops), and the Blackwell
// folders (B200, B300, GB300) and H200 hold what make_tables.py wrote for them.
TEST(CommittedTables, EveryGemmRowIsPhysical) {
  const std::string root = std::string(KVSIM_SOURCE_DIR) + "/models/latency";
  const HardwareCatalog hw = load_hardware_catalog(std::string(KVSIM_SOURCE_DIR) + "/models/hardware");
  const std::vector<std::string> gpus = gpus_with_tables(root);
  for (const char* g : {"b200", "b300", "gb300", "h100-sxm", "h200"})
    EXPECT_NE(std::find(gpus.begin(), gpus.end(), g), gpus.end()) << g;
  for (const std::string& name : gpus) {
    const GpuSpec& gpu = hw.gpu(name);
    const LatencyTables t = load_latency_tables(root, name);
    for (const auto& p : t.gemm) ASSERT_LE(2 * p.m * p.n * p.k / p.seconds, gpu.bf16_flops) << name;
    for (const auto& p : t.gemm_fp8) ASSERT_LE(2 * p.m * p.n * p.k / p.seconds, gpu.fp8_flops) << name;
    for (const auto& p : t.gemm_fp8_block) ASSERT_LE(2 * p.m * p.n * p.k / p.seconds, gpu.fp8_flops) << name;
    for (const auto& p : t.gemm_nvfp4) ASSERT_LE(2 * p.m * p.n * p.k / p.seconds, gpu.fp4_flops) << name;
  }
  EXPECT_FALSE(load_latency_tables(root, "b300").moe_fp8.empty());
  // Blackwell's vLLM 0.19.0 per-tensor FP8 GEMM rows are slower than its BF16 rows at m = 16,384 (B300
  // 1.65 x, GB300 1.68 x at the median, PROVENANCE.md): make_tables.py does not write them.
  for (const char* g : {"b200", "b300", "gb300"}) EXPECT_TRUE(load_latency_tables(root, g).gemm_fp8.empty()) << g;
  // B200: the shared copy's GEMM and attention tables plus the dumped MoE and all-reduce tables.
  const LatencyTables b200 = load_latency_tables(root, "b200");
  EXPECT_FALSE(b200.moe.empty());
  EXPECT_FALSE(b200.moe_nvfp4.empty());
  EXPECT_FALSE(b200.allreduce.empty());
  // No per-tensor FP8 GEMM rows: the Parquet's are slower than BF16 at every m (PROVENANCE.md).
  EXPECT_TRUE(b200.gemm_fp8.empty());
  // H200: the shared copy's tables plus, from the vLLM 0.19.0 Parquet, the FP8 GEMM rows and the MoE
  // collection (BF16, FP8; Hopper has no NVFP4 kernel), and INT4 weight-only from the vLLM 0.24.0 one
  // (Kimi-K2.5's shape: 27 token counts x 13 layouts, balanced).
  const LatencyTables h200 = load_latency_tables(root, "h200");
  EXPECT_EQ(h200.gemm_fp8.size(), 7728u);  // every power-of-two m row, none unphysical
  EXPECT_EQ(h200.moe.size(), 4347u);
  EXPECT_EQ(h200.moe_fp8.size(), 4347u);
  EXPECT_EQ(h200.moe_int4.size(), 27u * 13u);
  EXPECT_TRUE(h200.moe_nvfp4.empty());
  EXPECT_FALSE(h200.allreduce.empty());
}

// Block-scaled FP8 rows (gemm_dtype / moe_dtype fp8_block) of aiconfigurator's vLLM 0.19.0 GEMM and MoE
// Parquet files at 095f58a5, as dumped (PROVENANCE.md):
//   h200 gemm fp8_block 4096,4096,4096 0.14989422427283391 ms; 1,4096,4096 0.021925333473417494 ms
//        (per-tensor fp8 1,4096,4096: 0.009324444664849175 ms, 2.35 x faster);
//   b200 gemm fp8_block 4096,4096,4096 0.10346755716535781 ms;
//   h200 moe fp8_block 64,2048,768,8,128,1,1 balanced 0.18171733617782593 ms.
TEST(CommittedTables, BlockScaledFp8RowsAsTheParquetHasThem) {
  const std::string root = std::string(KVSIM_SOURCE_DIR) + "/models/latency";
  const auto gemm_ms = [](const std::vector<GemmPoint>& rows, double m, double n, double k) {
    for (const auto& p : rows)
      if (p.m == m && p.n == n && p.k == k) return p.seconds * 1e3;
    return -1.0;
  };
  const LatencyTables h200 = load_latency_tables(root, "h200"), b200 = load_latency_tables(root, "b200");
  EXPECT_DOUBLE_EQ(gemm_ms(h200.gemm_fp8_block, 4096, 4096, 4096), 0.14989422427283391);
  EXPECT_DOUBLE_EQ(gemm_ms(h200.gemm_fp8_block, 1, 4096, 4096), 0.021925333473417494);
  EXPECT_DOUBLE_EQ(gemm_ms(b200.gemm_fp8_block, 4096, 4096, 4096), 0.10346755716535781);
  bool found = false;
  for (const auto& p : h200.moe_fp8_block)
    if (p.num_tokens == 64 && p.hidden == 2048 && p.inter == 768 && p.topk == 8 && p.num_experts == 128 &&
        p.moe_tp == 1 && p.moe_ep == 1) {
      EXPECT_DOUBLE_EQ(p.seconds * 1e3, 0.18171733617782593);
      found = true;
    }
  EXPECT_TRUE(found);
  for (const char* g : {"h100-sxm", "h200", "b200", "b300"}) {
    const LatencyTables t = load_latency_tables(root, g);
    EXPECT_FALSE(t.gemm_fp8_block.empty()) << g;
    EXPECT_EQ(t.moe_fp8_block.size(), 3402u) << g;
  }
  // with_block_fp8_rows puts the block rows in the FP8 slots; a GPU without them keeps its FP8 rows.
  const LatencyTables blocked = with_block_fp8_rows(h200);
  EXPECT_EQ(blocked.gemm_fp8.size(), h200.gemm_fp8_block.size());
  EXPECT_EQ(blocked.moe_fp8.size(), 3402u);
  LatencyTables per_tensor_only;
  per_tensor_only.gemm_fp8 = {{64, 4096, 4096, 1e-5}};
  per_tensor_only.moe_fp8 = h200.moe_fp8;
  const LatencyTables kept = with_block_fp8_rows(per_tensor_only);
  ASSERT_EQ(kept.gemm_fp8.size(), 1u);
  EXPECT_EQ(kept.gemm_fp8[0].seconds, 1e-5);
  EXPECT_EQ(kept.moe_fp8.size(), 4347u);
}

}  // namespace
}  // namespace kvsim
