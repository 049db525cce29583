#pragma once
// RequestSpec and the content model. A prompt is a sequence of content segments (content id,
// tokens); token i's identity is its segment and its offset inside it. Engine block hashes are
// computed from identities at the engine's own block size, so a trace recorded with 512-token hash
// ids replays correctly at block size 16, 528 or 2048. Images are segments of their own whose id
// enters the block key, so the same text with another image never shares a cache.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/strong_int.h"
#include "sim/core/time.h"

namespace kvsim {

struct Segment {
  uint64_t content_id = 0;  // identity of the content; equal ids mean equal tokens at equal offsets
  int64_t tokens = 0;
  bool image = false;  // an image placeholder run: enters vLLM's extra keys (mm identifier)
  int64_t offset = 0;  // first token of this run inside its content (lets a segment continue
                       // content that began in an earlier segment, e.g. a truncated block)
};

struct RequestSpec {
  RequestId id;
  SimTime arrival;
  std::vector<Segment> prompt;
  int64_t prompt_tokens = 0;  // sum of segment tokens
  int64_t output_tokens = 1;
  uint64_t output_content_id = 0;  // identity of the generated tokens (decode blocks are hashed too)
  std::string session;             // conversation id, "" if none
  int priority = 0;                // lower runs first under the priority policy (vLLM)
  std::string lora;                // LoRA adapter name, enters every block key
  std::string cache_salt;          // enters the first block key only
  // Closed loop only: the client's delay between the slot freeing and this request's arrival
  // (workload.synthetic.turnaround); 0 = at once.
  Duration turnaround = Duration::ns(0);
};

// A stream of requests in arrival order. Implementations read lazily: a trace of millions of
// requests is never held in memory at once.
class IRequestSource {
 public:
  virtual ~IRequestSource() = default;
  // The next request, or nullopt at the end. Arrival times never decrease.
  virtual std::optional<RequestSpec> next() = 0;
  // Lines skipped because they were malformed (with --skip-bad-lines); 0 for generators.
  virtual int64_t skipped_lines() const { return 0; }
  // > 0 for a closed loop: at most this many requests in flight, the next one arriving when one
  // finishes (its arrival time is then set by the driver, `turnaround` after the slot is free; the
  // source's own arrival is ignored).
  virtual int closed_loop_concurrency() const { return 0; }
  // A request the source sends because request `id` ended at `at` (`finished`: it produced its answer,
  // else it was rejected): a conversation's next turn. Its arrival, set by the source, is >= at; it
  // arrives then, outside next()'s order. Default: none.
  virtual std::optional<RequestSpec> follow_up(RequestId /*id*/, SimTime /*at*/, bool /*finished*/) {
    return std::nullopt;
  }
};

}  // namespace kvsim
