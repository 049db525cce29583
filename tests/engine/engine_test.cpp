#include <gtest/gtest.h>

#include "sim/cluster/cluster.h"
#include "sim/engine/engine_instance.h"
#include "tests/engine/engine_test_util.h"

namespace kvsim {
namespace {
using testing::config_for;
using testing::FixedLatency;
using testing::full_layout;
using testing::image;
using testing::make_request;
using testing::RecordingSink;
using testing::text;
using testing::VectorSource;

struct Outcome {
  RecordingSink sink;
  ServingResult result;
  uint64_t fingerprint = 0;
};

// Runs `reqs` through one engine with `config`; `hook` (optional) sees the engine after each step.
void simulate(const EngineConfig& config, std::vector<RequestSpec> reqs, Outcome& out, int closed_loop = 0,
              std::function<void(const EngineInstance&, const StepRecord&)> hook = nullptr) {
  SimContext ctx(1);
  FixedLatency lat;
  EngineInstance engine(ctx, config, lat, out.sink);
  if (hook) out.sink.step_hook = [&](const StepRecord& s) { hook(engine, s); };
  VectorSource src(std::move(reqs), closed_loop);
  Cluster sim(ctx, src, engine);
  out.result = sim.run();
  out.fingerprint = ctx.queue.fingerprint();
  out.sink.step_hook = nullptr;
}

TEST(EnginePrefix, SecondIdenticalPromptHitsFloorOfLMinusOneOverBBlocks) {
  // L = 100, B = 16: hit = floor(99 / 16) * 16 = 6 * 16 = 96.
  Outcome r;
  simulate(config_for(full_layout(16, 1000)),
           {make_request(1, 0, {text(7, 100)}, 1), make_request(2, 1000, {text(7, 100)}, 1)}, r);
  EXPECT_EQ(r.sink.requests[1].cached_tokens, 0);
  EXPECT_EQ(r.sink.requests[2].cached_tokens, 96);
  EXPECT_EQ(r.sink.requests[2].prefix_hits_blocks, 6);
  EXPECT_EQ(r.sink.requests[2].prefix_queries_blocks, 6);  // floor(100 / 16)
  EXPECT_EQ(r.sink.requests[2].cause, MissCause::kNone);
}

TEST(EnginePrefix, PromptOfWholeBlocksRecomputesItsLastBlock) {
  // L = 96, B = 16: hit = floor(95 / 16) * 16 = 5 * 16 = 80; a whole block is recomputed.
  // Reusable = min(seen 96, L - 1 = 95) = 95, so 15 tokens are lost to the partial block.
  Outcome r;
  simulate(config_for(full_layout(16, 1000)),
           {make_request(1, 0, {text(7, 96)}, 1), make_request(2, 1000, {text(7, 96)}, 1)}, r);
  EXPECT_EQ(r.sink.requests[2].cached_tokens, 80);
  EXPECT_EQ(r.sink.requests[2].lost_tokens, 15);
  EXPECT_EQ(r.sink.requests[2].cause, MissCause::kPartialBlock);
}

TEST(EnginePrefix, SharedWhole512BlocksHitTheSameAtBlockSize16And512) {
  // Mooncake-style 512-token hash ids: requests share ids 1, 2 and differ in the third.
  // Shared = 1024 tokens. B = 16: 64 blocks (cap floor(1535/16) = 95 not binding) -> 1024.
  // B = 512: 2 blocks (cap floor(1535/512) = 2) -> 1024.
  for (int b : {16, 512}) {
    Outcome r;
    simulate(config_for(full_layout(b, 100000 / b)),
             {make_request(1, 0, {text(1, 512), text(2, 512), text(3, 512)}, 1),
              make_request(2, 1000, {text(1, 512), text(2, 512), text(4, 512)}, 1)},
             r);
    EXPECT_EQ(r.sink.requests[2].cached_tokens, 1024) << "block size " << b;
  }
}

TEST(EnginePrefix, SameTextWithAnotherImageDoesNotHitBeyondTheImage) {
  // Text 64 | image 32 | text 64 = 160 tokens, B = 16. The image starts at 64 = block 4, so the other
  // image hits blocks 0..3 = 64 tokens. Text-only, all 10 blocks were seen: reusable =
  // min(160, 159) = 159, lost = 159 - 64 = 95, attributed to the image.
  Outcome r;
  simulate(config_for(full_layout(16, 1000)),
           {make_request(1, 0, {text(7, 64), image(100, 32), text(8, 64)}, 1),
            make_request(2, 1000, {text(7, 64), image(101, 32), text(8, 64)}, 1),
            make_request(3, 2000, {text(7, 64), image(100, 32), text(8, 64)}, 1)},
           r);
  EXPECT_EQ(r.sink.requests[2].cached_tokens, 64);
  EXPECT_EQ(r.sink.requests[2].cause, MissCause::kDifferentImage);
  EXPECT_EQ(r.sink.requests[2].lost_tokens, 95);
  // The same image hits floor(159 / 16) * 16 = 144.
  EXPECT_EQ(r.sink.requests[3].cached_tokens, 144);
}

TEST(EnginePrefix, CacheSaltAndLoraChangeTheKey) {
  auto a = make_request(1, 0, {text(7, 64)}, 1);
  auto salted = make_request(2, 1000, {text(7, 64)}, 1);
  salted.cache_salt = "other-tenant";
  auto lora = make_request(3, 2000, {text(7, 64)}, 1);
  lora.lora = "adapter";
  auto same = make_request(4, 3000, {text(7, 64)}, 1);
  Outcome r;
  simulate(config_for(full_layout(16, 1000)), {a, salted, lora, same}, r);
  EXPECT_EQ(r.sink.requests[2].cached_tokens, 0);
  EXPECT_EQ(r.sink.requests[3].cached_tokens, 0);
  EXPECT_EQ(r.sink.requests[4].cached_tokens, 48);  // floor(63 / 16) * 16
}

TEST(EnginePrefix, EvictedPrefixIsAttributedToEviction) {
  // Pool of 4 usable blocks. Request 1 (64 tokens) caches 4 blocks; request 2 (64 tokens of other
  // content) needs all 4 and evicts them; request 3 repeats request 1: no hit, the first block had
  // been cached before -> kEvicted, lost = min(64, 63) - 0 = 63.
  Outcome r;
  simulate(config_for(full_layout(16, 5)),
           {make_request(1, 0, {text(7, 64)}, 1), make_request(2, 1000, {text(8, 64)}, 1),
            make_request(3, 2000, {text(7, 64)}, 1)},
           r);
  EXPECT_EQ(r.sink.requests[3].cached_tokens, 0);
  EXPECT_EQ(r.sink.requests[3].cause, MissCause::kEvicted);
  EXPECT_EQ(r.sink.requests[3].lost_tokens, 63);
  EXPECT_EQ(r.sink.requests[2].cause, MissCause::kNone);  // never seen: nothing was reusable
}

TEST(EngineScheduler, PreemptsTheLastRunningRequestWhenBlocksRunOutAndItCompletesLater) {
  // 8 usable blocks, B = 16. Two 48-token prompts (3 blocks each) with 60 output tokens: both are
  // admitted (6 <= 8). Decoding in lockstep, each holds 4 blocks for positions 48..63; at position 64
  // request 1 needs a 5th block with 0 free, so the last running request (2) is preempted. Request 1
  // then needs at most cdiv(48 + 59, 16) = 7 blocks, which fit, and request 2 runs after it.
  Outcome r;
  simulate(config_for(full_layout(16, 9)),
           {make_request(1, 0, {text(1, 48)}, 60), make_request(2, 0, {text(2, 48)}, 60)}, r);
  EXPECT_EQ(r.sink.requests[1].preemptions, 0);
  EXPECT_EQ(r.sink.requests[2].preemptions, 1);
  EXPECT_TRUE(r.sink.requests[2].finished);
  EXPECT_EQ(r.sink.requests[2].output_tokens, 60);
  EXPECT_EQ(r.sink.tokens[2], 60);
  EXPECT_GE(r.sink.requests[2].finish, r.sink.requests[1].finish);
  EXPECT_EQ(r.result.preemptions, 1);
}

TEST(EngineScheduler, OutputBeyondMaxModelLenIsCappedAndTheRecordKeepsTheRequest) {
  // max_model_len 256: a 100-token prompt asking 500 tokens gets max_tokens = 256 - 100 = 156 (vLLM
  // get_max_tokens) and finishes; its record keeps the 500 it asked for, so the cap shows.
  auto cfg = config_for(full_layout(16, 1000));
  cfg.max_model_len = 256;
  Outcome r;
  simulate(cfg, {make_request(1, 0, {text(1, 100)}, 500)}, r);
  EXPECT_TRUE(r.sink.requests[1].finished);
  EXPECT_EQ(r.sink.requests[1].output_tokens, 156);
  EXPECT_EQ(r.sink.requests[1].requested_output_tokens, 500);
}

TEST(EngineScheduler, AdmissionNeedsTheWholePromptToFit) {
  // 8 usable blocks, B = 16, budget 16 tokens per step. Request 1: 64-token prompt, 40 outputs; it
  // holds 5 blocks from position 64 on. Request 2 (64 tokens = 4 blocks) arrives at 10 ms, when only
  // 8 - 5 = 3 blocks are free: with scheduler_reserve_full_isl it waits until request 1 finishes,
  // although its first 16-token chunk (1 block) would fit. Without it, it starts at once.
  auto reqs = std::vector<RequestSpec>{make_request(1, 0, {text(1, 64)}, 40), make_request(2, 10, {text(2, 64)}, 4)};
  auto cfg = config_for(full_layout(16, 9));
  cfg.max_num_batched_tokens = 16;
  Outcome strict;
  simulate(cfg, reqs, strict);
  EXPECT_GE(*strict.sink.requests[2].first_scheduled, strict.sink.requests[1].finish);
  cfg.scheduler_reserve_full_isl = false;
  Outcome loose;
  simulate(cfg, reqs, loose);
  EXPECT_LT(*loose.sink.requests[2].first_scheduled, loose.sink.requests[1].finish);
}

TEST(EngineScheduler, WatermarkIsTheWholeBlocksOfItsFractionOfThePool) {
  // 15 blocks (14 usable), B = 16. Request 1 (32 tokens, 20 outputs) holds 3 blocks from 10 ms to its
  // end (positions 32..51 need 4 only at 48). Request 2 (160 tokens = 10 blocks whole) arrives at 10
  // ms with 11 free. vLLM: watermark_blocks = int(watermark x num_blocks): 0.1 x 15 = 1.5 -> 1, and
  // 10 + 1 <= 11 admits it at once (rounding up to 2 would not). 0.2 x 15 = 3: 13 > 11, it waits for
  // request 1 to finish.
  auto reqs = std::vector<RequestSpec>{make_request(1, 0, {text(1, 32)}, 20), make_request(2, 10, {text(2, 160)}, 4)};
  auto cfg = config_for(full_layout(16, 15));
  cfg.watermark = 0.1;
  Outcome low;
  simulate(cfg, reqs, low);
  EXPECT_LT(*low.sink.requests[2].first_scheduled, low.sink.requests[1].finish);
  EXPECT_LT(*low.sink.requests[2].first_scheduled, SimTime::from_ns(11'500'000));
  cfg.watermark = 0.2;
  Outcome high;
  simulate(cfg, reqs, high);
  EXPECT_GE(*high.sink.requests[2].first_scheduled, high.sink.requests[1].finish);
}

TEST(EngineScheduler, ChunkedPrefillRespectsMaxNumBatchedTokens) {
  // Two 100-token prompts, budget 32. Running first: request 1 takes 32, 32, 32, then its last 4
  // tokens plus 28 of request 2 fill step 4. Every step has 32 tokens: 4 x (1 ms + 32 us) = 4.128 ms
  // to request 1's first token.
  auto cfg = config_for(full_layout(16, 1000));
  cfg.max_num_batched_tokens = 32;
  Outcome r;
  simulate(cfg, {make_request(1, 0, {text(1, 100)}, 3), make_request(2, 0, {text(2, 100)}, 3)}, r);
  EXPECT_EQ(r.sink.requests[1].first_token, SimTime::from_ns(4128000));
  for (const StepRecord& s : r.sink.steps) EXPECT_LE(s.num_prefill_tokens + s.num_decode_tokens, 32);
}

TEST(EngineScheduler, LongPrefillThresholdCapsAChunk) {
  // Threshold 40 with budget 8192: prompt 100 runs as 40, 40, 20 -> first token after
  // 2 x 1.040 ms + 1.020 ms = 3.100 ms.
  auto cfg = config_for(full_layout(16, 1000));
  cfg.long_prefill_token_threshold = 40;
  Outcome r;
  simulate(cfg, {make_request(1, 0, {text(1, 100)}, 1)}, r);
  EXPECT_EQ(r.sink.requests[1].first_token, SimTime::from_ns(3100000));
}

TEST(EngineScheduler, MaxNumSeqsIsHonored) {
  auto cfg = config_for(full_layout(16, 1000));
  cfg.max_num_seqs = 2;
  std::vector<RequestSpec> reqs;
  for (int i = 1; i <= 5; ++i) reqs.push_back(make_request(i, 0, {text(static_cast<uint64_t>(i), 20)}, 5));
  Outcome r;
  int max_running = 0;
  simulate(cfg, reqs, r, 0, [&](const EngineInstance& e, const StepRecord& s) {
    max_running = std::max(max_running, s.num_prefill_requests + s.num_decode_requests);
  });
  EXPECT_EQ(max_running, 2);
  EXPECT_EQ(r.result.finished, 5);
}

TEST(EngineSlidingWindow, LayersHoldAtMostWindowPlusOneBlock) {
  // Window 128, B 16: at most ceil(127 / 16) + 1 = 9 blocks per request (16-token chunks and
  // decodes); full attention would grow to cdiv(200 + 99, 16) = 19.
  KvCacheLayout layout;
  layout.block_size = 16;
  layout.num_blocks = 1000;
  layout.groups.push_back(KvCacheGroup{KvGroupKind::kSlidingWindow, 1, 128, 0});
  auto cfg = config_for(layout);
  cfg.max_num_batched_tokens = 16;
  int64_t max_held = 0;
  Outcome r;
  simulate(cfg, {make_request(1, 0, {text(1, 200)}, 100)}, r, 0, [&](const EngineInstance& e, const StepRecord&) {
    max_held = std::max(max_held, e.held_blocks(RequestId(1)));
  });
  EXPECT_EQ(max_held, 9);
  EXPECT_TRUE(r.sink.requests[1].finished);
}

TEST(EngineSlidingWindow, HitNeedsOnlyTheBlocksCoveringTheWindow) {
  // Window 33, B 16: a hit needs cdiv(32, 16) = 2 contiguous cached blocks ending at the candidate.
  // Request 1 (160 tokens) registers blocks 0..9 but frees (and so keeps cached) only what it held at
  // the end; request 2 repeats it: max hit floor(159 / 16) = 9 blocks; blocks 7, 8 are still cached
  // (the last window), so the hit is 9 x 16 = 144 tokens.
  KvCacheLayout layout;
  layout.block_size = 16;
  layout.num_blocks = 1000;
  layout.groups.push_back(KvCacheGroup{KvGroupKind::kSlidingWindow, 1, 33, 0});
  Outcome r;
  simulate(config_for(layout), {make_request(1, 0, {text(1, 160)}, 1), make_request(2, 1000, {text(1, 160)}, 1)}, r);
  EXPECT_EQ(r.sink.requests[2].cached_tokens, 144);
}

// gpt-oss's layout: full attention plus a 128-token window, B 16 (a hit needs cdiv(127, 16) = 8 window
// blocks ending at it). vLLM SlidingWindowManager.reachable_block_mask (PR #43447) with retention 0 hashes
// only the 8 window blocks ending at the replay boundary floor((L-1)/B)*B and at the junction, so a prefix
// is reused from its 3rd sighting, as with a hybrid's states; dense retention hashes every block.
TEST(EngineSlidingWindow, RetentionZeroKeepsOnlyTheReachableTailsOfTheWindow) {
  KvCacheLayout layout;
  layout.block_size = 16;
  layout.num_blocks = 4000;
  layout.groups.push_back(KvCacheGroup{KvGroupKind::kFullAttention, 1, 0, 0});
  layout.groups.push_back(KvCacheGroup{KvGroupKind::kSlidingWindow, 1, 128, 0});
  // Four prompts of the same 600 tokens plus 400 of their own, then two of its first 100 plus 400.
  std::vector<RequestSpec> reqs;
  for (int i = 0; i < 4; ++i) reqs.push_back(make_request(i + 1, 1000 * i, {text(1, 600), text(10 + i, 400)}, 1));
  for (int i = 4; i < 6; ++i) reqs.push_back(make_request(i + 1, 1000 * i, {text(1, 100), text(10 + i, 400)}, 1));
  auto cached = [&](int64_t retention) {
    auto cfg = config_for(layout);
    cfg.window_retention_interval = retention;
    Outcome r;
    simulate(cfg, reqs, r);
    std::vector<int64_t> out;
    for (int id = 1; id <= 6; ++id) out.push_back(r.sink.requests[id].cached_tokens);
    return out;
  };
  // Retention 0. Request 1 hashes window blocks 54..61 only (its replay boundary 992). Request 2: full
  // attention matches 37 blocks (592 tokens), the window's blocks 29..36 have no hash: no hit, and 592
  // becomes its junction, whose tail it hashes. Requests 3 and 4 hit 592. Request 5 (100 shared tokens):
  // no hash on blocks 0..5, junction 96; request 6 hits 96.
  EXPECT_EQ(cached(0), (std::vector<int64_t>{0, 0, 592, 592, 0, 96}));
  {
    // Request 2's loss is named for the window tail it lacked: the 592 tokens attention matched.
    auto cfg = config_for(layout);
    cfg.window_retention_interval = 0;
    Outcome r;
    simulate(cfg, reqs, r);
    EXPECT_EQ(r.sink.requests[2].cause, MissCause::kNoSavedState);
    EXPECT_EQ(r.sink.requests[2].lost_tokens, 592);
  }
  // Dense: every block hashed, each prefix hits from its 2nd sighting.
  EXPECT_EQ(cached(kRetentionDense), (std::vector<int64_t>{0, 592, 592, 592, 96, 96}));
  // 512-token segments (32 blocks): blocks 24..31 end a segment, so request 2 hits 32 blocks (512).
  EXPECT_EQ(cached(512), (std::vector<int64_t>{0, 512, 592, 592, 0, 96}));
}

TEST(EngineSlidingWindow, AWindowOnlyLayoutHashesEveryBlockWhateverTheRetention) {
  // No full-attention group: vLLM's hybrid coordinator (and its junction) is not in play, so the window's
  // blocks all keep their hashes. Window 33, B 16: 100 shared tokens then 60 of each request's own; the
  // second request's lookup (at most 159 tokens) matches blocks 0..5, whose last two (4, 5) cover the
  // window: 96 tokens. Under the retention mask only blocks 7, 8 (before its replay boundary 144) would
  // have a hash, and nothing would hit.
  KvCacheLayout layout;
  layout.block_size = 16;
  layout.num_blocks = 1000;
  layout.groups.push_back(KvCacheGroup{KvGroupKind::kSlidingWindow, 1, 33, 0});
  auto cfg = config_for(layout);
  cfg.window_retention_interval = 0;
  Outcome r;
  simulate(cfg,
           {make_request(1, 0, {text(1, 100), text(2, 60)}, 1), make_request(2, 1000, {text(1, 100), text(3, 60)}, 1)},
           r);
  EXPECT_EQ(r.sink.requests[2].cached_tokens, 96);
}

TEST(EngineRun, InvariantsHoldThroughoutAndAtTheEnd) {
  auto cfg = config_for(full_layout(16, 40));
  cfg.max_num_batched_tokens = 64;
  std::vector<RequestSpec> reqs;
  for (int i = 1; i <= 30; ++i)
    reqs.push_back(make_request(i, i * 3, {text(1, 64), text(static_cast<uint64_t>(10 + i % 4), 50 + i)}, 5 + i % 7));
  Outcome r;
  simulate(cfg, reqs, r, 0, [](const EngineInstance& e, const StepRecord&) { e.check_invariants(); });
  EXPECT_EQ(r.result.finished, 30);
  EXPECT_EQ(r.result.unfinished, 0);
  int64_t want = 0;
  for (const auto& q : reqs) want += q.output_tokens;
  EXPECT_EQ(r.result.generated_tokens, want);
}

TEST(EngineRun, RequestThatCanNeverFitIsReportedUnfinished) {
  // 4 usable blocks = 64 tokens; a 100-token prompt needs cdiv(100, 16) = 7 blocks.
  Outcome r;
  simulate(config_for(full_layout(16, 5)),
           {make_request(1, 0, {text(1, 100)}, 1), make_request(2, 0, {text(2, 30)}, 1)}, r);
  EXPECT_FALSE(r.sink.requests[1].finished);
  EXPECT_TRUE(r.sink.requests[2].finished);
  EXPECT_EQ(r.result.unfinished, 1);
}

TEST(EngineRun, ClosedLoopKeepsConcurrencyInFlight) {
  std::vector<RequestSpec> reqs;
  for (int i = 1; i <= 6; ++i) reqs.push_back(make_request(i, 0, {text(static_cast<uint64_t>(i), 30)}, 4));
  Outcome r;
  int max_in_flight = 0;
  simulate(config_for(full_layout(16, 1000)), reqs, r, 2, [&](const EngineInstance& e, const StepRecord&) {
    max_in_flight = std::max(max_in_flight, e.num_running() + e.num_waiting());
  });
  EXPECT_LE(max_in_flight, 2);
  EXPECT_EQ(r.result.finished, 6);
  // Request 3 arrives when the first one finishes.
  EXPECT_EQ(r.sink.requests[3].arrival, r.sink.requests[1].finish);
}

TEST(EngineRun, IdenticalRunsGiveTheSameFingerprintAndRecords) {
  auto cfg = config_for(full_layout(16, 30));
  cfg.max_num_batched_tokens = 48;
  std::vector<RequestSpec> reqs;
  for (int i = 1; i <= 20; ++i)
    reqs.push_back(make_request(i, i, {text(1, 40), text(static_cast<uint64_t>(i % 3), 60)}, 3 + i % 5));
  Outcome a, b;
  simulate(cfg, reqs, a);
  simulate(cfg, reqs, b);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  ASSERT_EQ(a.sink.requests.size(), b.sink.requests.size());
  for (const auto& [id, ra] : a.sink.requests) {
    const RequestRecord& rb = b.sink.requests[id];
    EXPECT_EQ(ra.finish, rb.finish);
    EXPECT_EQ(ra.first_token, rb.first_token);
    EXPECT_EQ(ra.cached_tokens, rb.cached_tokens);
    EXPECT_EQ(ra.preemptions, rb.preemptions);
  }
  EXPECT_EQ(a.sink.steps.size(), b.sink.steps.size());
}

}  // namespace
}  // namespace kvsim
