#pragma once
// resolve_kv_offload: engine.kv_offload settings for one resolved engine -> KvOffloadConfig.
// Errors are InputErrors "<file>: <engine_key>.kv_offload.<key>: ..." (a tier the catalog lacks, a
// chunk that is not a multiple of the block size, a model or option not modelled yet).
#include <optional>
#include <string>

#include "sim/model/hardware.h"
#include "sim/model/kv_layout.h"
#include "sim/tier/offload_config.h"

namespace kvsim {

// A tier's kind: its catalog name up to the first '-' ("host-dram" -> host, "nvme-gen4" -> nvme,
// "remote-rdma" -> remote).
std::string tier_kind(const std::string& catalog_name);

// `bytes_per_block` is one GPU's bytes of one block over every KV cache group of the whole model
// (KvCacheLayout); `tp` the tensor-parallel size (the tier stores one copy per rank, cpu/spec.py
// num_copies); `pp` the pipeline stages, each rank holding and copying its stage's layers only (the
// stages taken as even: bytes per rank = ceil(bytes / pp)).
KvOffloadConfig resolve_kv_offload(const std::optional<KvOffloadSettings>& s, const KvCacheLayout& layout, int tp,
                                   int pp, bool enable_prefix_caching, const HardwareCatalog& hw,
                                   const std::string& file, const std::string& engine_key);

}  // namespace kvsim
