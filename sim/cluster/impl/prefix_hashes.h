#pragma once
// The block hashes a router computes for a prompt: chained hashes of its first `max_blocks` blocks of
// `block_size` tokens, from the token identities of the content model (the counterpart of llm-d's and
// SGLang's hashes of the prompt text), with LoRA and salt keys as the engine adds them.
#include <cstdint>
#include <vector>

#include "sim/workload/request.h"

namespace kvsim {

// Full blocks only, or with `partial_tail` also the trailing partial block (llm-d hashes it too).
// `hash_unit` as BlockHasher's (0: whole blocks); an engine's own hashes use its unit.
void router_block_hashes(const RequestSpec& spec, int block_size, int64_t max_blocks, bool partial_tail,
                         std::vector<uint64_t>& out, int hash_unit = 0);

}  // namespace kvsim
