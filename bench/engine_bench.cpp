// Google Benchmark: simulator speed on the bundled Mooncake conversation trace (run from the
// repository root: build/kvsim_bench). `kvsim bench` reports the same end to end.
#include <benchmark/benchmark.h>

#include <vector>

#include "sim/app/simulation.h"
#include "sim/core/event_queue.h"
#include "sim/core/sim_context.h"
#include "sim/engine/block_pool.h"
#include "sim/engine/engine_instance.h"
#include "sim/engine/hash_mix.h"
#include "sim/engine/recent_keys.h"
#include "sim/metrics/records.h"
#include "sim/perf/i_latency_model.h"
#include "sim/scenario/scenario.h"

namespace kvsim {
namespace {

void BM_MooncakeReplay(benchmark::State& state) {
  const Scenario s =
      load_scenario("scenarios/bench-mooncake.yaml", {"workload.trace.limit=" + std::to_string(state.range(0))});
  int64_t requests = 0;
  uint64_t events = 0;
  for (auto _ : state) {
    SimulationResult r = run_simulation(s);
    requests += r.summary.requests.count;
    events += r.events;
  }
  state.counters["requests/s"] = benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MooncakeReplay)->Arg(1000)->Arg(12031)->Unit(benchmark::kMillisecond);

// Allocate 16 blocks, register their hashes, free them (cached, evictable), and let the next round
// evict them: the pool's whole cycle per request of 16 blocks.
void BM_BlockPoolCycle(benchmark::State& state) {
  BlockPool pool(100000, true);
  std::vector<BlockId> blocks;
  uint64_t key = 1;
  for (auto _ : state) {
    blocks.clear();
    pool.get_new_blocks(16, blocks);
    for (BlockId b : blocks) pool.cache_block(b, cache_key(key++, 0));
    pool.free_blocks(blocks);
    benchmark::DoNotOptimize(blocks.data());
  }
  state.SetItemsProcessed(state.iterations() * 16);
}
BENCHMARK(BM_BlockPoolCycle);

// Prefix lookups: 1,000 cached blocks probed in order (hits), then one miss.
void BM_BlockPoolLookup(benchmark::State& state) {
  BlockPool pool(4096, true);
  std::vector<BlockId> blocks;
  pool.get_new_blocks(1000, blocks);
  for (size_t i = 0; i < blocks.size(); ++i) pool.cache_block(blocks[i], cache_key(i + 1, 0));
  for (auto _ : state) {
    int64_t hits = 0;
    for (uint64_t k = 1; pool.get_cached_block(cache_key(k, 0)) != kNoBlock; ++k) ++hits;
    benchmark::DoNotOptimize(hits);
  }
  state.SetItemsProcessed(state.iterations() * 1001);
}
BENCHMARK(BM_BlockPoolLookup);

void BM_HashIndexInsertFindErase(benchmark::State& state) {
  BlockHashIndex index(1 << 16);
  uint64_t k = 0;
  for (auto _ : state) {
    for (int i = 0; i < 1024; ++i) index.find_or_insert(cache_key(k + static_cast<uint64_t>(i), 0)).head = 1;
    for (int i = 0; i < 1024; ++i) benchmark::DoNotOptimize(index.find(cache_key(k + static_cast<uint64_t>(i), 0)));
    for (int i = 0; i < 1024; ++i) index.erase(index.find(cache_key(k + static_cast<uint64_t>(i), 0)));
    k += 1024;
  }
  state.SetItemsProcessed(state.iterations() * 1024 * 3);
}
BENCHMARK(BM_HashIndexInsertFindErase);

// The miss attribution's memory (RecentKeys) at the horizon of a Qwen3-8B / H100 cache (2^18 keys):
// fresh keys, one request's worth (512 blocks) a batch, as Scheduler::register_blocks touches them.
void BM_RecentKeysTouch(benchmark::State& state) {
  RecentKeys seen(size_t{1} << 18);
  std::vector<uint64_t> keys(512);
  uint64_t k = 0;
  for (auto _ : state) {
    for (uint64_t& key : keys) key = avalanche64(++k);
    seen.touch_all(keys);
  }
  benchmark::DoNotOptimize(seen.contains(avalanche64(1)));
  state.SetItemsProcessed(state.iterations() * 512);
}
BENCHMARK(BM_RecentKeysTouch);

void BM_EventQueue(benchmark::State& state) {
  EventQueue q;
  int64_t t = 0;
  int64_t ran = 0;
  for (auto _ : state) {
    for (int i = 0; i < 64; ++i)
      q.schedule(SimTime::from_ns(t + (i * 7919) % 1000), Phase::kStepDone, 1, [&ran] { ++ran; });
    while (q.run_one()) {
    }
    t = q.now().ns() + 1;
  }
  benchmark::DoNotOptimize(ran);
  state.SetItemsProcessed(state.iterations() * 64);
}
BENCHMARK(BM_EventQueue);

class NullSink : public IRecordSink {
 public:
  void on_request_done(const RequestRecord&) override {}
  void on_step(const StepRecord&) override {}
  void on_tokens(RequestId, SimTime, int64_t) override {}
};

class OneMs : public ILatencyModel {
 public:
  Duration step_time(const BatchShape&) const override { return Duration::ms(1); }
  std::string name() const override { return "1ms"; }
};

// One scheduler step (plan, price, apply) of a batch of N decoding requests, none crossing a block
// boundary more than once per 16 steps.
void BM_SchedulerDecodeStep(benchmark::State& state) {
  const auto batch = static_cast<int>(state.range(0));
  SimContext ctx(1);
  EngineConfig c;
  c.layout.block_size = 16;
  c.layout.num_blocks = 200000;
  c.layout.groups.push_back(KvCacheGroup{KvGroupKind::kFullAttention, 1, 0, 0});
  c.max_num_seqs = batch;
  c.max_num_batched_tokens = 1 << 20;
  c.max_model_len = 1 << 30;
  OneMs lat;
  NullSink sink;
  EngineInstance engine(ctx, c, lat, sink);
  for (int i = 0; i < batch; ++i) {
    RequestSpec r;
    r.id = RequestId(i);
    r.prompt = {Segment{static_cast<uint64_t>(i + 1), 100, false, 0}};
    r.prompt_tokens = 100;
    r.output_tokens = 1 << 28;
    engine.submit(r);
  }
  for (int i = 0; i < 10; ++i) ctx.queue.run_one();  // through the prefill
  for (auto _ : state) {
    ctx.queue.run_one();  // schedule
    ctx.queue.run_one();  // step done
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_SchedulerDecodeStep)->Arg(1)->Arg(64)->Arg(1024);

}  // namespace
}  // namespace kvsim
