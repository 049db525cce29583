#pragma once
// HostTier: the chunk index of one offload tier, vLLM CPUOffloadingManager with an eviction policy
// (vllm/v1/kv_offload/cpu/manager.py, cpu/policies/{lru,arc}.py via IEvictionPolicy; cluster-offload.md A.1).
// A chunk is keyed by the block hash of its last block (hashes chain, so the key names the whole prefix).
// Contract:
//  - capacity in chunks; a stored chunk (pending or ready) takes one slot until evicted;
//  - prepare_store drops keys already present, then needs one free slot per new key; if the tier lacks
//    them the policy evicts ready, idle chunks (LRU: from the least recent end), skipping `protected_keys` (the keys of
//    this store: vLLM's `protected = set(keys)`), all or nothing: if too few are evictable the whole store is skipped
//    (vLLM ALLOCATION_FAILURE) and nothing changes (rule 21);
//  - a new chunk is write-pending (vLLM ref_cnt -1) until complete_store; pending chunks are neither
//    hits nor evictable;
//  - LRU "use" (to the MRU end) = store completion, load completion, touch(); touch walks the keys in
//    reverse so the first chunk of a prefix ends most recent (rule 22); ARC: impl/arc_policy.h;
//  - a chunk being loaded (begin_load .. end_load) is not evictable.
// Iteration order is the policy's lists only (deterministic); the hash map serves lookups.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/tier/i_eviction_policy.h"

namespace kvsim {

class HostTier {
 public:
  // `eviction`: a make_eviction_policy name (lru, arc).
  explicit HostTier(int64_t capacity_chunks, const std::string& eviction = "lru");

  enum class State : uint8_t { kAbsent, kPending, kReady };
  State state(uint64_t key) const;
  // Number of leading keys that are ready (a pending or absent key ends the run).
  int64_t ready_run(std::span<const uint64_t> keys) const;
  // Returns false when the store is skipped; else *inserted = keys newly inserted (pending),
  // *evicted = chunks evicted to make room.
  bool prepare_store(std::span<const uint64_t> keys, std::span<const uint64_t> protected_keys, int64_t* inserted,
                     int64_t* evicted);
  void complete_store(std::span<const uint64_t> keys);
  void touch(std::span<const uint64_t> keys);
  void begin_load(std::span<const uint64_t> keys);
  void end_load(std::span<const uint64_t> keys);

  int64_t size() const { return static_cast<int64_t>(entries_.size()); }
  int64_t capacity() const { return capacity_; }
  int64_t evictions() const { return evictions_; }
  const IEvictionPolicy& policy() const { return *policy_; }

 private:
  struct Entry {
    int32_t ref = 0;  // -1: write pending; > 0: loads in flight; 0: idle
  };
  bool is_ready(uint64_t key) const;
  bool is_idle(uint64_t key) const;

  int64_t capacity_;
  int64_t evictions_ = 0;
  std::unordered_map<uint64_t, Entry> entries_;
  std::unique_ptr<IEvictionPolicy> policy_;
  std::vector<uint64_t> fresh_, sorted_, protected_;  // prepare_store scratch
  // Calls that may reorder the policy, and the keys of the last touch with the count after it: a touch that
  // repeats it with nothing in between is skipped when the policy's touch is idempotent (vLLM looks up, and
  // touches, the request at the head of a full queue every step: at block size 1, every token of it).
  uint64_t changes_ = 0, last_touch_changes_ = UINT64_MAX;
  std::vector<uint64_t> last_touch_;
};

}  // namespace kvsim
