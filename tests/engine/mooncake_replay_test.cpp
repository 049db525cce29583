// Replays the start of the bundled Mooncake conversation trace (512-token hash ids) at engine block
// size 16 with prefix caching, through the real trace reader, and checks the end-of-run invariants.
// Speed is measured by `kvsim bench` and bench/engine_bench.cpp, not here.
#include <gtest/gtest.h>

#include "sim/cluster/cluster.h"
#include "sim/workload/workload_config.h"
#include "tests/engine/engine_test_util.h"

namespace kvsim {
namespace {

class CountingSink : public IRecordSink {
 public:
  void on_request_done(const RequestRecord& r) override {
    ++done;
    cached += r.cached_tokens;
    if (r.finished) {
      EXPECT_EQ(r.output_tokens, r.requested_output_tokens);
    }
  }
  void on_step(const StepRecord&) override {}
  void on_tokens(RequestId, SimTime, int64_t n) override { tokens += n; }
  int64_t done = 0, tokens = 0, cached = 0;
};

TEST(MooncakeReplay, EveryRequestFinishesAndNoBlockLeaks) {
  WorkloadConfig w;
  w.trace = TraceConfig{};
  w.trace->format = "mooncake";
  w.trace->path = "traces/mooncake/conversation_trace.jsonl";
  w.trace->limit = 1500;
  SimContext ctx(1);
  auto src = make_request_source(w, ctx.rng);
  auto cfg = testing::config_for(testing::full_layout(16, 60000));  // ~960k tokens of KV
  cfg.max_model_len = 1 << 20;
  testing::FixedLatency lat;
  CountingSink sink;
  EngineInstance engine(ctx, cfg, lat, sink);
  Cluster sim(ctx, *src, engine);
  const ServingResult r = sim.run();  // checks the end-of-run invariants itself
  EXPECT_EQ(r.submitted, 1500);
  EXPECT_EQ(r.finished, 1500);
  EXPECT_EQ(r.unfinished, 0);
  EXPECT_EQ(sink.done, 1500);
  EXPECT_EQ(sink.tokens, r.generated_tokens);
  // Every request starts with the same 512-token hash id 0, so every request after the first can
  // reuse at least those 512 tokens: the cache saw at least 1,499 x 512 tokens of hits.
  EXPECT_GE(r.cached_tokens, 1499LL * 512);
  EXPECT_NO_THROW(sim.invariants());
}

}  // namespace
}  // namespace kvsim
