#pragma once
// Test helpers for the engine: a fixed latency model, a recording sink, a vector request source and
// small builders. Header-only; used by tests/engine/*_test.cpp.
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "sim/cluster/cluster.h"
#include "sim/engine/engine_config.h"
#include "sim/engine/engine_instance.h"
#include "sim/metrics/records.h"
#include "sim/perf/i_latency_model.h"
#include "sim/workload/request.h"

namespace kvsim::testing {

// step time = 1 ms + 1 us per scheduled token.
class FixedLatency : public ILatencyModel {
 public:
  Duration step_time(const BatchShape& b) const override { return Duration::ms(1) + Duration::us(b.num_tokens); }
  std::string name() const override { return "fixed"; }
};

class RecordingSink : public IRecordSink {
 public:
  void on_request_done(const RequestRecord& r) override { requests[r.id.value()] = r; }
  void on_step(const StepRecord& s) override {
    steps.push_back(s);
    if (step_hook) step_hook(s);
  }
  void on_tokens(RequestId id, SimTime at, int64_t n) override { tokens[id.value()] += n; }
  std::map<int64_t, RequestRecord> requests;
  std::vector<StepRecord> steps;
  std::map<int64_t, int64_t> tokens;
  std::function<void(const StepRecord&)> step_hook;
};

class VectorSource : public IRequestSource {
 public:
  explicit VectorSource(std::vector<RequestSpec> reqs, int closed_loop = 0)
      : reqs_(std::move(reqs)), closed_loop_(closed_loop) {}
  std::optional<RequestSpec> next() override {
    if (i_ >= reqs_.size()) return std::nullopt;
    return reqs_[i_++];
  }
  int closed_loop_concurrency() const override { return closed_loop_; }

 private:
  std::vector<RequestSpec> reqs_;
  size_t i_ = 0;
  int closed_loop_;
};

inline KvCacheLayout full_layout(int block_size, int64_t num_blocks) {
  KvCacheLayout l;
  l.block_size = block_size;
  l.num_blocks = num_blocks;
  l.groups.push_back(KvCacheGroup{KvGroupKind::kFullAttention, 1, 0, 0});
  return l;
}

inline EngineConfig config_for(KvCacheLayout layout) {
  EngineConfig c;
  c.layout = std::move(layout);
  c.max_model_len = 1 << 20;
  return c;
}

inline RequestSpec make_request(int64_t id, int64_t arrival_ms, std::vector<Segment> prompt, int64_t output) {
  RequestSpec r;
  r.id = RequestId(id);
  r.arrival = SimTime::from_ns(arrival_ms * 1000000);
  r.prompt = std::move(prompt);
  for (const Segment& s : r.prompt) r.prompt_tokens += s.tokens;
  r.output_tokens = output;
  r.output_content_id = 1000000 + static_cast<uint64_t>(id);
  return r;
}

inline Segment text(uint64_t content, int64_t tokens, int64_t offset = 0) {
  return Segment{content, tokens, false, offset};
}
inline Segment image(uint64_t content, int64_t tokens) { return Segment{content, tokens, true, 0}; }

// Runs `reqs` (open loop) through one engine with `config` and the fixed latency model.
inline ServingResult run_engine(const EngineConfig& config, std::vector<RequestSpec> reqs, RecordingSink& sink) {
  SimContext ctx(1);
  FixedLatency lat;
  EngineInstance engine(ctx, config, lat, sink);
  VectorSource src(std::move(reqs));
  Cluster sim(ctx, src, engine);
  return sim.run();
}

}  // namespace kvsim::testing
