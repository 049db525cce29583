#pragma once
// TraceReader: the streaming part shared by every trace format. It reads one line at a time (memory
// does not grow with the trace; a line is at most kMaxTraceLineBytes), numbers lines from 1, skips blank lines, turns a
// parser's BadLine into "<path>:<line>: <what>" (an InputError, or a count with skip_bad_lines), rejects timestamps
// that go backwards, applies time_scale and limit, and assigns request ids 0, 1, 2, ... in file order.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "sim/core/errors.h"
#include "sim/core/input_file.h"
#include "sim/model/json.h"
#include "sim/workload/request.h"
#include "sim/workload/workload_config.h"

namespace kvsim {

// A line that cannot become a request. The message names the field; the reader adds path and line.
class BadLine : public std::runtime_error {
 public:
  explicit BadLine(const std::string& message) : std::runtime_error(without_nul(message)) {}
};

struct TraceRecord {
  int64_t time_ns = 0;         // trace time of the arrival, ns from the format's own origin
  RequestSpec spec;            // prompt, output, session...; the reader sets id, arrival and prompt_tokens
  bool has_output_id = false;  // spec.output_content_id was set by the parser (else unique per request)
};

class TraceReader : public IRequestSource {
 public:
  std::optional<RequestSpec> next() final;
  int64_t skipped_lines() const final { return skipped_; }

 protected:
  explicit TraceReader(const TraceConfig& config);
  // Parses one non-blank line into `out`. Returns false for a line that holds no request (a CSV
  // header). Throws BadLine for a malformed line. `id` is the id the request will get.
  virtual bool parse_line(std::string_view line, RequestId id, TraceRecord& out) = 0;
  // True when arrival 0 is the first request's time (wall-clock formats); else trace time 0.
  virtual bool origin_is_first_record() const { return false; }
  // Name of the timestamp field, for error messages.
  virtual const char* time_field() const = 0;

  const TraceConfig& config() const { return config_; }
  int64_t line_number() const { return in_.line_number(); }

 private:
  Duration scaled(int64_t delta_ns) const;

  TraceConfig config_;
  LineReader in_;
  int64_t emitted_ = 0;
  int64_t skipped_ = 0;
  std::optional<int64_t> origin_ns_;
  std::optional<int64_t> last_time_ns_;
  int64_t last_time_line_ = 0;
};

// Helpers for parsers; each throws BadLine naming `field`.
// A JSON line that is an object, with JSON syntax errors reported as "column N: invalid JSON: ...".
JsonValue parse_json_line(std::string_view line);
const JsonValue& require_field(const JsonValue& obj, std::string_view field);
// An integral number (1200 or 1200.0) in [lo, hi]; `hi_name` explains the upper bound in errors.
int64_t integer_field(const JsonValue& v, const std::string& field, int64_t lo, int64_t hi,
                      const char* hi_name = nullptr);
const std::string& string_field(const JsonValue& v, const std::string& field);
// A token count in [1, max_tokens].
int64_t token_count(const JsonValue& v, const std::string& field, int64_t max_tokens);
// An integer written in decimal ("374", surrounding spaces allowed) in [lo, hi].
int64_t parse_decimal(std::string_view text, const std::string& field, int64_t lo, int64_t hi,
                      const char* hi_name = nullptr);
// "12.000000500 s": exact seconds for messages.
std::string format_seconds(int64_t ns);

}  // namespace kvsim
