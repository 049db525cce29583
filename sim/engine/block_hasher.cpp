#include "sim/engine/block_hasher.h"

#include <algorithm>

#include "sim/core/check.h"
#include "sim/core/random.h"
#include "sim/engine/hash_mix.h"

namespace kvsim {
namespace {
// Domain tags keep the different kinds of words in a block key apart.
constexpr uint64_t kNoneHash = 0x766c6c6d2d6e6f6eULL;  // vLLM NONE_HASH: parent of block 0
constexpr uint64_t kBlockSeed = 0x6b7673696d2d626bULL;
constexpr uint64_t kTextTag = 1, kImageTag = 2, kMmKeyTag = 3, kLoraTag = 4, kSaltTag = 5, kBoundaryTag = 6;
}  // namespace

TokenSequence::TokenSequence(const std::vector<Segment>& prompt) {
  runs_.reserve(prompt.size() + 1);
  for (const Segment& s : prompt) {
    if (s.tokens > 0) append(s.content_id, s.offset, s.tokens, s.image);
  }
}

void TokenSequence::append_run(uint64_t content_id, int64_t offset, int64_t length, bool image) {
  KVSIM_CHECK(length > 0, "empty token run");
  if (!runs_.empty()) {
    TokenRun& last = runs_.back();
    if (last.content_id == content_id && last.image == image && last.offset + last.length == offset) {
      last.length += length;
      size_ += length;
      return;
    }
  }
  runs_.push_back(TokenRun{content_id, offset, length, size_, image});
  size_ += length;
}

size_t TokenSequence::run_at(int64_t pos) const {
  KVSIM_CHECK(pos >= 0 && pos < size_, "position " << pos << " outside sequence of " << size_);
  auto it = std::upper_bound(runs_.begin(), runs_.end(), pos, [](int64_t p, const TokenRun& r) { return p < r.start; });
  return static_cast<size_t>(it - runs_.begin()) - 1;
}

BlockHasher::BlockHasher(int block_size, const RequestSpec& spec, int hash_unit)
    : block_size_(block_size), unit_(hash_unit > 0 ? hash_unit : block_size) {
  KVSIM_CHECK(block_size > 0, "block size must be positive");
  KVSIM_CHECK(unit_ <= block_size && block_size % unit_ == 0,
              "hash unit " << unit_ << " does not divide the block size " << block_size);
  has_lora_ = !spec.lora.empty();
  has_salt_ = !spec.cache_salt.empty();
  if (has_lora_) lora_key_ = fnv1a64(spec.lora);
  if (has_salt_) salt_key_ = fnv1a64(spec.cache_salt);
  for (const Segment& s : spec.prompt) has_images_ = has_images_ || (s.image && s.tokens > 0);
}

void BlockHasher::clear() {
  hashes_.clear();
  hashes_.shrink_to_fit();
  text_hashes_.clear();
  text_hashes_.shrink_to_fit();
  inner_boundary_.clear();
  inner_boundary_.shrink_to_fit();
  fine_.clear();
  fine_.shrink_to_fit();
  fine_text_.clear();
  fine_text_.shrink_to_fit();
  run_cursor_ = 0;
  block_cursor_ = 0;
}

size_t BlockHasher::locate(const TokenSequence& seq, size_t cursor, int64_t pos) {
  // The cursor moved past the last run when a block ended with it; output tokens appended later may
  // extend that run (then `pos` lies in it, behind the cursor) or start a new one.
  const auto& runs = seq.runs();
  if (cursor < runs.size() && runs[cursor].start <= pos && pos < runs[cursor].start + runs[cursor].length)
    return cursor;
  return seq.run_at(pos);
}

uint64_t BlockHasher::parent(int64_t k) const { return k == 0 ? kNoneHash : hashes_[static_cast<size_t>(k - 1)]; }

BlockHasher::Digest BlockHasher::hash_piece(const TokenSequence& seq, int64_t begin, int64_t size, size_t run,
                                            int64_t end, Digest parent_digest,
                                            std::vector<std::pair<int64_t, uint64_t>>* boundaries) const {
  const auto& runs = seq.runs();
  Mixer tok(kBlockSeed);
  tok.add(parent_digest.main);
  // The text-only chain (image keys dropped) runs on its own parents.
  Mixer tok_text(kBlockSeed);
  if (has_images_) tok_text.add(parent_digest.text);
  auto add_tok = [&](uint64_t v) {
    tok.add(v);
    if (has_images_) tok_text.add(v);
  };
  Mixer mm(kMmKeyTag);
  bool any_image = false;
  // The key of a prefix [begin, pos): tokens so far, image keys so far, LoRA, salt.
  auto finish = [&](const Mixer& t, bool with_images, uint64_t tag) {
    Mixer f = t;
    f.add(tag);
    if (with_images && any_image) f.add(mm.finish());
    if (has_lora_) {
      f.add(kLoraTag);
      f.add(lora_key_);
    }
    if (has_salt_ && begin == 0) {
      f.add(kSaltTag);
      f.add(salt_key_);
    }
    return f.finish();
  };
  int64_t pos = begin;
  while (pos < end) {
    const TokenRun& r = runs[run];
    const int64_t piece_end = std::min(end, r.start + r.length);
    const int64_t len = piece_end - pos;
    if (r.image) {
      add_tok(kImageTag);
      add_tok(static_cast<uint64_t>(len));
      // vLLM: (mm identifier, offset of the item's start - block start) for each item overlapping.
      const int64_t image_start = r.start - r.offset;
      mm.add(r.content_id);
      mm.add(static_cast<uint64_t>(image_start - begin));
      any_image = true;
    } else {
      add_tok(kTextTag);
      add_tok(r.content_id);
      add_tok(static_cast<uint64_t>(r.offset + (pos - r.start)));
      add_tok(static_cast<uint64_t>(len));
    }
    pos = piece_end;
    if (boundaries != nullptr && pos > begin && pos < begin + size && (pos == end || pos == r.start + r.length)) {
      boundaries->emplace_back(pos, finish(tok, true, kBoundaryTag));
    }
    if (pos == r.start + r.length) ++run;
  }
  Digest d;
  d.main = finish(tok, true, 0);
  d.text = has_images_ ? finish(tok_text, false, 0) : d.main;
  return d;
}

void BlockHasher::extend_units(const TokenSequence& seq) {
  const auto& runs = seq.runs();
  if (unit_ == block_size_) {
    const int64_t full = seq.size() / block_size_;
    while (static_cast<int64_t>(hashes_.size()) < full) {
      const int64_t k = static_cast<int64_t>(hashes_.size());
      run_cursor_ = locate(seq, run_cursor_, k * block_size_);
      const Digest p{parent(k), k == 0 ? kNoneHash : (has_images_ ? text_hashes_[static_cast<size_t>(k - 1)] : 0)};
      const Digest d = hash_piece(seq, k * block_size_, block_size_, run_cursor_, (k + 1) * block_size_, p, nullptr);
      hashes_.push_back(d.main);
      if (has_images_) text_hashes_.push_back(d.text);
      // Advance the cursor to the run holding the next block's first token.
      const int64_t next = (k + 1) * block_size_;
      inner_boundary_.push_back(runs[run_cursor_].start + runs[run_cursor_].length < next);
      while (run_cursor_ < runs.size() && runs[run_cursor_].start + runs[run_cursor_].length <= next) ++run_cursor_;
    }
    return;
  }
  // Fine hashes every unit_ tokens, chained; block k's hash is the one at its last fine boundary
  // (vLLM BlockHashListWithBlockSize).
  const int64_t per_block = block_size_ / unit_;
  const int64_t units = seq.size() / unit_;
  while (static_cast<int64_t>(fine_.size()) < units) {
    const int64_t j = static_cast<int64_t>(fine_.size());
    run_cursor_ = locate(seq, run_cursor_, j * unit_);
    const Digest p{j == 0 ? kNoneHash : fine_[static_cast<size_t>(j - 1)],
                   j == 0 ? kNoneHash : (has_images_ ? fine_text_[static_cast<size_t>(j - 1)] : 0)};
    const Digest d = hash_piece(seq, j * unit_, unit_, run_cursor_, (j + 1) * unit_, p, nullptr);
    fine_.push_back(d.main);
    if (has_images_) fine_text_.push_back(d.text);
    const int64_t next = (j + 1) * unit_;
    while (run_cursor_ < runs.size() && runs[run_cursor_].start + runs[run_cursor_].length <= next) ++run_cursor_;
    if ((j + 1) % per_block != 0) continue;
    hashes_.push_back(d.main);
    if (has_images_) text_hashes_.push_back(d.text);
    block_cursor_ = locate(seq, block_cursor_, next - block_size_);
    inner_boundary_.push_back(runs[block_cursor_].start + runs[block_cursor_].length < next);
    while (block_cursor_ < runs.size() && runs[block_cursor_].start + runs[block_cursor_].length <= next)
      ++block_cursor_;
  }
}

void BlockHasher::boundary_keys(const TokenSequence& seq, int64_t k, int64_t end,
                                std::vector<std::pair<int64_t, uint64_t>>& out) const {
  const int64_t begin = k * block_size_;
  end = std::min({end, begin + block_size_, seq.size()});
  if (end <= begin) return;
  KVSIM_CHECK(k <= static_cast<int64_t>(hashes_.size()), "parent of block " << k << " not hashed");
  const Digest p{parent(k), k == 0 ? kNoneHash : (has_images_ ? text_hashes_[static_cast<size_t>(k - 1)] : 0)};
  hash_piece(seq, begin, block_size_, seq.run_at(begin), end, p, &out);
}

}  // namespace kvsim
