// prefix_match_unit below the block size (vLLM PR #46384, partial prefix-cache hits for hybrids):
// fine-grained hashes, the prompt's partial tail entry in attention and state groups, the align
// split's tail stop, copy-on-write of a partly used hit block, and what stays block-floored.
#include <gtest/gtest.h>

#include "sim/core/check.h"
#include "sim/engine/block_hasher.h"
#include "sim/engine/scheduler.h"
#include "tests/engine/hybrid_test_util.h"

namespace kvsim {
namespace {
using testing::config_for;
using testing::full_layout;
using testing::hybrid_layout;
using testing::HybridOutcome;
using testing::make_request;
using testing::simulate_hybrid;
using testing::text;

constexpr int64_t kB = 528;  // Qwen3.5-4B attention block (vLLM's hybrid page rule)
constexpr int kUnit = 16;

// Qwen3.5-4B-like: one attention group and three state groups, block 528, budget 8192, the later
// vLLM behaviour (retention 0, junction checkpoint), align mode.
EngineConfig qwen35_like(int unit, int64_t num_blocks = 4000) {
  EngineConfig c = config_for(hybrid_layout(static_cast<int>(kB), num_blocks, 3));
  c.max_num_batched_tokens = 8192;
  c.mamba_cache_mode = MambaCacheMode::kAlign;
  c.prefix_cache_retention_interval = 0;
  c.shared_prefix_checkpoint = true;
  c.prefix_match_unit = unit;
  return c;
}

// Turn 2 of a conversation: turn 1's prompt, its answer (output token j of request `prev` has
// identity (1000000 + prev, j)), then `fresh` new tokens.
RequestSpec follow_up(int64_t id, int64_t at_ms, int64_t prev, std::vector<Segment> prev_prompt, int64_t answer,
                      uint64_t fresh_content, int64_t fresh) {
  std::vector<Segment> p = std::move(prev_prompt);
  p.push_back(Segment{1000000 + static_cast<uint64_t>(prev), answer, false, 0});
  p.push_back(text(fresh_content, fresh));
  return make_request(id, at_ms, std::move(p), 1);
}

TEST(PrefixMatchUnitHasher, BlockHashIsTheHashAtItsLastUnitBoundary) {
  RequestSpec a = make_request(1, 0, {text(7, 100), text(8, 60)}, 1);
  RequestSpec b = make_request(2, 0, {text(7, 30), text(7, 70, 30), text(8, 60)}, 1);  // same identities
  BlockHasher ha(64, a, 16), hb(64, b, 16), coarse(64, a);
  TokenSequence sa(a.prompt), sb(b.prompt);
  ha.extend(sa);
  hb.extend(sb);
  coarse.extend(sa);
  ASSERT_EQ(ha.fine_hashes().size(), 160u / 16);
  ASSERT_EQ(ha.hashes().size(), 160u / 64);
  EXPECT_EQ(ha.fine_hashes(), hb.fine_hashes());
  for (size_t k = 0; k < ha.hashes().size(); ++k) EXPECT_EQ(ha.hashes()[k], ha.fine_hashes()[(k + 1) * 4 - 1]);
  EXPECT_TRUE(coarse.fine_hashes().empty());                          // unit off: whole blocks only, O(blocks)
  EXPECT_EQ(coarse.has_inner_boundary(1), ha.has_inner_boundary(1));  // the run boundary at 100
}

TEST(PrefixMatchUnitHasher, DecodeTokensExtendingARunThatEndedABlockHashLikeOneSequence) {
  // The output run ends block 4 exactly (80 = 5 x 16); the next output token extends that same run.
  // Hashing one token at a time must give the hashes of the whole sequence hashed at once (the run
  // cursor used to point past the last run here and read out of bounds).
  for (int unit : {0, 4}) {
    RequestSpec spec = make_request(1, 0, {text(7, 64)}, 1);
    BlockHasher inc(16, spec, unit), whole(16, spec, unit);
    TokenSequence seq(spec.prompt), all(spec.prompt);
    inc.extend(seq);
    for (int64_t j = 0; j < 40; ++j) {
      seq.append(99, j, 1, false);
      inc.extend(seq);
    }
    all.append(99, 0, 40, false);
    whole.extend(all);
    EXPECT_EQ(inc.hashes(), whole.hashes()) << unit;
    EXPECT_EQ(inc.fine_hashes(), whole.fine_hashes()) << unit;
    EXPECT_EQ(inc.hashes().size(), 104u / 16) << unit;
  }
}

TEST(PrefixMatchUnit, AFollowUpTurnResumesAtThePreviousPromptsLastUnitBoundary) {
  // Turn 1: L = 2200. The align split stops at floor(2200 / 528) * 528 = 2112 (a full-block state,
  // kept as the replay boundary floor(2199 / 528) * 528), then at the tail stop
  // floor(2200 / 16) * 16 = 2192, where the attention and state groups register partial tail entries,
  // then runs the last 8 tokens. Turn 2 = turn 1 + its 1-token answer + 300 tokens (L = 2501, lookup
  // cap 2500): attention matches 4 whole blocks (2112), then probes the unit boundaries of block 4 and
  // finds the tail entry at 2192; the state group finds its tail entry there too.
  const int64_t l1 = 2200;
  const int64_t cut = l1 / kB * kB;
  const int64_t tail = l1 / kUnit * kUnit;
  ASSERT_EQ(cut, 2112);
  ASSERT_EQ(tail, 2192);
  const std::vector<Segment> turn1 = {text(100, l1)};
  auto run = [&](int unit, HybridOutcome& r) {
    simulate_hybrid(qwen35_like(unit), {make_request(1, 0, turn1, 1), follow_up(2, 1000, 1, turn1, 1, 300, 300)}, r, 0,
                    true);
  };
  HybridOutcome on, off;
  run(kUnit, on);
  run(0, off);

  const RequestRecord& p1 = on.sink.requests[1];
  EXPECT_EQ(p1.saved_state_positions, (std::vector<int64_t>{cut, tail}));
  const RequestRecord& q = on.sink.requests[2];
  EXPECT_EQ(q.prompt_tokens, 2501);
  EXPECT_EQ(q.cached_tokens, tail);
  EXPECT_EQ(q.matched_tokens, tail);
  // Turn 1 saw the prompt up to 2200 (a run boundary inside block 4); reuse stops 8 tokens short, at
  // the unit boundary below it: a partial-block loss.
  EXPECT_EQ(q.lost_tokens, l1 - tail);
  EXPECT_EQ(q.cause, MissCause::kPartialBlock);
  // Turn 2 starts mid-block at 2192 and runs to its own tail stop floor(2501 / 16) * 16 = 2496, then 5.
  const int64_t tail2 = 2501 / kUnit * kUnit;
  EXPECT_EQ(on.prefill_chunks, (std::vector<int64_t>{cut, tail - cut, l1 - tail, tail2 - tail, 2501 - tail2}));
  EXPECT_EQ(q.saved_state_positions, (std::vector<int64_t>{tail2}));
  // Copy-on-write: turn 2's attention table holds the 4 shared blocks and a private copy of block 4;
  // each state group holds the private copy of the 2192 state (its running block, column 4).
  ASSERT_GE(on.held.size(), 4u);
  EXPECT_EQ(on.held[3].at(2), (std::vector<int64_t>{5, 1, 1, 1}));
  // State copies (3 groups x 1000-byte page): 2112 -> 2192 crosses into column 4; 2192 -> 2200 first
  // copies the tail state out of the running block; turn 2's first step copies the hit state on write;
  // its last step copies out its own tail (2496).
  EXPECT_EQ(on.state_copy_bytes, (std::vector<int64_t>{0, 3000, 3000, 3000, 3000}));

  // Without the unit only the last block-aligned saved state is reused.
  const RequestRecord& q0 = off.sink.requests[2];
  EXPECT_EQ(q0.cached_tokens, cut);
  EXPECT_EQ(off.sink.requests[1].saved_state_positions, (std::vector<int64_t>{cut}));
  EXPECT_EQ(off.prefill_chunks, (std::vector<int64_t>{cut, l1 - cut, 2501 - cut}));
}

TEST(PrefixMatchUnit, TheSameTurnTwiceReusesUpToTheTailBelowTheCap) {
  // A resubmitted 2200-token prompt: the lookup cap is 2199, and the tail entry at 2192 is below it.
  const std::vector<Segment> p = {text(100, 2200)};
  HybridOutcome r;
  simulate_hybrid(qwen35_like(kUnit), {make_request(1, 0, p, 1), make_request(2, 1000, p, 1)}, r, 0, true);
  EXPECT_EQ(r.sink.requests[2].cached_tokens, 2192);
  // A prompt ending on the unit grid (2208 = 138 * 16): its tail entry at 2208 is beyond the cap 2207
  // of the same prompt, so the resubmission falls back to the full-block state at 2112.
  const std::vector<Segment> g = {text(101, 2208)};
  HybridOutcome s;
  simulate_hybrid(qwen35_like(kUnit), {make_request(1, 0, g, 1), make_request(2, 1000, g, 1)}, s, 0, true);
  EXPECT_EQ(s.sink.requests[1].saved_state_positions, (std::vector<int64_t>{2112, 2208}));
  EXPECT_EQ(s.sink.requests[2].cached_tokens, 2112);
}

TEST(PrefixMatchUnit, ASharedSystemPromptEndingMidBlockStillGetsOnlyTheBlockFlooredJunction) {
  // Four prompts: a shared 1500-token system prompt + 700 unique tokens. Partial tail entries sit at
  // each prompt's own end (2192), in the unique suffix; nothing marks 1500 (or 1488 = floor(1500/16)*16)
  // so attention matches floor(1500 / 528) * 528 = 1056 and the state group gets the junction at 1056
  // from the second request on, with or without the unit.
  const int64_t junction = 1500 / kB * kB;
  ASSERT_EQ(junction, 1056);
  for (int unit : {0, kUnit}) {
    std::vector<RequestSpec> reqs;
    for (int i = 1; i <= 4; ++i) reqs.push_back(make_request(i, 1000 * i, {text(100, 1500), text(200 + i, 700)}, 1));
    HybridOutcome r;
    simulate_hybrid(qwen35_like(unit), reqs, r, 0, true);
    EXPECT_EQ(r.sink.requests[2].cached_tokens, 0) << unit;
    EXPECT_EQ(r.sink.requests[2].lost_tokens, junction) << unit;
    EXPECT_EQ(r.sink.requests[2].cause, MissCause::kNoSavedState) << unit;
    for (int i = 3; i <= 4; ++i) {
      const RequestRecord& q = r.sink.requests[i];
      EXPECT_EQ(q.matched_tokens, junction) << unit << " " << i;
      EXPECT_EQ(q.cached_tokens, junction) << unit << " " << i;
      EXPECT_EQ(q.lost_tokens, 1500 - junction) << unit << " " << i;
      EXPECT_EQ(q.cause, MissCause::kPartialBlock) << unit << " " << i;
    }
    // Request 2 stops at the junction, the last block boundary 2112 and, with the unit, at 2192.
    const std::vector<int64_t> want = unit == 0 ? std::vector<int64_t>{junction, 2112 - junction, 88}
                                                : std::vector<int64_t>{junction, 2112 - junction, 80, 8};
    const size_t first = unit == 0 ? 2 : 3;  // request 1: 2112, 88 (+ the split 80, 8 with the unit)
    ASSERT_GE(r.prefill_chunks.size(), first + want.size());
    EXPECT_EQ(std::vector<int64_t>(r.prefill_chunks.begin() + static_cast<std::ptrdiff_t>(first),
                                   r.prefill_chunks.begin() + static_cast<std::ptrdiff_t>(first + want.size())),
              want)
        << unit;
  }
}

TEST(PrefixMatchUnit, DenseRetentionReusesTheTailToo) {
  // Dense retention keeps every saved state (2112 and the 2192 tail); the fixed point still takes the
  // longest length both groups back: the tail.
  EngineConfig c = qwen35_like(kUnit);
  c.prefix_cache_retention_interval = kRetentionDense;
  const std::vector<Segment> turn1 = {text(100, 2200)};
  HybridOutcome r;
  simulate_hybrid(c, {make_request(1, 0, turn1, 1), follow_up(2, 1000, 1, turn1, 1, 300, 300)}, r, 0, true);
  EXPECT_EQ(r.sink.requests[2].cached_tokens, 2192);
}

TEST(PrefixMatchUnit, ConversationsUnderPressureKeepInvariantsAndAreDeterministic) {
  // Eight three-turn conversations sharing a 1500-token system prompt, concurrency 4, a pool small
  // enough to evict and preempt; every step checks the pool against the block tables.
  auto workload = [] {
    std::vector<RequestSpec> reqs;
    int64_t id = 1;
    for (int conv = 0; conv < 8; ++conv) {
      std::vector<Segment> prompt = {text(100, 1500), text(200 + static_cast<uint64_t>(conv), 300 + 97 * conv)};
      for (int turn = 0; turn < 3; ++turn) {
        RequestSpec r = make_request(id, 10 * id, prompt, 3 + turn);
        reqs.push_back(r);
        prompt.push_back(Segment{r.output_content_id, r.output_tokens, false, 0});
        prompt.push_back(text(5000 + static_cast<uint64_t>(id), 211 + 31 * turn));
        ++id;
      }
    }
    return reqs;
  };
  for (int64_t blocks : {24, 40, 4000}) {
    HybridOutcome a, b;
    simulate_hybrid(qwen35_like(kUnit, blocks), workload(), a, 4, true);
    simulate_hybrid(qwen35_like(kUnit, blocks), workload(), b, 4, true);
    EXPECT_EQ(a.fingerprint, b.fingerprint) << blocks;
    EXPECT_EQ(a.result.finished, 24) << blocks;
    int64_t cached = 0;
    for (const auto& [id, rec] : a.sink.requests) {
      EXPECT_TRUE(rec.finished) << id;
      EXPECT_LE(rec.cached_tokens, rec.prompt_tokens - 1) << id;
      cached += rec.cached_tokens;
    }
    if (blocks == 24) {
      EXPECT_GT(a.result.preemptions, 0);  // preempted requests re-hit their own tails
    }
    if (blocks <= 40) {
      EXPECT_GT(a.result.evictions, 0);
    }
    EXPECT_GT(cached, 0) << blocks;
  }
}

TEST(PrefixMatchUnit, PlainModelsIgnoreTheUnitAsVllmDoes) {
  // A single full-attention group hashes whole blocks whatever prefix_match_unit says
  // (resolve_kv_cache_block_sizes), so the run is identical.
  auto run = [](int unit) {
    EngineConfig c = config_for(full_layout(64, 400));
    c.prefix_match_unit = unit;
    HybridOutcome r;
    std::vector<RequestSpec> reqs;
    for (int i = 1; i <= 6; ++i) reqs.push_back(make_request(i, 5 * i, {text(1, 700), text(10 + i % 2, 150)}, 4));
    simulate_hybrid(c, reqs, r, 2, true);
    return r;
  };
  const HybridOutcome a = run(0), b = run(16);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_EQ(a.sink.requests.at(3).cached_tokens, b.sink.requests.at(3).cached_tokens);
  EXPECT_EQ(a.sink.requests.at(3).cached_tokens, 832);  // 700 + 150 shared with request 1: 13 blocks
}

TEST(PrefixMatchUnit, HybridsOutsideAlignModeOrWithoutCachingIgnoreTheUnit) {
  for (bool caching : {true, false}) {
    EngineConfig c = qwen35_like(kUnit);
    c.enable_prefix_caching = caching;
    c.mamba_cache_mode = caching ? MambaCacheMode::kAll : MambaCacheMode::kNone;
    Scheduler s(c);
    EXPECT_FALSE(s.kv().partial_hash_hits()) << caching;
    EXPECT_EQ(s.kv().hash_unit(), kB) << caching;
  }
  Scheduler on(qwen35_like(kUnit));
  EXPECT_TRUE(on.kv().partial_hash_hits());
  EXPECT_EQ(on.kv().hash_unit(), kUnit);
  EXPECT_THROW(Scheduler(qwen35_like(32)), InvariantError);  // 32 does not divide 528
}

TEST(PrefixMatchUnit, PartialHitThatCannotBeCopiedIsRejectedByItsOwnReason) {
  // A 50-token prompt, unit 16: the align split stops at the tail boundary 48, holding 1 attention + 3
  // state blocks. Its next step copies the partial tail out (vLLM MambaManager: an old request with a
  // partial tail asks 1 + 1 blocks per state group): 6 free blocks needed. N blocks leave N - 1 usable,
  // N - 5 free: N = 11 runs through, N = 10 preempts itself. Back in waiting it hits its own tail at 48
  // inside a block, and each state group then asks the hit (evictable), its copy and the running block:
  // 9, plus the attention hit: more than 9 usable blocks. Without the hit it would need 4.
  for (int64_t n : {10, 11}) {
    EngineConfig c = qwen35_like(kUnit, n);
    c.max_model_len = 528;
    HybridOutcome r;
    simulate_hybrid(c, {make_request(1, 0, {text(1, 50)}, 1)}, r, 0, true);
    const RequestRecord& rec = r.sink.requests.at(1);
    if (n == 11) {
      EXPECT_TRUE(rec.finished);
      EXPECT_EQ(rec.preemptions, 0);
    } else {
      EXPECT_FALSE(rec.finished);
      EXPECT_EQ(rec.rejected, RejectReason::kHitDoesNotFit) << reject_reason_name(rec.rejected);
      EXPECT_EQ(rec.preemptions, 1);
    }
  }
}

}  // namespace
}  // namespace kvsim
