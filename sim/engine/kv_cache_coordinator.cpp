#include "sim/engine/kv_cache_coordinator.h"

#include <algorithm>

#include "sim/core/check.h"
#include "sim/engine/full_attention_manager.h"
#include "sim/engine/mamba_manager.h"
#include "sim/engine/sliding_window_manager.h"

namespace kvsim {

KvCacheCoordinator::KvCacheCoordinator(const KvCacheLayout& layout, bool enable_caching, int64_t max_in_flight_tokens,
                                       int64_t max_model_len)
    : block_size_(layout.block_size),
      enable_caching_(enable_caching),
      max_model_len_(max_model_len),
      pool_(layout.num_blocks, enable_caching) {
  init(layout, max_in_flight_tokens, nullptr);
}

KvCacheCoordinator::KvCacheCoordinator(const EngineConfig& config, int64_t max_in_flight_tokens)
    : block_size_(config.layout.block_size),
      enable_caching_(config.enable_prefix_caching),
      partial_hybrid_hits_(config.kv_connector_partial_hybrid_hits),
      max_model_len_(config.max_model_len),
      pool_(config.layout.num_blocks, config.enable_prefix_caching) {
  init(config.layout, max_in_flight_tokens, &config);
}

void KvCacheCoordinator::init(const KvCacheLayout& layout, int64_t max_in_flight_tokens, const EngineConfig* config) {
  KVSIM_CHECK(layout.block_size > 0, "block size must be positive");
  KVSIM_CHECK(!layout.groups.empty(), "layout has no KV cache group");
  const EngineConfig defaults;
  const EngineConfig& c = config != nullptr ? *config : defaults;
  const MambaCacheMode mode = enable_caching_ ? c.mamba_cache_mode : MambaCacheMode::kNone;
  // Window retention needs vLLM's hybrid coordinator (a full-attention group beside the window; only it
  // returns the junction); a window-only layout hashes every block.
  has_full_attention_ = std::any_of(layout.groups.begin(), layout.groups.end(),
                                    [](const KvCacheGroup& g) { return g.kind == KvGroupKind::kFullAttention; });
  const int64_t window_retention = has_full_attention_ ? c.window_retention_interval : kRetentionDense;
  bool found_full = false;  // the first full-attention group keeps the history
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    const KvCacheGroup& grp = layout.groups[g];
    const int id = static_cast<int>(g);
    switch (grp.kind) {
      case KvGroupKind::kFullAttention:
        managers_.push_back(std::make_unique<FullAttentionManager>(pool_, id, block_size_));
        if (!found_full) history_group_ = id;
        found_full = true;
        break;
      case KvGroupKind::kSlidingWindow: {
        auto m = std::make_unique<SlidingWindowManager>(pool_, id, block_size_, grp.window, max_in_flight_tokens,
                                                        max_model_len_, window_retention);
        sliding_managers_.push_back(m.get());
        managers_.push_back(std::move(m));
        break;
      }
      case KvGroupKind::kState: {
        auto m = std::make_unique<MambaManager>(pool_, id, block_size_, mode, c.prefix_cache_retention_interval);
        state_managers_.push_back(m.get());
        managers_.push_back(std::move(m));
        state_bytes_ += grp.page_bytes_per_layer * grp.num_layers;
        break;
      }
    }
  }
  all_full_attention_ = true;
  for (const KvCacheGroup& grp : layout.groups)
    all_full_attention_ = all_full_attention_ && grp.kind == KvGroupKind::kFullAttention;
  // vLLM resolve_kv_cache_block_sizes: hash_block_size = prefix_match_unit, falling back to the
  // scheduler block size when prefix caching is off or a Mamba group is not in align mode; partial
  // hash hits need it below the block size with Mamba in align mode. A single-group (plain) model
  // always hashes whole blocks; a plain multi-group model hashes finer but hits stay block-aligned,
  // so the unit changes nothing there and is ignored.
  if (c.prefix_match_unit > 0 && c.prefix_match_unit < block_size_ && !state_managers_.empty() &&
      mode == MambaCacheMode::kAlign) {
    KVSIM_CHECK(block_size_ % c.prefix_match_unit == 0,
                "prefix_match_unit " << c.prefix_match_unit << " does not divide the block size " << block_size_);
    for (const auto& m : managers_)
      KVSIM_CHECK(m->kind() != KvGroupKind::kSlidingWindow,
                  "prefix_match_unit below the block size with sliding-window groups is not supported (vLLM "
                  "neither)");
    partial_hash_hits_ = true;
    hash_unit_ = c.prefix_match_unit;
  }
  for (int g = 0; g < num_groups(); ++g)
    if (managers_[static_cast<size_t>(g)]->kind() == KvGroupKind::kFullAttention) lookup_order_.push_back(g);
  for (int g = 0; g < num_groups(); ++g)
    if (managers_[static_cast<size_t>(g)]->kind() != KvGroupKind::kFullAttention) lookup_order_.push_back(g);
}

void KvCacheCoordinator::find_longest_cache_hit(std::span<const uint64_t> hashes, int64_t max_length, CacheHit& out,
                                                std::span<const uint64_t> fine) const {
  out.blocks.resize(managers_.size());
  out.clear();
  if (!enable_caching_ || max_length <= 0) return;
  int64_t length = max_length;
  bool first = true;
  // Fixed point: every group either accepts `length` or shrinks it. Full attention only shrinks once
  // (its hit for a shorter candidate is a prefix of its longer one); sliding windows may need rounds.
  while (true) {
    const int64_t before = length;
    for (int g : lookup_order_) {
      auto& blocks = out.blocks[static_cast<size_t>(g)];
      if (partial_hash_hits_ && !fine.empty()) {
        length = std::min(
            length, managers_[static_cast<size_t>(g)]->find_partial_hit(hashes, fine, hash_unit_, length, blocks));
      } else {
        managers_[static_cast<size_t>(g)]->find_longest_cache_hit(hashes, length, blocks);
        length = std::min<int64_t>(length, std::ssize(blocks) * block_size_);
      }
      if (first) {
        out.first_pass_tokens = length;
        first = false;
      }
      if (length == 0) break;
    }
    if (length == before || length == 0) break;
  }
  out.attention_tokens = has_full_attention_ ? out.first_pass_tokens : 0;
  // A hit ending inside a block keeps that block (partly used; copied on write at allocation).
  const int64_t keep = (length + block_size_ - 1) / block_size_;
  for (auto& blocks : out.blocks) blocks.resize(static_cast<size_t>(std::min<int64_t>(std::ssize(blocks), keep)));
  out.num_tokens = length;
  // The connector path extends attention by whole blocks only, from a block-aligned resume point.
  if (partial_hybrid_hits_ && has_state() && out.attention_tokens > length && length % block_size_ == 0) {
    // The connector keeps the attention match; computation resumes at the last saved state.
    for (size_t g = 0; g < managers_.size(); ++g) {
      if (managers_[g]->kind() == KvGroupKind::kFullAttention)
        managers_[g]->find_longest_cache_hit(hashes, out.attention_tokens, out.blocks[g]);
    }
  }
}

bool KvCacheCoordinator::allocate_slots(int slot, int64_t num_computed, int64_t num_new_tokens, const CacheHit* hit,
                                        int64_t full_sequence_tokens, int64_t reserve) {
  // 0 new tokens only to pin a prefix hit (a pull with nothing external, scheduler.cpp).
  KVSIM_CHECK(num_new_tokens > 0 || (num_new_tokens == 0 && hit != nullptr && hit->num_tokens > 0),
              "allocate_slots with " << num_new_tokens << " new tokens");
  // A running request of a full-attention-only layout whose blocks already cover the step (a decode
  // step inside a block): nothing to skip, count or allocate; the general path would find 0 needed.
  if (all_full_attention_ && hit == nullptr) {
    const int64_t need = std::min(num_computed + num_new_tokens, max_model_len_);
    if (full_sequence_tokens <= need) {
      const int64_t required = (need + block_size_ - 1) / block_size_;
      bool covered = true;
      for (const auto& m : managers_) covered = covered && std::ssize(m->blocks(slot)) >= required;
      if (covered) return pool_.num_free_blocks() - reserve >= 0;
    }
  }
  // vLLM: skipped blocks are released first, on processed (not in-flight) tokens.
  for (auto& m : managers_) m->remove_skipped_blocks(slot, num_computed);
  const int64_t hit_tokens = hit == nullptr ? 0 : hit->num_tokens;
  const int64_t total_computed = num_computed + hit_tokens;
  const int64_t need_tokens = std::min(total_computed + num_new_tokens, max_model_len_);
  auto hit_blocks = [&](size_t g) {
    return hit == nullptr || hit->blocks.empty() ? std::span<const BlockId>()
                                                 : std::span<const BlockId>(hit->blocks[g]);
  };
  const int64_t available = pool_.num_free_blocks() - reserve;
  int64_t needed = 0;
  for (size_t g = 0; g < managers_.size(); ++g) {
    needed += managers_[g]->num_blocks_to_allocate(slot, need_tokens, hit_blocks(g), total_computed);
  }
  if (needed > available) return false;
  if (full_sequence_tokens > need_tokens) {
    int64_t full_needed = 0;
    for (size_t g = 0; g < managers_.size(); ++g) {
      full_needed += std::min(managers_[g]->num_blocks_to_allocate(slot, std::min(full_sequence_tokens, max_model_len_),
                                                                   hit_blocks(g), total_computed),
                              managers_[g]->max_blocks_per_request());
    }
    if (full_needed > available) return false;
  }
  for (size_t g = 0; g < managers_.size(); ++g) {
    if (hit != nullptr) managers_[g]->save_new_computed_blocks(slot, hit_blocks(g), total_computed);
    managers_[g]->allocate_new_blocks(slot, need_tokens);
  }
  return true;
}

int64_t KvCacheCoordinator::cache_blocks(int slot, std::span<const uint64_t> hashes, int64_t num_tokens,
                                         std::vector<int64_t>* saved_states) {
  if (!enable_caching_) return num_tokens / block_size_;
  // Without state groups every group caches exactly the full blocks up to num_tokens: a call that
  // completes no block since the last one (most decode steps) has nothing to register in any group.
  const int64_t full = num_tokens / block_size_;
  const bool plain = state_managers_.empty();
  if (plain) {
    const auto s = static_cast<size_t>(slot);
    if (s >= cached_full_.size()) cached_full_.resize(s + 1, -1);
    if (full <= cached_full_[s]) return full;
    cached_full_[s] = full;
  }
  int64_t first_new = 0;
  for (auto& m : managers_) {
    const bool first_state = !state_managers_.empty() && m.get() == state_managers_.front();
    const int64_t f = first_state ? state_managers_.front()->cache_state_blocks(slot, hashes, num_tokens, saved_states)
                                  : m->cache_blocks(slot, hashes, num_tokens);
    if (m->group_id() == history_group_) first_new = f;
  }
  return first_new;
}

void KvCacheCoordinator::cache_partial_tails(int slot, std::span<const uint64_t> fine, int64_t prompt_tokens,
                                             int64_t num_tokens, std::vector<int64_t>* saved_states) {
  if (!partial_hash_hits_) return;
  for (auto& m : managers_) {
    const int64_t pos = m->cache_partial_tail(slot, fine, hash_unit_, prompt_tokens, num_tokens);
    const bool first_state = !state_managers_.empty() && m.get() == state_managers_.front();
    if (pos > 0 && first_state && saved_states != nullptr) saved_states->push_back(pos);
  }
}

void KvCacheCoordinator::set_state_boundaries(int slot, int64_t replay_boundary, int64_t junction) {
  for (MambaManager* m : state_managers_) m->set_boundaries(slot, replay_boundary, junction);
  for (SlidingWindowManager* m : sliding_managers_) m->set_boundaries(slot, replay_boundary, junction);
}

void KvCacheCoordinator::new_step() {
  for (MambaManager* m : state_managers_) m->new_step();
}

void KvCacheCoordinator::free(int slot) {
  for (auto& m : managers_) m->free(slot);
  if (static_cast<size_t>(slot) < cached_full_.size()) cached_full_[static_cast<size_t>(slot)] = -1;
}

int64_t KvCacheCoordinator::num_held_blocks(int slot) const {
  int64_t n = 0;
  for (const auto& m : managers_) n += m->num_held_blocks(slot);
  return n;
}

int64_t KvCacheCoordinator::blocks_for_request(int64_t num_tokens) const {
  // vLLM KVCacheSpec.max_memory_usage_bytes in blocks: a block per block column of the sequence,
  // capped per group (sliding window: the window's blocks + 1; state: 1 block in mode none, 2 in
  // align, every column in all).
  const int64_t columns = (std::min(num_tokens, max_model_len_) + block_size_ - 1) / block_size_;
  int64_t blocks = 0;
  for (const auto& m : managers_) blocks += std::min(columns, m->max_blocks_per_request());
  return blocks;
}

}  // namespace kvsim
