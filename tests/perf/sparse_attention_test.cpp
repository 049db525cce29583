// DeepSeek-V3.2 sparse attention (DSA): the lightning indexer scores every earlier token, the MLA
// attention reads only the indexer's top-k. Storage is unchanged; the work per step shrinks.
#include <gtest/gtest.h>

#include "sim/cluster/cluster.h"
#include "sim/engine/engine_instance.h"
#include "tests/engine/engine_test_util.h"

namespace kvsim {
namespace {

// Captures every BatchShape the engine prices.
class CapturingLatency : public ILatencyModel {
 public:
  Duration step_time(const BatchShape& b) const override {
    shapes.push_back(b);
    return Duration::ms(1);
  }
  std::string name() const override { return "capture"; }
  mutable std::vector<BatchShape> shapes;
};

TEST(SparseAttention, EngineCapsEachQuerysKeysAtTopK) {
  // One 5,000-token prompt prefilled in one chunk, top-k 2,048: query q reads min(q, 2048) keys, so
  // the pairs are 1 + ... + 2048 = 2,098,176 plus (5,000 - 2,048) x 2,048 = 6,045,696: 8,143,872,
  // against 5,000 x 5,001 / 2 = 12,502,500 dense. The first decode step then reads 2,048 keys of 5,001.
  auto cfg = testing::config_for(testing::full_layout(64, 1000));
  cfg.sparse_topk = 2048;
  cfg.max_num_batched_tokens = 8192;
  SimContext ctx(1);
  CapturingLatency lat;
  testing::RecordingSink sink;
  EngineInstance engine(ctx, cfg, lat, sink);
  testing::VectorSource src({testing::make_request(1, 0, {testing::text(1, 5000)}, 2)});
  Cluster sim(ctx, src, engine);
  sim.run();
  ASSERT_GE(lat.shapes.size(), 2u);
  EXPECT_DOUBLE_EQ(lat.shapes[0].prefill_attn_pairs, 12502500.0);
  EXPECT_DOUBLE_EQ(lat.shapes[0].prefill_attn_pairs_sparse, 8143872.0);
  EXPECT_EQ(lat.shapes[0].prefill_context_tokens, 5000);
  EXPECT_EQ(lat.shapes[0].prefill_context_tokens_sparse, 2048);
  EXPECT_EQ(lat.shapes[1].decode_context_tokens, 5001);
  EXPECT_EQ(lat.shapes[1].decode_context_tokens_sparse, 2048);
}

}  // namespace
}  // namespace kvsim
