// resolve_kv_offload through a scenario: the bytes one GPU copies per chunk follow its share of the
// model (TP heads, PP stages), and a remote store's node bandwidth is shared by every rank.
#include <gtest/gtest.h>

#include <string>

#include "sim/app/simulation.h"
#include "sim/model/config_reader.h"
#include "sim/scenario/scenario.h"

namespace kvsim {
namespace {

EngineConfig resolve(const std::string& engine) {
  const Scenario s = parse_scenario("model: models/qwen3-8b.json\ngpu: h100-sxm\nengine: {block_size: 16, " + engine +
                                        "}\nworkload:\n  synthetic: {kind: poisson, rate: 1, num_requests: 1}\n",
                                    "offload resolution test");
  return resolve_engine_config(s, read_model_config(s.model));
}

// Qwen3-8B (models/qwen3-8b.json): 36 layers, 8 KV heads of 128, BF16: one 16-token block is
// 36 x 2 (K, V) x 8 x 128 x 2 B x 16 = 2,359,296 B on one GPU.
constexpr int64_t kBlockBytes = int64_t{36} * 2 * 8 * 128 * 2 * 16;

TEST(OffloadResolution, ChunkBytesPerRankFollowTensorAndPipelineParallelism) {
  const EngineConfig one = resolve("kv_offload: {tiers: [{tier: host_dram, size: 64GiB}]}");
  EXPECT_EQ(one.kv_offload.chunk_bytes_rank, kBlockBytes);
  EXPECT_EQ(one.kv_offload.chunk_bytes, kBlockBytes);
  // TP 2: each rank holds 4 of the 8 KV heads; the tier stores a copy per rank (same total).
  const EngineConfig tp2 = resolve("tensor_parallel_size: 2, kv_offload: {tiers: [{tier: host_dram, size: 64GiB}]}");
  EXPECT_EQ(tp2.kv_offload.chunk_bytes_rank, kBlockBytes / 2);
  EXPECT_EQ(tp2.kv_offload.chunk_bytes, kBlockBytes);
  // PP 2: each stage holds 18 of the 36 layers and copies only those.
  const EngineConfig pp2 = resolve("pipeline_parallel_size: 2, kv_offload: {tiers: [{tier: host_dram, size: 64GiB}]}");
  EXPECT_EQ(pp2.kv_offload.chunk_bytes_rank, kBlockBytes / 2);
  EXPECT_EQ(pp2.kv_offload.chunk_bytes, kBlockBytes);
  EXPECT_EQ(pp2.kv_offload.capacity_chunks, (int64_t{64} << 30) / kBlockBytes);
}

TEST(OffloadResolution, RemoteStoreBandwidthIsSharedByEveryRankEvenAsTheFirstTier) {
  // models/hardware/tiers.yaml remote-rdma: 86.8 GB/s read, 42.8 GB/s write for the node.
  const EngineConfig tp2pp2 = resolve(
      "tensor_parallel_size: 2, pipeline_parallel_size: 2, kv_offload: {tiers: [{tier: remote_rdma, size: 1TiB}]}");
  EXPECT_DOUBLE_EQ(tp2pp2.kv_offload.read_bandwidth, 86.8e9 / 4);
  EXPECT_DOUBLE_EQ(tp2pp2.kv_offload.write_bandwidth, 42.8e9 / 4);
  const EngineConfig lower = resolve(
      "tensor_parallel_size: 2, kv_offload: {tiers: [{tier: host_dram, size: 64GiB}, {tier: remote_rdma, size: "
      "1TiB}]}");
  ASSERT_EQ(lower.kv_offload.lower.size(), 1u);
  EXPECT_DOUBLE_EQ(lower.kv_offload.lower[0].read_bandwidth, 86.8e9 / 2);
}

}  // namespace
}  // namespace kvsim
