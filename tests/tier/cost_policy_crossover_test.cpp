// Issue 12: the cost policy chooses recompute below and reload above the crossover `kvsim size
// --recompute` prints for the same model, GPU and tier (Qwen3-8B BF16 on one H100 SXM, calibrated
// latency model, prefill chunks of 8192). The catalog tiers are all faster than recompute at every
// length (size --recompute prints "none"), so the tier here is a slow one: 4 GB/s and 10 ms per load.
// The fixed cost exceeds the ~7.8 ms one-step prefill of a short prompt, so recompute wins short prompts
// and there is one crossover. Hand check of where it must be: at 32k tokens prefill takes ~1.13 s
// (size --recompute's table) against 10 ms + 4.5 GiB / 4 GB/s = 1.22 s (recompute wins), at 128k ~9.4 s
// against 4.84 s (reload wins), so it lies in (32k, 128k).
#include <gtest/gtest.h>

#include "sim/app/recompute_report.h"
#include "sim/model/config_reader.h"
#include "sim/model/sizing.h"
#include "sim/perf/calibrated_model.h"
#include "sim/perf/latency_tables.h"
#include "sim/scenario/hardware_catalog.h"
#include "sim/tier/kv_offload.h"

namespace kvsim {
namespace {

TEST(CostPolicy, RecomputesBelowAndReloadsAboveTheSizeRecomputeCrossover) {
  const ModelSpec spec = read_model_config("models/qwen3-8b.json");
  const HardwareCatalog hw = load_hardware_catalog("models/hardware");
  const GpuSpec& gpu = hw.gpu("h100-sxm");
  const CalibratedLatencyModel model(spec, gpu, 1, DType::kBf16, DType::kBf16,
                                     load_latency_tables("models/latency", "h100-sxm"),
                                     engine_overhead("models/latency", "vllm"));
  TierSpec slow;
  slow.name = "slow";
  slow.read_bandwidth = slow.write_bandwidth = 4e9;
  slow.latency = Duration::ms(10);
  const RecomputeReport rep =
      build_recompute_report(spec, model, DType::kBf16, StateDtypes{}, Parallel{1, 1}, {slow}, {}, 131072, 8192);
  ASSERT_EQ(rep.crossovers.size(), 1u);
  const int64_t x = rep.crossovers[0].context;
  ASSERT_TRUE(rep.crossovers[0].reload_wins_above);
  ASSERT_GT(x, 32768);
  ASSERT_LT(x, 131072);

  const KvCacheLayout layout = build_kv_layout(spec, 16, DType::kBf16, StateDtypes{}, Parallel{1, 1}, int64_t{1} << 30);
  KvOffloadConfig c;
  c.enabled = true;
  c.chunk_tokens = 16;
  c.blocks_per_chunk = 1;
  c.chunk_bytes_rank = c.chunk_bytes = layout.bytes_per_block;
  c.capacity_chunks = 1;
  c.read_bandwidth = c.write_bandwidth = slow.read_bandwidth;
  c.latency = slow.latency;
  c.cost_policy = true;
  SimContext ctx(1);
  const KvOffload off(ctx, c, 16, model, 8192);
  const int64_t at = x / 16 * 16;
  EXPECT_FALSE(off.worth_loading(0, at - 1024)) << "crossover " << x;
  EXPECT_TRUE(off.worth_loading(0, at + 1024)) << "crossover " << x;
}

}  // namespace
}  // namespace kvsim
