#include "sim/metrics/text_streams.h"

#include <cinttypes>
#include <filesystem>

#include "sim/metrics/hdf5_writer.h"

namespace kvsim {
namespace {

// Seconds with 9 decimals (exact nanoseconds), or "" for a time never reached.
std::string seconds(SimTime t, bool reached) {
  if (!reached) return "";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9f", t.seconds());
  return buf;
}

std::string micros(SimTime t) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, t.ns() / 1000, t.ns() % 1000);
  return buf;
}

}  // namespace

TextFileStream::TextFileStream(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
  make_parent_directories(path_);
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (f_ == nullptr) throw OutputError(path_ + ": cannot write");
}

TextFileStream::~TextFileStream() {
  if (committed_) return;
  if (f_ != nullptr) std::fclose(f_);
  std::error_code ec;
  std::filesystem::remove(tmp_, ec);
}

void TextFileStream::put(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), f_) != text.size()) throw OutputError(path_ + ": write failed");
}

void TextFileStream::commit() {
  put(closing());
  const bool ok = std::fclose(f_) == 0;
  f_ = nullptr;
  std::error_code ec;
  if (!ok) throw OutputError(path_ + ": write failed");
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) throw OutputError(path_ + ": cannot write: " + ec.message());
  committed_ = true;
}

CsvRequestStream::CsvRequestStream(const std::string& path) : TextFileStream(path) {
  put("id,arrival_s,first_scheduled_s,first_token_s,finish_s,prompt_tokens,output_tokens,requested_output_tokens,"
      "matched_tokens,cached_tokens,lost_tokens,miss_cause,preemptions,finished,instance,pool\n");
}

void CsvRequestStream::write_requests(const std::vector<RequestRow>& rows, const std::vector<int64_t>&,
                                      const std::vector<int64_t>&) {
  std::string out;
  for (const RequestRow& r : rows) {
    out += std::to_string(r.id) + "," + seconds(r.arrival, true) + "," +
           seconds(r.first_scheduled.value_or(SimTime::zero()), r.first_scheduled.has_value()) + "," +
           seconds(r.first_token, r.output_tokens > 0) + "," + seconds(r.finish, r.finished) + "," +
           std::to_string(r.prompt_tokens) + "," + std::to_string(r.output_tokens) + "," +
           std::to_string(r.requested_output_tokens) + "," + std::to_string(r.matched_tokens) + "," +
           std::to_string(r.cached_tokens) + "," + std::to_string(r.lost_tokens) + "," + miss_cause_name(r.cause) +
           "," + std::to_string(r.preemptions) + "," + (r.finished ? "1" : "0") + "," + std::to_string(r.instance) +
           "," + std::to_string(r.pool) + "\n";
  }
  put(out);
}

TraceEventStream::TraceEventStream(const std::string& path) : TextFileStream(path) {
  put("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
}

void TraceEventStream::event(const std::string& json) {
  put((first_ ? "" : ",\n") + json);
  first_ = false;
}

void TraceEventStream::write_steps(const std::vector<StepRecord>& steps) {
  for (const StepRecord& s : steps) {
    event("{\"name\": \"step\", \"ph\": \"X\", \"pid\": " + std::to_string(s.instance) +
          ", \"tid\": 0, \"ts\": " + micros(s.start) + ", \"dur\": " + micros(SimTime::zero() + (s.end - s.start)) +
          ", \"args\": {\"prefill_tokens\": " + std::to_string(s.num_prefill_tokens) +
          ", \"decode_tokens\": " + std::to_string(s.num_decode_tokens) +
          ", \"running\": " + std::to_string(s.running) + ", \"waiting\": " + std::to_string(s.waiting) +
          ", \"kv_blocks_used\": " + std::to_string(s.kv_blocks_used) + "}}");
  }
}

void TraceEventStream::write_requests(const std::vector<RequestRow>& rows, const std::vector<int64_t>&,
                                      const std::vector<int64_t>&) {
  for (const RequestRow& r : rows) {
    const std::string common = "\"cat\": \"request\", \"id\": " + std::to_string(r.id) +
                               ", \"pid\": " + std::to_string(r.instance) + ", \"tid\": 1";
    const std::string name = "\"name\": \"request " + std::to_string(r.id) + "\"";
    event("{" + name + ", \"ph\": \"b\", " + common + ", \"ts\": " + micros(r.arrival) + ", \"args\": {\"prompt\": " +
          std::to_string(r.prompt_tokens) + ", \"cached\": " + std::to_string(r.cached_tokens) + "}}");
    if (r.output_tokens > 0 && r.first_token >= r.arrival)
      event("{" + name + ", \"ph\": \"n\", " + common + ", \"ts\": " + micros(r.first_token) + "}");
    event("{" + name + ", \"ph\": \"e\", " + common + ", \"ts\": " + micros(std::max(r.finish, r.arrival)) +
          ", \"args\": {\"output\": " + std::to_string(r.output_tokens) +
          ", \"finished\": " + (r.finished ? "true" : "false") + "}}");
  }
}

}  // namespace kvsim
