#include "sim/cluster/impl/prefix_hashes.h"

#include <algorithm>

#include "sim/core/random.h"
#include "sim/engine/block_hasher.h"
#include "sim/engine/hash_mix.h"

namespace kvsim {

void router_block_hashes(const RequestSpec& spec, int block_size, int64_t max_blocks, bool partial_tail,
                         std::vector<uint64_t>& out, int hash_unit) {
  out.clear();
  const int64_t limit = std::min<int64_t>(spec.prompt_tokens > 0 ? spec.prompt_tokens : INT64_MAX,
                                          max_blocks * static_cast<int64_t>(block_size));
  // Only the first `limit` tokens matter: hash a truncated copy of the prompt.
  TokenSequence seq;
  for (const Segment& s : spec.prompt) {
    if (seq.size() >= limit) break;
    const int64_t take = std::min(s.tokens, limit - seq.size());
    if (take > 0) seq.append(s.content_id, s.offset, take, s.image);  // empty segments carry no tokens
  }
  BlockHasher hasher(block_size, spec, hash_unit);
  hasher.extend(seq);
  out = hasher.hashes();
  const int64_t full = static_cast<int64_t>(out.size()) * block_size;
  if (!partial_tail || full >= seq.size() || static_cast<int64_t>(out.size()) >= max_blocks) return;
  // The trailing partial block: its runs' identities chained on the last full block's hash. With no full
  // block the chain starts from the request's extra keys (LoRA, cache salt), as the full blocks' do: a
  // short prompt under another salt or adapter is another prefix.
  Mixer m(out.empty() ? 0x6C6C6D2D64ULL : out.back());
  if (out.empty()) {
    if (!spec.lora.empty()) m.add(fnv1a64(spec.lora));
    if (!spec.cache_salt.empty()) m.add(fnv1a64(spec.cache_salt) ^ 0x73616C74ULL);
  }
  for (size_t r = seq.run_at(full); r < seq.runs().size(); ++r) {
    const TokenRun& run = seq.runs()[r];
    const int64_t skip = std::max<int64_t>(full - run.start, 0);
    m.add(run.content_id);
    m.add(static_cast<uint64_t>(run.offset + skip));
    m.add(static_cast<uint64_t>(run.length - skip));
    m.add(run.image ? 1 : 0);
  }
  m.add(static_cast<uint64_t>(seq.size() - full));
  out.push_back(m.finish());
}

}  // namespace kvsim
