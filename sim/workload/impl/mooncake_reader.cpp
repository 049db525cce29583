// Mooncake FAST'25 traces (kvcache-ai/Mooncake FAST25-release/traces). Block i of a prompt covers
// tokens [bs*i, min(bs*(i+1), input_length)); len(hash_ids) == ceil(input_length / bs). Hash ids
// are prefix-chained upstream: equal id means equal prefix up to and including that block. Each id
// becomes one content of its own (namespace kMooncakeBlock), so token identity = (hash id, offset)
// and an engine can re-block the prompt at any block size.
#include "sim/workload/content_ids.h"
#include "sim/workload/impl/trace_reader.h"
#include "sim/workload/impl/trace_readers.h"

namespace kvsim {
namespace {

class MooncakeReader final : public TraceReader {
 public:
  explicit MooncakeReader(const TraceConfig& config) : TraceReader(config) {}

 protected:
  const char* time_field() const override { return "timestamp"; }

  bool parse_line(std::string_view line, RequestId, TraceRecord& out) override {
    const JsonValue obj = parse_json_line(line);
    const int64_t max_tokens = config().max_tokens;
    const JsonValue& ts = require_field(obj, "timestamp");
    if (ts.is_integer()) {
      // Milliseconds, exact; the bound keeps ms * 1e6 inside int64.
      out.time_ns = integer_field(ts, "timestamp", 0, 9'000'000'000'000LL) * 1'000'000;
    } else if (ts.is_number() && ts.number() >= 0.0 && ts.number() < 9.0e12) {
      out.time_ns = duration_from_seconds(ts.number() * 1e-3).ns();
    } else {
      throw BadLine("timestamp: must be a number of milliseconds >= 0");
    }
    const int64_t input = token_count(require_field(obj, "input_length"), "input_length", max_tokens);
    out.spec.output_tokens = token_count(require_field(obj, "output_length"), "output_length", max_tokens);
    const JsonValue& ids = require_field(obj, "hash_ids");
    if (!ids.is_array()) throw BadLine("hash_ids: must be an array of integers");
    const int64_t bs = config().block_size;
    const int64_t expected = (input + bs - 1) / bs;
    const int64_t n = static_cast<int64_t>(ids.array().size());
    if (n != expected) {
      throw BadLine("hash_ids: " + std::to_string(n) + " ids for input_length " + std::to_string(input) +
                    " at block_size " + std::to_string(bs) + " (expected " + std::to_string(expected) + ")");
    }
    out.spec.prompt.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const std::string field = "hash_ids[" + std::to_string(i) + "]";
      const int64_t h =
          integer_field(ids.array()[static_cast<size_t>(i)], field, 0, static_cast<int64_t>(kContentValueMask));
      Segment s;
      s.content_id = make_content_id(ContentNamespace::kMooncakeBlock, static_cast<uint64_t>(h));
      s.tokens = i + 1 < n ? bs : input - bs * (n - 1);
      out.spec.prompt.push_back(s);
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<IRequestSource> make_mooncake_reader(const TraceConfig& config) {
  return std::make_unique<MooncakeReader>(config);
}

}  // namespace kvsim
