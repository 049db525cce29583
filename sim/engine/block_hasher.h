#pragma once
// Block hashing from token identities (vLLM kv_cache_utils.py: hash_block_tokens,
// generate_block_hash_extra_keys, get_request_block_hasher).
//
// A request's tokens are a TokenSequence of maximal runs: consecutive tokens of the same content at
// consecutive offsets form one run whatever the segment cuts were, so a hash depends on token
// identities only (a prompt of 512-token segments hashes like one of 16-token segments with the same
// identities). Block k's hash = H(hash of block k-1, the run pieces covering [kB, (k+1)B), extra keys).
// Extra keys, as vLLM: the LoRA name on every block, each image overlapping the block as
// (content id, image start - block start), the cache salt on the first block only. Image tokens enter
// the token part as placeholders (vLLM's placeholder token ids), so only the image key tells two images
// apart. Only full blocks are hashed; output tokens extend the sequence so decode blocks are hashed as
// they fill. Cost: O(runs overlapping the block) per block.
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/workload/request.h"

namespace kvsim {

struct TokenRun {
  uint64_t content_id = 0;
  int64_t offset = 0;  // offset of the run's first token inside its content
  int64_t length = 0;
  int64_t start = 0;  // position of the run's first token in the sequence
  bool image = false;
};

class TokenSequence {
 public:
  TokenSequence() = default;
  explicit TokenSequence(const std::vector<Segment>& prompt);
  // Appends `length` tokens of `content_id` starting at `offset`, merging with the last run when the
  // identities continue it.
  void append(uint64_t content_id, int64_t offset, int64_t length, bool image) {
    // Fast path (a decode token continuing the output run), inline: the engine appends one token
    // per request per step.
    if (length > 0 && !runs_.empty()) {
      TokenRun& last = runs_.back();
      if (last.content_id == content_id && last.image == image && last.offset + last.length == offset) {
        last.length += length;
        size_ += length;
        return;
      }
    }
    append_run(content_id, offset, length, image);
  }
  int64_t size() const { return size_; }
  const std::vector<TokenRun>& runs() const { return runs_; }
  // Index of the run containing position `pos` (0 <= pos < size()).
  size_t run_at(int64_t pos) const;

 private:
  void append_run(uint64_t content_id, int64_t offset, int64_t length, bool image);
  std::vector<TokenRun> runs_;
  int64_t size_ = 0;
};

// Incremental hasher of one request's full blocks.
class BlockHasher {
 public:
  BlockHasher() = default;
  // `hash_unit` (vLLM hash_block_size, from prefix_match_unit): 0 or block_size hashes whole blocks;
  // a divisor of block_size hashes every hash_unit tokens, chained, and a block's hash is the hash at
  // its last unit boundary. Fine hashing costs O(tokens / hash_unit); only hybrids with partial hash
  // hits ask for it.
  BlockHasher(int block_size, const RequestSpec& spec, int hash_unit = 0);
  // Hashes every full block (and, with a finer unit, every full unit) of `seq` not hashed yet.
  void extend(const TokenSequence& seq) {
    // Nothing to hash until the next unit fills (most calls: a decode token inside a block).
    const int64_t hashed = unit_ == block_size_ ? std::ssize(hashes_) : std::ssize(fine_);
    if (seq.size() >= (hashed + 1) * unit_) extend_units(seq);
  }
  const std::vector<uint64_t>& hashes() const { return hashes_; }
  // Hashes at every unit boundary (empty when the unit is the block size): fine_hashes()[j] keys the
  // prefix of (j + 1) * hash_unit() tokens.
  const std::vector<uint64_t>& fine_hashes() const { return fine_; }
  int hash_unit() const { return unit_; }
  // The hash block k would have without image keys (== hashes()[k] when the request has no image):
  // used to attribute a miss to a different image.
  uint64_t text_only_hash(size_t k) const { return has_images_ ? text_hashes_[k] : hashes_[k]; }
  bool has_images() const { return has_images_; }
  // True when a run boundary falls strictly inside hashed block k (only such blocks have boundary keys).
  bool has_inner_boundary(size_t k) const { return inner_boundary_[k] != 0; }
  // Keys of the prefixes of block k that end at a run boundary strictly inside the block, or at
  // `end` when kB < end < (k+1)B. Appends (end position, key) pairs. Needs block k-1 hashed.
  // Two requests get equal keys for a prefix only if both have a run boundary there; this is how a
  // reusable part ending inside a block is recognised (MissCause::kPartialBlock).
  void boundary_keys(const TokenSequence& seq, int64_t k, int64_t end,
                     std::vector<std::pair<int64_t, uint64_t>>& out) const;
  int block_size() const { return block_size_; }
  void clear();

 private:
  void extend_units(const TokenSequence& seq);
  struct Digest {
    uint64_t main;
    uint64_t text;
  };
  uint64_t parent(int64_t k) const;
  // The index of the run holding `pos`: `cursor` when it does, else a binary search.
  static size_t locate(const TokenSequence& seq, size_t cursor, int64_t pos);
  // The digest of the piece [begin, end) (end <= begin + size) chained on `parent`; appends run-boundary
  // prefix keys inside (begin, begin + size) to `boundaries` if non-null.
  Digest hash_piece(const TokenSequence& seq, int64_t begin, int64_t size, size_t run, int64_t end, Digest parent,
                    std::vector<std::pair<int64_t, uint64_t>>* boundaries) const;

  int block_size_ = 16;
  int unit_ = 16;
  uint64_t lora_key_ = 0;
  uint64_t salt_key_ = 0;
  bool has_lora_ = false;
  bool has_salt_ = false;
  bool has_images_ = false;
  size_t run_cursor_ = 0;    // run containing the first token of the next block (unit) to hash
  size_t block_cursor_ = 0;  // fine mode: run containing the first token of the next block
  std::vector<uint64_t> hashes_;
  std::vector<uint64_t> text_hashes_;  // only when has_images_
  std::vector<uint8_t> inner_boundary_;
  std::vector<uint64_t> fine_;       // only when unit_ < block_size_
  std::vector<uint64_t> fine_text_;  // only then and when has_images_
};

}  // namespace kvsim
