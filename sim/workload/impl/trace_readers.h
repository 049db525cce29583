#pragma once
// The trace formats (traces/README.md documents each). Every reader streams its file line by line.
#include <memory>

#include "sim/workload/request.h"
#include "sim/workload/workload_config.h"

namespace kvsim {

// Mooncake FAST'25 JSONL: {"timestamp": ms, "input_length", "output_length", "hash_ids": [...]}.
std::unique_ptr<IRequestSource> make_mooncake_reader(const TraceConfig& config);
// Azure LLM inference CSV: TIMESTAMP (wall clock), ContextTokens, GeneratedTokens.
std::unique_ptr<IRequestSource> make_azure_reader(const TraceConfig& config);
// kvsim native JSONL: named content segments, images, sessions, priorities.
std::unique_ptr<IRequestSource> make_native_reader(const TraceConfig& config);

// "YYYY-MM-DD HH:MM:SS[.fffffffff]" ('T' for the space and a trailing "Z" or "+00:00" allowed), as
// ns since 1970-01-01 00:00:00 in the same (unstated) time zone. Exact: digits are read as integers.
// Throws BadLine naming `field`.
int64_t parse_wall_clock_ns(std::string_view text, const std::string& field);

}  // namespace kvsim
