#pragma once
// Helpers for the hybrid (state group) engine tests: hand-built layouts and a runner that records the
// chunk schedule and per-group blocks held by each request after every step.
#include <functional>
#include <map>
#include <vector>

#include "sim/cluster/cluster.h"
#include "sim/engine/engine_instance.h"
#include "tests/engine/engine_test_util.h"

namespace kvsim::testing {

// One full-attention group plus `state_groups` state groups, block size `b`.
inline KvCacheLayout hybrid_layout(int b, int64_t num_blocks, int state_groups, int64_t state_page = 1000) {
  KvCacheLayout l;
  l.block_size = b;
  l.num_blocks = num_blocks;
  l.groups.push_back(KvCacheGroup{KvGroupKind::kFullAttention, 1, 0, 0});
  for (int g = 0; g < state_groups; ++g) l.groups.push_back(KvCacheGroup{KvGroupKind::kState, 1, 0, state_page});
  return l;
}

// The #45238 engine settings: B = 528, budget 2048, June behaviour (dense retention, no junction) or
// the later one (retention 0, junction checkpoint).
inline EngineConfig issue45238_config(bool later, int64_t num_blocks = 4000, int state_groups = 3) {
  EngineConfig c = config_for(hybrid_layout(528, num_blocks, state_groups));
  c.max_num_batched_tokens = 2048;
  c.mamba_cache_mode = MambaCacheMode::kAlign;
  c.prefix_cache_retention_interval = later ? 0 : kRetentionDense;
  c.shared_prefix_checkpoint = later;
  return c;
}

struct HybridOutcome {
  RecordingSink sink;
  ServingResult result;
  uint64_t fingerprint = 0;
  std::vector<int64_t> prefill_chunks;  // tokens of each prefill step (one request in flight)
  std::vector<int64_t> state_copy_bytes;
  // After each step, per live request id: blocks held in each group.
  std::vector<std::map<int64_t, std::vector<int64_t>>> held;
};

class ShapeSpy : public ILatencyModel {
 public:
  explicit ShapeSpy(HybridOutcome& out) : out_(out) {}
  Duration step_time(const BatchShape& b) const override {
    if (b.num_prefill_tokens > 0) out_.prefill_chunks.push_back(b.num_prefill_tokens);
    out_.state_copy_bytes.push_back(b.state_copy_bytes);
    return Duration::ms(1) + Duration::us(b.num_tokens);
  }
  std::string name() const override { return "spy"; }

 private:
  HybridOutcome& out_;
};

inline void simulate_hybrid(const EngineConfig& config, std::vector<RequestSpec> reqs, HybridOutcome& out,
                            int closed_loop = 0, bool check_each_step = false) {
  SimContext ctx(1);
  ShapeSpy lat(out);
  EngineInstance engine(ctx, config, lat, out.sink);
  out.sink.step_hook = [&](const StepRecord&) {
    if (check_each_step) engine.check_invariants();
    std::map<int64_t, std::vector<int64_t>> h;
    const Scheduler& s = engine.scheduler();
    for (int slot : s.live_slots()) {
      std::vector<int64_t> per;
      for (int g = 0; g < engine.kv().num_groups(); ++g) per.push_back(engine.kv().manager(g).num_held_blocks(slot));
      h[s.request(slot).record.id.value()] = per;
    }
    out.held.push_back(std::move(h));
  };
  VectorSource src(std::move(reqs), closed_loop);
  Cluster sim(ctx, src, engine);
  out.result = sim.run();
  out.fingerprint = ctx.queue.fingerprint();
  out.sink.step_hook = nullptr;
}

}  // namespace kvsim::testing
