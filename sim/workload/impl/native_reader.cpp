// kvsim native trace (traces/README.md, "Native JSONL"). Strict: unknown keys are errors, so a
// misspelt field never silently falls back to its default.
#include <climits>

#include "sim/workload/content_ids.h"
#include "sim/workload/impl/trace_reader.h"
#include "sim/workload/impl/trace_readers.h"

namespace kvsim {
namespace {

constexpr const char* kRequestKeys = "arrival_s, prompt, output_tokens, output_id, session, priority, lora, cache_salt";

class NativeReader final : public TraceReader {
 public:
  explicit NativeReader(const TraceConfig& config) : TraceReader(config) {}

 protected:
  const char* time_field() const override { return "arrival_s"; }

  bool parse_line(std::string_view line, RequestId id, TraceRecord& out) override {
    const JsonValue obj = parse_json_line(line);
    for (const auto& [key, value] : obj.object()) {
      static constexpr std::string_view kKnown[] = {"arrival_s", "prompt",   "output_tokens", "output_id",
                                                    "session",   "priority", "lora",          "cache_salt"};
      bool known = false;
      for (std::string_view k : kKnown) known = known || key == k;
      if (!known) throw BadLine("unknown key '" + key + "' (valid: " + kRequestKeys + ")");
    }
    const JsonValue& arrival = require_field(obj, "arrival_s");
    if (!arrival.is_number() || !(arrival.number() >= 0.0) || !(arrival.number() < 9.0e9)) {
      throw BadLine("arrival_s: must be a number of seconds >= 0");
    }
    out.time_ns = duration_from_seconds(arrival.number()).ns();
    const int64_t max_tokens = config().max_tokens;
    out.spec.output_tokens = token_count(require_field(obj, "output_tokens"), "output_tokens", max_tokens);
    if (const JsonValue* v = obj.find("output_id")) {
      const std::string& name = string_field(*v, "output_id");
      if (name.empty()) throw BadLine("output_id: must not be empty");
      out.spec.output_content_id = named_content_id(ContentNamespace::kNamed, name);
      out.has_output_id = true;
    }
    if (const JsonValue* v = obj.find("session")) out.spec.session = string_field(*v, "session");
    if (const JsonValue* v = obj.find("priority")) {
      out.spec.priority = static_cast<int>(integer_field(*v, "priority", INT_MIN, INT_MAX));
    }
    if (const JsonValue* v = obj.find("lora")) out.spec.lora = string_field(*v, "lora");
    if (const JsonValue* v = obj.find("cache_salt")) out.spec.cache_salt = string_field(*v, "cache_salt");
    parse_prompt(require_field(obj, "prompt"), id, out.spec.prompt);
    return true;
  }

 private:
  void parse_prompt(const JsonValue& prompt, RequestId id, std::vector<Segment>& segments) const {
    if (!prompt.is_array() || prompt.array().empty()) throw BadLine("prompt: must be a non-empty array of segments");
    const int64_t max_tokens = config().max_tokens;
    int64_t anonymous_tokens = 0;  // anonymous segments continue one content private to the request
    for (size_t i = 0; i < prompt.array().size(); ++i) {
      const JsonValue& seg = prompt.array()[i];
      const std::string where = "prompt[" + std::to_string(i) + "]";
      if (!seg.is_object()) throw BadLine(where + ": must be an object");
      for (const auto& [key, value] : seg.object()) {
        if (key != "id" && key != "image" && key != "tokens" && key != "offset") {
          throw BadLine(where + ": unknown key '" + key + "' (valid: id, image, tokens, offset)");
        }
      }
      const JsonValue* text_id = seg.find("id");
      const JsonValue* image_id = seg.find("image");
      if (text_id && image_id) throw BadLine(where + ": has both 'id' and 'image'");
      Segment s;
      s.tokens = token_count(require_field_in(seg, "tokens", where), where + ".tokens", max_tokens);
      if (const JsonValue* off = seg.find("offset")) {
        if (!text_id) throw BadLine(where + ".offset: only a named text segment ('id') may have an offset");
        s.offset = integer_field(*off, where + ".offset", 0, max_tokens, "max_tokens");
      }
      if (text_id || image_id) {
        const std::string field = where + (text_id ? ".id" : ".image");
        const std::string& name = string_field(text_id ? *text_id : *image_id, field);
        if (name.empty()) throw BadLine(field + ": must not be empty");
        s.content_id = named_content_id(text_id ? ContentNamespace::kNamed : ContentNamespace::kImage, name);
        s.image = image_id != nullptr;
      } else {
        s.content_id = make_content_id(ContentNamespace::kUnique, static_cast<uint64_t>(id.value()));
        s.offset = anonymous_tokens;
        // Part of the prompt, so bounded by max_tokens as the whole is (trace_reader.cpp); checked before
        // the add, which could otherwise pass int64's end.
        if (s.tokens > max_tokens - anonymous_tokens)
          throw BadLine("prompt of more than max_tokens " + std::to_string(max_tokens) + " tokens");
        anonymous_tokens += s.tokens;
      }
      segments.push_back(s);
    }
  }

  static const JsonValue& require_field_in(const JsonValue& obj, std::string_view field, const std::string& where) {
    const JsonValue* v = obj.find(field);
    if (v == nullptr) throw BadLine(where + ": missing field '" + std::string(field) + "'");
    return *v;
  }
};

}  // namespace

std::unique_ptr<IRequestSource> make_native_reader(const TraceConfig& config) {
  return std::make_unique<NativeReader>(config);
}

}  // namespace kvsim
