// The measurement protocol of `kvsim validate`: the generator's flags and KV dtype of a row by its date,
// the protocol values' parsers and the points file's '# protocol:' line (validate_command.h).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "sim/app/validate_command.h"
#include "sim/core/errors.h"
#include "sim/core/input_file.h"

namespace kvsim {

DeploymentFlags generator_deployment(const ValidationPoint& p) {
  DeploymentFlags f;
  if (p.measured.empty() || p.disagg || p.parallel.dp > 1 || p.parallel.pp > 1) return f;
  const std::string& date = p.measured;  // YYYY-MM-DD: dates compare as strings
  const int64_t batch = p.concurrency;   // max_batch_size = concurrency (one aggregated worker)
  if (p.engine == "trtllm") {
    // agg max_num_tokens = bs + isl + 1500 since aiconfigurator's first release (2025-08-11,
    // cli/backends/trtllm.py), rounded up to tokens_per_block = 32 since 2026-01-29 (#307,
    // rule_plugin/trtllm.rule); enable_chunked_prefill is the template's default(false)
    // (backend_templates/trtllm/extra_engine_args.*.yaml.j2).
    if (date < "2025-08-11") return f;
    int64_t tokens = batch + p.isl + 1500;
    if (date >= "2026-01-29") tokens = (tokens + 31) / 32 * 32;
    f.max_num_batched_tokens = tokens;
    f.enable_chunked_prefill = false;
  } else if (p.engine == "vllm") {
    // agg max_num_tokens = max_batch_size + isl + 1500 (rule_plugin/vllm.rule since 2025-12-04, #144),
    // passed as --max-num-batched-tokens only since 2026-01-08 (#238: "include --max-model-len and
    // --max-num-batched-tokens in vllm run.sh"); chunked prefill stays vLLM's (on).
    // The same change passes --max-model-len = isl + osl + 1500 (rule_plugin/vllm.rule `agg max_seq_len`,
    // aiconfigurator 2cecd6596): a model whose default context does not fit the KV cache still starts.
    if (date >= "2026-01-08") {
      f.max_num_batched_tokens = batch + p.isl + 1500;
      f.max_model_len = p.isl + p.osl + 1500;
    }
  } else if (p.engine == "sglang") {
    // agg_prefill_decode max_prefill_tokens = isl + 1500 (rule_plugin/sglang.rule since 2025-12-04, #144);
    // agg enable_mixed_chunk = true since 2026-01-19 (#257, with the flag's name fixed in #258).
    if (date >= "2025-12-04") f.max_prefill_tokens = p.isl + 1500;
    if (date >= "2026-01-19") f.enable_mixed_chunk = true;
  }
  return f;
}

std::string point_kv_dtype(const ValidationPoint& p, ValidationProtocol::KvRule rule) {
  using Rule = ValidationProtocol::KvRule;
  if (p.kv_dtype != "auto" || rule == Rule::kColumn) return p.kv_dtype;
  const std::string& w = p.dtype;
  // FP8 or NVFP4 weights: the formats whose checkpoints aiconfigurator maps to an FP8 cache (fp8,
  // fp8_block, nvfp4; helpers.py since #338). The generic "fp4" names MXFP4 on an MXFP4 checkpoint
  // (weight_override), NVFP4 otherwise; "auto" is the checkpoint's own format.
  const bool fp8_or_nvfp4 = w == "fp8" || w == "fp8_block" || w == "nvfp4" ||
                            (w == "fp4" && p.checkpoint_quant != "mxfp4") ||
                            (w == "auto" && p.checkpoint_quant == "fp8");
  if (!p.gpu_fp8) return "auto";  // float16 below SM 89 (Task._get_quant_mode): the model dtype
  if (rule == Rule::kWeights) return fp8_or_nvfp4 ? "fp8" : "auto";
  const std::string& date = p.measured;                    // YYYY-MM-DD: dates compare as strings
  if (date.empty() || date < "2025-12-04") return "auto";  // the generator passed no KV dtype (before #144)
  if (date < "2026-02-11") return "fp8";                   // Task._get_quant_mode: fp8 for SM >= 89
  return fp8_or_nvfp4 ? "fp8" : "auto";                    // inferred from the checkpoint (#338)
}

// "engine-defaults" | "aiconfigurator" (ValidationProtocol::Deployment); an error naming `where` otherwise.
ValidationProtocol::Deployment parse_deployment(const std::string& value, const std::string& where) {
  if (value == "engine-defaults") return ValidationProtocol::Deployment::kEngineDefaults;
  if (value == "aiconfigurator") return ValidationProtocol::Deployment::kAiconfigurator;
  throw InputError(where + ": unknown value '" + value + "' (known: engine-defaults, aiconfigurator)");
}

// "column" | "aiconfigurator" | "weights" (ValidationProtocol::KvRule); an error naming `where` otherwise.
ValidationProtocol::KvRule parse_kv_rule(const std::string& value, const std::string& where) {
  if (value == "column") return ValidationProtocol::KvRule::kColumn;
  if (value == "aiconfigurator") return ValidationProtocol::KvRule::kAiconfigurator;
  if (value == "weights") return ValidationProtocol::KvRule::kWeights;
  throw InputError(where + ": unknown value '" + value + "' (known: column, aiconfigurator, weights)");
}

std::string format_client_ttft_ms(double ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", ms);
  return b;
}

double parse_client_ttft_ms(const std::string& value, const std::string& where) {
  const bool plain = !value.empty() && value.find_first_not_of("0123456789.") == std::string::npos &&
                     std::count(value.begin(), value.end(), '.') <= 1 && value.front() != '.' && value.back() != '.' &&
                     value.size() <= 12;
  const double ms = plain ? std::stod(value) : -1;
  if (!plain || ms > kMaxClientTtftMs)
    throw InputError(where + ": '" + value + "' must be a plain decimal number of milliseconds in [0, " +
                     format_client_ttft_ms(kMaxClientTtftMs) + "] (at most 12 characters)");
  return ms;
}

// A points file states how its points were measured in a comment line before the header:
//   # protocol: warmup_per_slot=0 requests_per_slot=10 [client=NAME] [deployment=engine-defaults|aiconfigurator]
//               [kv_dtype=column|aiconfigurator|weights] [client_ttft_ms=X]
//               [(free text to the end of the line)]
// (models/latency/README.md, "Closed-loop measurement protocol"). Values given on the command line win.
// Returns the client named, or "" when the file has no protocol line.
std::string read_protocol_directive(const std::string& path, ValidationProtocol& protocol, bool warmup_given,
                                    bool requests_given, bool deployment_given, bool kv_given, bool client_ttft_given) {
  LineReader reader(path, "points file");
  std::string_view line;
  std::string client;
  bool found = false, header_seen = false;
  // "#protocol:", "# protocol :" and the like are the directive too (a typo must not be a comment); so
  // are "# Protocol:" or "# protocols:", refused below: a word the reader would skip must not pass as a
  // comment while the run falls back to the default protocol.
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  std::string word_seen;
  const auto is_directive = [&](std::string_view l) {
    size_t k = 1;
    while (k < l.size() && is_space(l[k])) ++k;
    size_t end = k;
    while (end < l.size() && std::isalpha(static_cast<unsigned char>(l[end]))) ++end;
    word_seen.assign(l.substr(k, end - k));
    std::string lower = word_seen;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!lower.starts_with("protocol")) return std::string_view::npos;
    k = end;
    while (k < l.size() && is_space(l[k])) ++k;
    return k < l.size() && l[k] == ':' ? k + 1 : std::string_view::npos;
  };
  while (reader.next(line)) {
    if (reader.line_number() == 1 && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);  // UTF-8 BOM
    // The CSV reader skips a comment after leading blanks too.
    while (!line.empty() && is_space(line.front())) line.remove_prefix(1);
    if (line.empty() || line.front() != '#') {
      header_seen = header_seen || !line.empty();
      continue;
    }
    const size_t body = is_directive(line);
    if (body == std::string_view::npos) continue;
    const std::string where = path + ":" + std::to_string(reader.line_number());
    if (word_seen != "protocol")
      throw InputError(where + ": '" + word_seen + ":' is read as the protocol directive; write it '# protocol:'");
    if (header_seen) throw InputError(where + ": the '# protocol:' line must come before the CSV header");
    if (found) throw InputError(where + ": a second '# protocol:' line");
    found = true;
    std::istringstream words{std::string(line.substr(body))};
    std::string word;
    std::vector<std::string> keys;
    while (words >> word) {
      if (word.front() == '(') break;  // a remark ends the items
      const size_t eq = word.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == word.size())
        throw InputError(where + ": protocol item '" + word + "' is not key=value");
      const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
      if (std::find(keys.begin(), keys.end(), key) != keys.end())
        throw InputError(where + ": protocol key '" + key + "' given twice");
      keys.push_back(key);
      if (key == "client") {
        client = value;
        continue;
      }
      if (key == "deployment") {
        const auto d = parse_deployment(value, where + ": protocol deployment");
        if (!deployment_given) protocol.deployment = d;
        continue;
      }
      if (key == "kv_dtype") {
        const auto k = parse_kv_rule(value, where + ": protocol kv_dtype");
        if (!kv_given) protocol.kv_rule = k;
        continue;
      }
      if (key == "client_ttft_ms") {
        const double ms = parse_client_ttft_ms(value, where + ": protocol client_ttft_ms");
        if (!client_ttft_given) protocol.client_ttft_ms = ms;
        continue;
      }
      if (key != "warmup_per_slot" && key != "requests_per_slot")
        throw InputError(where + ": unknown protocol key '" + key +
                         "' (known: warmup_per_slot, requests_per_slot, client, deployment, kv_dtype, client_ttft_ms)");
      const int lo = key == "warmup_per_slot" ? 0 : 1;
      const bool digits = value.find_first_not_of("0123456789") == std::string::npos && value.size() <= 6;
      const int v = digits ? std::stoi(value) : -1;
      if (!digits || v < lo || v > kMaxPerSlot)
        throw InputError(where + ": protocol " + key + " '" + value + "' must be an integer in [" + std::to_string(lo) +
                         ", " + std::to_string(kMaxPerSlot) + "]");
      if (key == "warmup_per_slot" && !warmup_given) protocol.warmup_per_slot = v;
      if (key == "requests_per_slot" && !requests_given) protocol.requests_per_slot = v;
    }
    if (std::find(keys.begin(), keys.end(), "warmup_per_slot") == keys.end() ||
        std::find(keys.begin(), keys.end(), "requests_per_slot") == keys.end())
      throw InputError(where + ": a '# protocol:' line needs warmup_per_slot=N and requests_per_slot=M");
  }
  if (found && client.empty()) client = "unnamed client";
  return client;
}

}  // namespace kvsim
