#include "sim/scenario/scenario.h"

#include <yaml-cpp/yaml.h>

#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "sim/cluster/router_registry.h"
#include "sim/core/errors.h"
#include "sim/core/input_file.h"
#include "sim/core/units.h"
#include "sim/model/json.h"
#include "sim/perf/parallel_terms.h"
#include "sim/scenario/yaml_document.h"

namespace kvsim {
namespace {

// Reads typed values from a YAML map and names file + key path in every error.
class Reader {
 public:
  Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& msg) const {
    throw InputError(source_ + ": " + key + ": " + msg);
  }

  void only_keys(const YAML::Node& node, const std::string& where, const std::set<std::string>& allowed) const {
    if (!node.IsMap()) fail(where.empty() ? "(top level)" : where, "must be a mapping");
    std::set<std::string> seen;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) fail(where.empty() ? "(top level)" : where, "keys must be plain names");
      const std::string k = kv.first.Scalar();
      // yaml-cpp keeps both entries of a repeated key and lookups see only one: never pick silently.
      if (!seen.insert(k).second) fail(join(where, key_text(k)), "duplicate key");
      if (!allowed.count(k)) {
        std::string known;
        for (const auto& a : allowed) known += (known.empty() ? "" : ", ") + a;
        fail(join(where, key_text(k)), "unknown key (known: " + known + ")");
      }
    }
  }

  static std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }
  // A key as written, or quoted and cut when it is not a short plain name (a newline, megabytes).
  static std::string key_text(const std::string& k) {
    const bool plain =
        !k.empty() && k.size() <= 100 &&
        k.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == std::string::npos;
    return plain ? k : quote_for_message(k, 100);
  }

  std::string str(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(key, "must be a string");
    return n.Scalar();
  }
  // A whole number in [min, max], or "auto" (returned as 0).
  int64_t integer_or_auto(const YAML::Node& n, const std::string& key, int64_t min, int64_t max) const {
    if (!n.IsScalar() || n.Scalar().empty()) fail(key, "must be an integer or auto");
    return n.Scalar() == "auto" ? 0 : integer(n, key, min, max);
  }
  int64_t integer(const YAML::Node& n, const std::string& key, int64_t min = INT64_MIN, int64_t max = INT64_MAX) const {
    if (!n.IsScalar()) fail(key, "must be an integer");
    int64_t v;
    try {
      size_t used = 0;
      const std::string s = n.Scalar();
      v = std::stoll(s, &used);
      if (used != s.size()) throw std::invalid_argument(s);
    } catch (const std::exception&) {
      fail(key, "must be an integer (got " + quote_for_message(n.Scalar()) + ")");
    }
    if (v < min) fail(key, "must be >= " + std::to_string(min) + " (got " + std::to_string(v) + ")");
    if (v > max) fail(key, "must be <= " + std::to_string(max) + " (got " + std::to_string(v) + ")");
    return v;
  }
  double number(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(key, "must be a number");
    try {
      size_t used = 0;
      const std::string s = n.Scalar();
      if (!decimal_text(s)) throw std::invalid_argument(s);
      double v = std::stod(s, &used);
      if (used != s.size() || !std::isfinite(v)) throw std::invalid_argument(s);
      return v;
    } catch (const std::exception&) {
      fail(key, "must be a finite number (got " + quote_for_message(n.Scalar()) + ")");
    }
  }
  bool boolean(const YAML::Node& n, const std::string& key) const {
    const std::string s = n.IsScalar() ? n.Scalar() : "";
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    fail(key, "must be true or false (got " + quote_for_message(s) + ")");
  }
  // A duration in seconds: a plain number of seconds or a string with a unit ("500ms").
  double seconds(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(key, "must be a duration");
    const std::string s = n.Scalar();
    double v = 0;
    size_t used = 0;
    try {
      // A bare decimal number is seconds; anything else goes to parse_duration (a number with a unit).
      if (decimal_text(s)) v = std::stod(s, &used);
    } catch (const std::invalid_argument&) {
      used = 0;
    } catch (const std::out_of_range&) {
      fail(key, "duration out of range (got " + quote_for_message(s) + ")");
    }
    // With a unit, parse_duration throws an InputError naming the file and key, also when too large.
    if (used != s.size()) v = parse_duration(s, source_ + ": " + key).seconds();
    // The simulated clock counts int64 nanoseconds (about 292 years); keep ample room to add times.
    if (!std::isfinite(v)) fail(key, "must be a finite duration (got " + quote_for_message(s) + ")");
    // (A relative slack: "1e9s" comes back from nanoseconds as 1e9 x (1 + 2e-16).)
    if (std::fabs(v) > kMaxSeconds * (1 + 1e-12)) fail(key, "must be at most 1e9 s (got " + quote_for_message(s) + ")");
    return v;
  }
  static constexpr double kMaxSeconds = 1e9;
  int64_t bytes(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(key, "must be a size such as 4GiB");
    return parse_bytes(n.Scalar(), source_ + ": " + key);
  }

 private:
  std::string source_;
};

// `tokens`: a token count (at least 1; a smaller fixed value was raised to 1 without a word).
DistSpec read_dist(const Reader& r, const YAML::Node& n, const std::string& key, bool is_time, bool tokens = false) {
  const auto check_tokens = [&](const DistSpec& d, const std::string& where) {
    if (tokens && d.kind == "fixed" && d.value < 1)
      r.fail(where, "must be at least 1 token (got " + json_number(d.value) + ")");
    return d;
  };
  if (n.IsScalar()) return check_tokens(DistSpec::fixed(is_time ? r.seconds(n, key) : r.number(n, key)), key);
  r.only_keys(n, key, {"kind", "value", "mean", "stddev", "min", "max"});
  DistSpec d;
  if (n["kind"]) d.kind = r.str(n["kind"], key + ".kind");
  // A parameter the kind does not read would be dropped without a word (min and max clamp every kind).
  const auto unused = [&](const char* p) {
    if (n[p]) r.fail(key + "." + p, "not a parameter of kind " + d.kind);
  };
  if (d.kind == "fixed") {
    unused("mean");
    unused("stddev");
    if (!n["value"]) r.fail(key + ".value", "missing (kind fixed)");
  } else {
    unused("value");
    if (d.kind == "uniform" || d.kind == "exponential") unused("stddev");
    if (d.kind == "uniform") unused("mean");
  }
  auto num = [&](const char* k, double* out) {
    if (n[k]) *out = is_time ? r.seconds(n[k], key + "." + k) : r.number(n[k], key + "." + k);
  };
  num("value", &d.value);
  num("mean", &d.mean);
  num("stddev", &d.stddev);
  num("min", &d.min);
  num("max", &d.max);
  return check_tokens(d, key + ".value");
}

TraceConfig read_trace(const Reader& r, const YAML::Node& n, const std::string& where) {
  r.only_keys(n, where, {"format", "path", "block_size", "limit", "time_scale", "skip_bad_lines", "max_tokens"});
  TraceConfig t;
  if (!n["format"]) r.fail(where + ".format", "missing (mooncake, azure or native)");
  if (!n["path"]) r.fail(where + ".path", "missing");
  t.format = r.str(n["format"], where + ".format");
  t.path = r.str(n["path"], where + ".path");
  if (n["block_size"]) t.block_size = static_cast<int>(r.integer(n["block_size"], where + ".block_size", 1, INT_MAX));
  if (n["limit"]) t.limit = r.integer(n["limit"], where + ".limit", 0);
  if (n["time_scale"]) t.time_scale = r.number(n["time_scale"], where + ".time_scale");
  if (n["skip_bad_lines"]) t.skip_bad_lines = r.boolean(n["skip_bad_lines"], where + ".skip_bad_lines");
  // 2^40 tokens: far beyond any context, and sums of a request's token counts stay far from int64's end.
  if (n["max_tokens"]) t.max_tokens = r.integer(n["max_tokens"], where + ".max_tokens", 1, int64_t{1} << 40);
  return t;
}

SyntheticConfig read_synthetic(const Reader& r, const YAML::Node& n, const std::string& w) {
  r.only_keys(n, w, {"kind",          "rate",          "cv",         "num_requests",       "duration",
                     "input_tokens",  "output_tokens", "groups",     "requests_per_group", "prefix_tokens",
                     "suffix_tokens", "concurrency",   "order",      "turnaround",         "sessions",
                     "turns",         "think_time",    "think_from", "user_tokens",        "system_prompt_tokens"});
  SyntheticConfig s;
  auto k = [&](const char* key) { return w + "." + key; };
  if (n["kind"]) s.kind = r.str(n["kind"], k("kind"));
  if (n["rate"]) s.rate = r.number(n["rate"], k("rate"));
  if (n["cv"]) s.cv = r.number(n["cv"], k("cv"));
  if (n["num_requests"]) s.num_requests = r.integer(n["num_requests"], k("num_requests"), 0);
  if (n["duration"]) s.duration = r.seconds(n["duration"], k("duration"));
  if (n["input_tokens"]) s.input_tokens = read_dist(r, n["input_tokens"], k("input_tokens"), false, true);
  if (n["output_tokens"]) s.output_tokens = read_dist(r, n["output_tokens"], k("output_tokens"), false, true);
  if (n["groups"]) s.groups = r.integer(n["groups"], k("groups"), 1);
  if (n["requests_per_group"]) s.requests_per_group = r.integer(n["requests_per_group"], k("requests_per_group"), 1);
  if (n["prefix_tokens"]) s.prefix_tokens = r.integer(n["prefix_tokens"], k("prefix_tokens"), 0);
  if (n["suffix_tokens"]) s.suffix_tokens = r.integer(n["suffix_tokens"], k("suffix_tokens"), 0);
  if (n["concurrency"]) s.concurrency = static_cast<int>(r.integer(n["concurrency"], k("concurrency"), 0, INT_MAX));
  if (n["order"]) s.order = r.str(n["order"], k("order"));
  if (n["turnaround"]) s.turnaround = read_dist(r, n["turnaround"], k("turnaround"), true);
  if (n["sessions"]) s.sessions = r.integer(n["sessions"], k("sessions"), 0);
  if (n["turns"]) s.turns = r.integer(n["turns"], k("turns"), 1);
  if (n["think_time"]) s.think_time = read_dist(r, n["think_time"], k("think_time"), true);
  if (n["think_from"]) {
    const std::string f = r.str(n["think_from"], k("think_from"));
    if (f != "answer" && f != "arrival")
      r.fail(k("think_from"), "must be answer or arrival (got " + quote_for_message(f) + ")");
    s.think_from_answer = f == "answer";
  }
  if (n["user_tokens"]) s.user_tokens = read_dist(r, n["user_tokens"], k("user_tokens"), false, true);
  if (n["system_prompt_tokens"])
    s.system_prompt_tokens = r.integer(n["system_prompt_tokens"], k("system_prompt_tokens"), 0);
  // The keys each kind's source reads (sim/workload/impl/*_source.cpp); a key of another kind would be read
  // and silently ignored. An unknown kind is refused by validate_workload_config.
  static const std::set<std::string> kCommon = {"kind", "rate", "num_requests", "duration", "output_tokens"};
  static const std::map<std::string, std::set<std::string>> kKindKeys = {
      {"poisson", {"input_tokens"}},
      {"gamma", {"input_tokens", "cv"}},
      {"shared_prefix",
       {"groups", "requests_per_group", "prefix_tokens", "suffix_tokens", "concurrency", "order", "turnaround"}},
      {"multi_turn", {"sessions", "turns", "think_time", "think_from", "user_tokens", "system_prompt_tokens"}}};
  if (const auto own = kKindKeys.find(s.kind); own != kKindKeys.end()) {
    for (const auto& kv : n) {
      const std::string key = kv.first.Scalar();
      if (kCommon.count(key) || own->second.count(key)) continue;
      std::string kinds;
      for (const auto& [kind, keys] : kKindKeys)
        if (keys.count(key)) kinds += (kinds.empty() ? "" : ", ") + kind;
      r.fail(k(key.c_str()), "applies to kind " + kinds + " only, not " + s.kind + " (it would be ignored)");
    }
  }
  return s;
}

const std::set<std::string> kEngineKeys = {"kind",
                                           "version",
                                           "block_size",
                                           "block_size_multiplier",
                                           "max_num_batched_tokens",
                                           "max_num_seqs",
                                           "enable_prefix_caching",
                                           "enable_chunked_prefill",
                                           "gpu_memory_utilization",
                                           "num_gpu_blocks",
                                           "activation_reserve",
                                           "kv_cache_dtype",
                                           "mamba_ssm_cache_dtype",
                                           "weight_dtype",
                                           "max_model_len",
                                           "long_prefill_token_threshold",
                                           "policy",
                                           "watermark",
                                           "scheduler",
                                           "max_prefill_tokens",
                                           "enable_mixed_chunk",
                                           "scheduler_reserve_full_isl",
                                           "tensor_parallel_size",
                                           "data_parallel_size",
                                           "pipeline_parallel_size",
                                           "enable_expert_parallel",
                                           "expert_parallel_size",
                                           "all2all_backend",
                                           "gpus_per_node",
                                           "intra_node_link",
                                           "inter_node_link",
                                           "latency_model",
                                           "moe_routing",
                                           "mla_attention",
                                           "paged_block_cost",
                                           "mamba_cache_mode",
                                           "prefix_cache_retention_interval",
                                           "shared_prefix_checkpoint",
                                           "miss_attribution",
                                           "prefix_match_unit",
                                           "kv_connector_partial_hybrid_hits",
                                           "kv_offload"};

// engine.kv_offload (sim/tier/offload_config.h). The catalog and block-size checks (a tier the catalog
// lacks, a chunk that is not a multiple of the block size) run at resolution (offload_resolution.h).
KvOffloadSettings read_kv_offload(const Reader& r, const YAML::Node& n, const std::string& where) {
  if (!n.IsMap())
    r.fail(where, "must be a mapping {backend, tiers, chunk_tokens, offload_prompt_only, eviction, policy}");
  r.only_keys(n, where, {"backend", "tiers", "chunk_tokens", "offload_prompt_only", "eviction", "policy"});
  const auto k = [&where](const std::string& key) { return where + "." + key; };
  KvOffloadSettings o;
  if (n["backend"]) o.backend = r.str(n["backend"], k("backend"));
  if (o.backend != "native" && o.backend != "lmcache")
    r.fail(k("backend"), "must be native or lmcache (got " + quote_for_message(o.backend) + ")");
  if (!n["tiers"]) r.fail(k("tiers"), "missing (a list of {tier, size})");
  const YAML::Node tiers = n["tiers"];
  if (!tiers.IsSequence() || tiers.size() == 0)
    r.fail(k("tiers"), std::string("must be a non-empty list of {tier, size}") +
                           (tiers.IsScalar() ? " (got a string: in a YAML file write the list itself, unquoted)" : ""));
  for (size_t i = 0; i < tiers.size(); ++i) {
    const std::string w = k("tiers[" + std::to_string(i) + "]");
    const YAML::Node t = tiers[i];
    r.only_keys(t, w, {"tier", "size", "read_threads", "write_threads"});
    if (!t["tier"]) r.fail(w + ".tier", "missing (a tier of the hardware catalog, e.g. host_dram)");
    if (!t["size"]) r.fail(w + ".size", "missing (bytes, e.g. 64GiB)");
    KvOffloadTierSettings ts;
    ts.tier = r.str(t["tier"], w + ".tier");
    ts.size = r.bytes(t["size"], w + ".size");
    if (ts.size <= 0) r.fail(w + ".size", "must be > 0 (got " + quote_for_message(t["size"].Scalar()) + ")");
    // Rule 26: I/O servers of a tier below the host tier (vLLM fs tier n_read_threads / n_write_threads).
    // The host tier has none: its copies are the GPU's one D2H and one H2D queue (rule 19).
    for (const char* key : {"read_threads", "write_threads"})
      if (i == 0 && t[key])
        r.fail(w + "." + key,
               "only tiers below the host tier (tiers[1] on) have I/O threads; the host tier's copies "
               "are the GPU's D2H and H2D queues");
    if (t["read_threads"])
      ts.read_threads = static_cast<int>(r.integer(t["read_threads"], w + ".read_threads", 1, 4096));
    if (t["write_threads"])
      ts.write_threads = static_cast<int>(r.integer(t["write_threads"], w + ".write_threads", 1, 4096));
    o.tiers.push_back(ts);
  }
  if (n["chunk_tokens"]) o.chunk_tokens = r.integer(n["chunk_tokens"], k("chunk_tokens"), 1, INT32_MAX);
  if (n["offload_prompt_only"]) o.offload_prompt_only = r.boolean(n["offload_prompt_only"], k("offload_prompt_only"));
  if (n["eviction"]) o.eviction = r.str(n["eviction"], k("eviction"));
  if (o.eviction != "lru" && o.eviction != "arc")
    r.fail(k("eviction"), "must be lru or arc (got " + quote_for_message(o.eviction) + ")");
  if (n["policy"]) o.policy = r.str(n["policy"], k("policy"));
  if (o.policy != "vllm" && o.policy != "cost")
    r.fail(k("policy"), "must be vllm or cost (got " + quote_for_message(o.policy) + ")");
  return o;
}

// `where` is the key path of the section ("engine", or "cluster.pools[1].engine" for a pool's merged
// section) and prefixes every error.
EngineSettings read_engine(const Reader& r, const YAML::Node& n, const std::string& where) {
  EngineSettings e;
  if (!n) return e;
  r.only_keys(n, where, kEngineKeys);
  const auto k = [&where](const char* key) { return where + "." + key; };
  if (n["kind"]) e.kind = r.str(n["kind"], k("kind"));
  if (n["version"]) e.version = r.str(n["version"], k("version"));
  if (n["block_size"]) {
    e.block_size = static_cast<int>(r.integer_or_auto(n["block_size"], k("block_size"), 1, INT_MAX));
  }
  if (n["block_size_multiplier"])
    e.block_size_multiplier =
        static_cast<int>(r.integer(n["block_size_multiplier"], k("block_size_multiplier"), 1, 1 << 20));
  if (n["max_num_batched_tokens"])
    e.max_num_batched_tokens =
        static_cast<int>(r.integer(n["max_num_batched_tokens"], k("max_num_batched_tokens"), 1, INT_MAX));
  if (n["max_num_seqs"]) e.max_num_seqs = static_cast<int>(r.integer(n["max_num_seqs"], k("max_num_seqs"), 1, INT_MAX));
  if (n["enable_prefix_caching"])
    e.enable_prefix_caching = r.boolean(n["enable_prefix_caching"], k("enable_prefix_caching"));
  if (n["enable_chunked_prefill"])
    e.enable_chunked_prefill = r.boolean(n["enable_chunked_prefill"], k("enable_chunked_prefill"));
  if (n["gpu_memory_utilization"]) {
    const double u = r.number(n["gpu_memory_utilization"], k("gpu_memory_utilization"));
    if (!(u > 0.0 && u <= 1.0))
      r.fail(k("gpu_memory_utilization"), "must be in (0, 1] (got " + n["gpu_memory_utilization"].Scalar() + ")");
    e.gpu_memory_utilization = u;
  }
  if (n["num_gpu_blocks"])
    e.num_gpu_blocks = r.integer(n["num_gpu_blocks"], k("num_gpu_blocks"), 2, INT32_MAX);  // BlockId is int32
  if (n["activation_reserve"]) e.activation_reserve = r.bytes(n["activation_reserve"], k("activation_reserve"));
  if (n["kv_cache_dtype"]) e.kv_cache_dtype = r.str(n["kv_cache_dtype"], k("kv_cache_dtype"));
  if (n["mamba_ssm_cache_dtype"]) e.state_dtype = r.str(n["mamba_ssm_cache_dtype"], k("mamba_ssm_cache_dtype"));
  if (n["weight_dtype"]) e.weight_dtype = r.str(n["weight_dtype"], k("weight_dtype"));
  if (n["max_model_len"])  // 2^40 tokens: far past any model, and the sizing arithmetic stays in int64
    e.max_model_len = r.integer(n["max_model_len"], k("max_model_len"), 1, int64_t{1} << 40);
  if (n["long_prefill_token_threshold"])
    e.long_prefill_token_threshold = r.integer(n["long_prefill_token_threshold"], k("long_prefill_token_threshold"), 0);
  if (n["policy"]) {
    e.policy = r.str(n["policy"], k("policy"));
    if (e.policy != "fcfs" && e.policy != "priority")
      r.fail(k("policy"), "must be fcfs or priority (got " + quote_for_message(e.policy) + ")");
  }
  if (n["watermark"]) {
    e.watermark = r.number(n["watermark"], k("watermark"));
    if (!(e.watermark >= 0.0 && e.watermark < 1.0))
      r.fail(k("watermark"), "must be in [0, 1) (got " + n["watermark"].Scalar() + ")");
  }
  if (n["scheduler"]) {
    e.scheduler = r.str(n["scheduler"], k("scheduler"));
    if (e.scheduler != "auto" && e.scheduler != "vllm" && e.scheduler != "sglang")
      r.fail(k("scheduler"), "must be auto, vllm or sglang (got " + quote_for_message(e.scheduler) + ")");
  }
  if (n["max_prefill_tokens"])
    e.max_prefill_tokens = r.integer(n["max_prefill_tokens"], k("max_prefill_tokens"), 1, INT32_MAX);
  if (n["enable_mixed_chunk"]) e.enable_mixed_chunk = r.boolean(n["enable_mixed_chunk"], k("enable_mixed_chunk"));
  if (n["scheduler_reserve_full_isl"])
    e.scheduler_reserve_full_isl = r.boolean(n["scheduler_reserve_full_isl"], k("scheduler_reserve_full_isl"));
  if (n["tensor_parallel_size"])
    e.tensor_parallel_size =
        static_cast<int>(r.integer(n["tensor_parallel_size"], k("tensor_parallel_size"), 1, INT_MAX));
  if (n["data_parallel_size"])
    e.data_parallel_size = static_cast<int>(r.integer(n["data_parallel_size"], k("data_parallel_size"), 1, 4096));
  if (n["pipeline_parallel_size"])
    e.pipeline_parallel_size =
        static_cast<int>(r.integer(n["pipeline_parallel_size"], k("pipeline_parallel_size"), 1, 1024));
  if (n["enable_expert_parallel"])
    e.enable_expert_parallel = r.boolean(n["enable_expert_parallel"], k("enable_expert_parallel"));
  if (n["expert_parallel_size"])
    e.expert_parallel_size =
        static_cast<int>(r.integer(n["expert_parallel_size"], k("expert_parallel_size"), 1, 1 << 22));
  if (n["all2all_backend"]) {
    e.all2all_backend = r.str(n["all2all_backend"], k("all2all_backend"));
    try {
      is_dispatch_combine_backend(e.all2all_backend, k("all2all_backend"));
    } catch (const InputError& err) {
      r.fail(k("all2all_backend"), std::string(err.what()).substr(k("all2all_backend").size() + 2));
    }
  }
  if (n["gpus_per_node"])
    e.gpus_per_node = static_cast<int>(r.integer(n["gpus_per_node"], k("gpus_per_node"), 1, 1 << 20));
  if (n["intra_node_link"]) e.intra_node_link = r.str(n["intra_node_link"], k("intra_node_link"));
  if (n["inter_node_link"]) e.inter_node_link = r.str(n["inter_node_link"], k("inter_node_link"));
  if (n["latency_model"]) e.latency_model = r.str(n["latency_model"], k("latency_model"));
  if (n["moe_routing"]) e.moe_routing = r.str(n["moe_routing"], k("moe_routing"));
  if (n["mla_attention"]) {
    e.mla_attention = r.str(n["mla_attention"], k("mla_attention"));
    if (e.mla_attention != "auto" && e.mla_attention != "roofline" && e.mla_attention != "module_rows")
      r.fail(k("mla_attention"),
             "unknown value " + quote_for_message(e.mla_attention) + " (known: auto, roofline, module_rows)");
  }
  if (n["paged_block_cost"]) e.paged_block_cost = r.boolean(n["paged_block_cost"], k("paged_block_cost"));
  if (n["mamba_cache_mode"]) {
    e.mamba_cache_mode = r.str(n["mamba_cache_mode"], k("mamba_cache_mode"));
    if (e.mamba_cache_mode != "auto" && e.mamba_cache_mode != "none" && e.mamba_cache_mode != "align" &&
        e.mamba_cache_mode != "all")
      r.fail(k("mamba_cache_mode"),
             "must be auto, none, align or all (got " + quote_for_message(e.mamba_cache_mode) + ")");
  }
  if (n["prefix_cache_retention_interval"]) {
    const YAML::Node v = n["prefix_cache_retention_interval"];
    if (v.IsScalar() && (v.Scalar() == "dense" || v.Scalar() == "null" || v.Scalar() == "~"))
      e.prefix_cache_retention_interval.reset();
    else
      e.prefix_cache_retention_interval = r.integer(v, k("prefix_cache_retention_interval"), 0);
  }
  if (n["shared_prefix_checkpoint"])
    e.shared_prefix_checkpoint = r.boolean(n["shared_prefix_checkpoint"], k("shared_prefix_checkpoint"));
  if (n["miss_attribution"]) e.miss_attribution = r.boolean(n["miss_attribution"], k("miss_attribution"));
  if (n["prefix_match_unit"])
    e.prefix_match_unit = static_cast<int>(r.integer(n["prefix_match_unit"], k("prefix_match_unit"), 0, INT_MAX));
  if (n["kv_connector_partial_hybrid_hits"])
    e.kv_connector_partial_hybrid_hits =
        r.boolean(n["kv_connector_partial_hybrid_hits"], k("kv_connector_partial_hybrid_hits"));
  if (n["kv_offload"]) e.kv_offload = read_kv_offload(r, n["kv_offload"], k("kv_offload"));
  return e;
}

RouterSettings read_router(const Reader& r, const YAML::Node& n) {
  RouterSettings rs;
  if (!n) return rs;
  const std::string w = "cluster.router";
  auto k = [&](const char* key) { return w + "." + key; };
  if (!n.IsMap()) r.fail(w, "must be a mapping");
  if (n["policy"]) rs.policy = r.str(n["policy"], k("policy"));
  const auto& policies = router_policy_options();
  const auto it = policies.find(rs.policy);
  if (it == policies.end())
    r.fail(k("policy"), "unknown router '" + rs.policy + "' (known: " + router_policy_names() + ")");
  std::set<std::string> allowed = it->second;
  allowed.insert({"policy", "report_interval", "routing_latency"});
  for (const auto& kv : n) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (allowed.count(key)) continue;
    for (const auto& [other, keys] : policies)
      if (keys.count(key)) r.fail(k(key.c_str()), "an option of policy " + other + ", not of " + rs.policy);
  }
  r.only_keys(n, w, allowed);
  auto non_negative = [&](const char* key, double* out) {
    if (!n[key]) return;
    *out = r.number(n[key], k(key));
    if (*out < 0) r.fail(k(key), "must be >= 0 (got " + n[key].Scalar() + ")");
  };
  auto duration = [&](const char* key, double* out) {
    if (!n[key]) return;
    *out = r.seconds(n[key], k(key));
    if (*out < 0) r.fail(k(key), "must be >= 0 (got " + n[key].Scalar() + ")");
  };
  duration("report_interval", &rs.report_interval_s);
  // A report is an event while requests are in flight: a sub-millisecond interval would flood the queue
  // (a nanosecond interval over an hour-long trace is 3.6e12 events). Real routers scrape every 50 ms or so.
  if (rs.report_interval_s > 0 && rs.report_interval_s < 1e-3)
    r.fail(k("report_interval"), "must be 0 (live) or at least 1ms (got '" + n["report_interval"].Scalar() + "')");
  duration("routing_latency", &rs.routing_latency_s);
  non_negative("prefix_weight", &rs.prefix_weight);
  non_negative("queue_weight", &rs.queue_weight);
  non_negative("kv_weight", &rs.kv_weight);
  if (n["block_size"]) {
    rs.block_size = static_cast<int>(r.integer_or_auto(n["block_size"], k("block_size"), 1, 1 << 20));
  }
  if (n["max_prefix_blocks"])
    rs.max_prefix_blocks = static_cast<int>(r.integer(n["max_prefix_blocks"], k("max_prefix_blocks"), 1, 1 << 20));
  if (n["lru_capacity"]) {
    rs.lru_capacity = r.integer_or_auto(n["lru_capacity"], k("lru_capacity"), 1, int64_t{1} << 40);
  }
  if (n["precise"]) rs.precise = r.boolean(n["precise"], k("precise"));
  non_negative("overlap_weight", &rs.overlap_weight);
  non_negative("temperature", &rs.temperature);
  if (n["kv_events"]) rs.kv_events = r.boolean(n["kv_events"], k("kv_events"));
  if (n["cache_threshold"]) {
    rs.cache_threshold = r.number(n["cache_threshold"], k("cache_threshold"));
    if (rs.cache_threshold < 0 || rs.cache_threshold > 1)
      r.fail(k("cache_threshold"), "must be in [0, 1] (got " + n["cache_threshold"].Scalar() + ")");
  }
  if (n["balance_abs_threshold"])
    rs.balance_abs_threshold = r.integer(n["balance_abs_threshold"], k("balance_abs_threshold"), 0);
  if (n["balance_rel_threshold"]) {
    rs.balance_rel_threshold = r.number(n["balance_rel_threshold"], k("balance_rel_threshold"));
    if (rs.balance_rel_threshold < 1)
      r.fail(k("balance_rel_threshold"), "must be >= 1 (got " + n["balance_rel_threshold"].Scalar() + ")");
  }
  duration("eviction_interval", &rs.eviction_interval_s);
  if (n["eviction_interval"] && rs.eviction_interval_s <= 0) r.fail(k("eviction_interval"), "must be > 0");
  if (n["max_tree_size"]) rs.max_tree_size = r.integer(n["max_tree_size"], k("max_tree_size"), 1);
  if (n["virtual_nodes"])
    rs.virtual_nodes = static_cast<int>(r.integer(n["virtual_nodes"], k("virtual_nodes"), 1, 100000));
  return rs;
}

// The pools; each pool's engine section is the top-level one with the pool's keys set on top, read
// (and so validated) under the pool's key path.
ClusterSettings read_cluster(const Reader& r, const YAML::Node& root, const Scenario& s) {
  ClusterSettings c;
  const YAML::Node n = root["cluster"];
  if (!n) {
    PoolSettings p;
    p.name = "default";
    p.gpu = s.gpu;
    p.engine = s.engine;
    p.key = "cluster.pools[0]";
    // Attention DP: every DP rank is an engine of its own behind vLLM's DP load balancer.
    p.instances = s.engine.data_parallel_size;
    if (p.instances > 1) c.router.policy = "vllm_dp";
    c.pools.push_back(std::move(p));
    return c;
  }
  c.present = true;
  r.only_keys(n, "cluster", {"pools", "router", "topology", "disaggregation"});
  const YAML::Node pools = n["pools"];
  if (!pools) r.fail("cluster.pools", "missing (a list of {name, role, instances, gpu, engine})");
  if (!pools.IsSequence() || pools.size() == 0) r.fail("cluster.pools", "must be a non-empty list");
  std::set<std::string> names;
  int64_t total = 0;
  for (size_t i = 0; i < pools.size(); ++i) {
    const YAML::Node pn = pools[i];
    PoolSettings p;
    p.key = "cluster.pools[" + std::to_string(i) + "]";
    auto k = [&](const char* key) { return p.key + "." + key; };
    r.only_keys(pn, p.key, {"name", "role", "instances", "gpu", "engine", "placement"});
    p.name = pn["name"] ? r.str(pn["name"], k("name")) : "pool" + std::to_string(i);
    if (p.name.empty()) r.fail(k("name"), "must not be empty");
    if (!names.insert(p.name).second) r.fail(k("name"), "duplicate pool name '" + p.name + "'");
    if (pn["role"]) p.role = r.str(pn["role"], k("role"));
    if (p.role != "colocated" && p.role != "prefill" && p.role != "decode")
      r.fail(k("role"), "must be colocated, prefill or decode (got " + quote_for_message(p.role) + ")");
    if (!pn["instances"]) r.fail(k("instances"), "missing (the number of engine instances, >= 1)");
    p.instances = static_cast<int>(r.integer(pn["instances"], k("instances"), 1, 65536));
    total += p.instances;
    if (total > 65536) r.fail(k("instances"), "more than 65536 instances in the cluster");
    p.gpu = pn["gpu"] ? r.str(pn["gpu"], k("gpu")) : s.gpu;
    YAML::Node merged = root["engine"] ? YAML::Clone(root["engine"]) : YAML::Node(YAML::NodeType::Map);
    if (const YAML::Node e = pn["engine"]) {
      r.only_keys(e, k("engine"), kEngineKeys);
      for (const auto& kv : e) merged[kv.first.Scalar()] = kv.second;
    }
    p.engine = read_engine(r, merged, k("engine"));
    // Each instance is a DP group: data_parallel_size engines (DP ranks), each routed to on its own.
    if (p.engine.data_parallel_size > 1) {
      total += int64_t{p.instances} * (p.engine.data_parallel_size - 1);
      if (total > 65536) r.fail(k("instances"), "more than 65536 instances (x data_parallel_size) in the cluster");
      p.instances *= p.engine.data_parallel_size;
    }
    if (const YAML::Node pl = pn["placement"]) {
      if (!pl.IsSequence()) r.fail(k("placement"), "must be a list of topology GPU names (node0/gpu0, ...)");
      for (size_t j = 0; j < pl.size(); ++j)
        p.placement.push_back(r.str(pl[j], k("placement") + "[" + std::to_string(j) + "]"));
      const int64_t want = int64_t{p.instances} * p.engine.tensor_parallel_size;
      if (std::ssize(p.placement) != want)
        r.fail(k("placement"), "lists " + std::to_string(p.placement.size()) + " GPUs; " + std::to_string(p.instances) +
                                   " instances x TP " + std::to_string(p.engine.tensor_parallel_size) + " need " +
                                   std::to_string(want));
    }
    c.pools.push_back(std::move(p));
  }
  c.router = read_router(r, n["router"]);
  if (c.router.policy == "session_affinity") {
    // The ring holds virtual_nodes points per instance (16 bytes each): each bound alone allows 6.5e9.
    int64_t instances = 0;
    for (const PoolSettings& p : c.pools) instances += p.instances;
    constexpr int64_t kMaxRingPoints = int64_t{1} << 24;
    if (instances * c.router.virtual_nodes > kMaxRingPoints)
      r.fail("cluster.router.virtual_nodes", std::to_string(c.router.virtual_nodes) + " points x " +
                                                 std::to_string(instances) + " instances exceed the ring's bound of " +
                                                 std::to_string(kMaxRingPoints) + " points");
  }
  int prefill = 0, decode = 0, colocated = 0;
  for (const PoolSettings& p : c.pools) {
    prefill += p.role == "prefill";
    decode += p.role == "decode";
    colocated += p.role == "colocated";
  }
  c.disaggregated = prefill + decode > 0;
  if (c.disaggregated) {
    for (size_t i = 0; i < c.pools.size(); ++i) {
      const std::string key = "cluster.pools[" + std::to_string(i) + "].role";
      if (c.pools[i].role == "colocated")
        r.fail(key, "a cluster with prefill and decode pools cannot also have colocated pools");
    }
    if (prefill == 0) r.fail("cluster.pools", "decode pools need a prefill pool (role: prefill)");
    if (decode == 0) r.fail("cluster.pools", "prefill pools need a decode pool (role: decode)");
    if (!n["topology"])
      r.fail("cluster.topology",
             "missing: prefill and decode pools need a topology for their KV transfers (a file in models/topologies/)");
  }
  if (const YAML::Node t = n["topology"]) {
    c.topology = r.str(t, "cluster.topology");
    if (c.topology.empty()) r.fail("cluster.topology", "must not be empty");
  } else {
    for (size_t i = 0; i < c.pools.size(); ++i)
      if (!c.pools[i].placement.empty())
        r.fail("cluster.pools[" + std::to_string(i) + "].placement", "needs cluster.topology");
  }
  if (const YAML::Node d = n["disaggregation"]) {
    const std::string w = "cluster.disaggregation";
    auto k = [&](const char* key) { return w + "." + key; };
    if (!c.disaggregated) r.fail(w, "only for a cluster with prefill and decode pools");
    r.only_keys(d, w,
                {"decider", "threshold", "max_local_prefill", "max_prefill_queue", "hybrid_hetero_tp", "per_flow_cap",
                 "per_descriptor", "utilisation_interval", "layerwise"});
    DisaggSettings& ds = c.disaggregation;
    if (d["decider"]) {
      ds.decider = r.str(d["decider"], k("decider"));
      if (ds.decider != "llm_d" && ds.decider != "dynamo" && ds.decider != "always" && ds.decider != "never")
        r.fail(k("decider"),
               "unknown decider " + quote_for_message(ds.decider) + " (known: always, dynamo, llm_d, never)");
    }
    // A decider's options under another decider would be read and never used.
    for (const auto& [key, owner] :
         {std::pair{"threshold", "llm_d"}, {"max_local_prefill", "dynamo"}, {"max_prefill_queue", "dynamo"}})
      if (d[key] && ds.decider != owner)
        r.fail(k(key), std::string("an option of decider ") + owner + ", not of " + ds.decider);
    if (d["threshold"]) ds.threshold = r.integer(d["threshold"], k("threshold"), 0, int64_t{1} << 40);
    if (d["max_local_prefill"])
      ds.max_local_prefill = r.integer(d["max_local_prefill"], k("max_local_prefill"), 0, int64_t{1} << 40);
    if (d["max_prefill_queue"])
      ds.max_prefill_queue = static_cast<int>(r.integer(d["max_prefill_queue"], k("max_prefill_queue"), 1, 1 << 30));
    if (d["hybrid_hetero_tp"]) ds.hybrid_hetero_tp = r.boolean(d["hybrid_hetero_tp"], k("hybrid_hetero_tp"));
    if (d["layerwise"]) ds.layerwise = r.boolean(d["layerwise"], k("layerwise"));
    if (d["per_flow_cap"]) {
      const std::string v = r.str(d["per_flow_cap"], k("per_flow_cap"));
      ds.per_flow_cap = v == "none" ? 0 : parse_bandwidth(v, s.path + ": " + k("per_flow_cap"));
    }
    auto duration = [&](const char* key, double* out) {
      *out = r.seconds(d[key], k(key));
      if (*out < 0) r.fail(k(key), "must be >= 0 (got " + quote_for_message(d[key].Scalar()) + ")");
    };
    if (d["per_descriptor"]) duration("per_descriptor", &ds.per_descriptor_s);
    if (d["per_descriptor"] && ds.per_descriptor_s > 1e-3)
      r.fail(k("per_descriptor"), "must be at most 1ms (measured: ~3us, vLLM #34054)");
    if (d["utilisation_interval"]) {
      duration("utilisation_interval", &ds.utilisation_interval_s);
      if (ds.utilisation_interval_s > 0 && ds.utilisation_interval_s < 1e-3)
        r.fail(k("utilisation_interval"), "must be 0 (no samples) or at least 1ms");
    }
  }
  return c;
}

void apply_override(YAML::Node root, const std::string& source, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw InputError("--set: expected key.path=value (got '" + assignment + "')");
  const std::string path = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '.');) {
    if (p.empty()) throw InputError("--set: empty key in '" + path + "'");
    parts.push_back(p);
  }
  YAML::Node v;
  try {
    v = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw InputError("--set " + path + ": cannot parse value '" + value + "'");
  }
  // Walk with fresh node handles (yaml-cpp nodes alias, so assignment to a handle would rebind it).
  // A list element is named by its index: cluster.pools.1.instances=4.
  const auto element = [&](const YAML::Node& list, const std::string& part) {
    if (part.empty() || part.size() > 6 || part.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(part) >= list.size())
      throw InputError("--set " + path + ": '" + part + "' is not an index of the list (0.." +
                       std::to_string(list.size() == 0 ? 0 : list.size() - 1) + ") in " + source);
    return list[std::stoul(part)];
  };
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = chain.back().IsSequence() ? element(chain.back(), parts[i]) : chain.back()[parts[i]];
    if (next && !next.IsMap() && !next.IsSequence())
      throw InputError("--set " + path + ": '" + parts[i] + "' is not a mapping in " + source);
    chain.push_back(next);
  }
  if (chain.back().IsSequence()) {
    element(chain.back(), parts.back());  // validates the index
    chain.back()[std::stoul(parts.back())] = v;
  } else {
    chain.back()[parts.back()] = v;
  }
}

// The input path rule of load_scenario (scenario.h).
std::string resolve_input_path(const std::string& path, const std::string& source) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (path.empty() || p.is_absolute() || !fs::is_regular_file(source, ec)) return path;
  fs::path dir = fs::absolute(fs::path(source), ec).parent_path();
  if (ec) return path;
  while (true) {
    const fs::path candidate = dir / p;
    if (fs::exists(candidate, ec)) return candidate.lexically_normal().string();
    if (!dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return path;  // the current directory's (or missing: the reader names it)
}

}  // namespace

Scenario parse_scenario(const std::string& text, const std::string& source, const std::vector<std::string>& overrides) {
  YAML::Node root = load_yaml_document(text, source);
  if (!root || root.IsNull()) throw InputError(source + ": empty scenario");
  Reader r(source);
  if (!root.IsMap()) r.fail("(top level)", "must be a mapping");
  for (const auto& o : overrides) apply_override(root, source, o);
  r.only_keys(root, "", {"name", "model", "gpu", "seed", "hardware_dir", "engine", "cluster", "workload", "output"});

  Scenario s;
  s.path = source;
  if (root["name"]) s.name = r.str(root["name"], "name");
  if (!root["model"]) r.fail("model", "missing (path to a config.json, e.g. models/qwen3-8b.json)");
  s.model = r.str(root["model"], "model");
  if (!root["gpu"]) r.fail("gpu", "missing (a GPU from models/hardware/, e.g. h100-sxm)");
  s.gpu = r.str(root["gpu"], "gpu");
  if (root["seed"]) s.seed = static_cast<uint64_t>(r.integer(root["seed"], "seed", 0));
  if (root["hardware_dir"]) s.hardware_dir = r.str(root["hardware_dir"], "hardware_dir");
  s.engine = read_engine(r, root["engine"], "engine");
  s.cluster = read_cluster(r, root, s);

  const YAML::Node w = root["workload"];
  if (!w) r.fail("workload", "missing (trace or synthetic)");
  r.only_keys(w, "workload", {"trace", "synthetic"});
  if (w["trace"] && w["synthetic"]) r.fail("workload", "give either trace or synthetic, not both");
  if (w["trace"])
    s.workload.trace = read_trace(r, w["trace"], "workload.trace");
  else if (w["synthetic"])
    s.workload.synthetic = read_synthetic(r, w["synthetic"], "workload.synthetic");
  else
    r.fail("workload", "needs trace or synthetic");
  try {
    validate_workload_config(s.workload);
  } catch (const InputError& e) {
    throw InputError(source + ": " + e.what());
  }

  if (const YAML::Node o = root["output"]) {
    r.only_keys(o, "output", {"hdf5", "summary_json", "steps", "timeseries_interval", "compression"});
    if (o["hdf5"]) s.output.hdf5 = r.str(o["hdf5"], "output.hdf5");
    if (o["summary_json"]) s.output.summary_json = r.str(o["summary_json"], "output.summary_json");
    if (o["steps"]) {
      const std::string v = r.str(o["steps"], "output.steps");
      if (v == "all") {
        s.output.steps.mode = StepsOutput::Mode::kAll;
      } else if (v == "none") {
        s.output.steps.mode = StepsOutput::Mode::kNone;
      } else if (v.rfind("every ", 0) == 0) {
        s.output.steps.mode = StepsOutput::Mode::kEvery;
        s.output.steps.every = r.integer(YAML::Node(v.substr(6)), "output.steps (every N)", 1);
      } else {
        r.fail("output.steps", "must be all, none or 'every N' (got '" + v + "')");
      }
    }
    if (o["timeseries_interval"]) {
      s.output.timeseries_interval_s = r.seconds(o["timeseries_interval"], "output.timeseries_interval");
      if (s.output.timeseries_interval_s < 0) r.fail("output.timeseries_interval", "must be >= 0");
    }
    if (o["compression"])
      s.output.compression = static_cast<int>(r.integer(o["compression"], "output.compression", 0, 9));
  }
  s.model = resolve_input_path(s.model, source);
  s.hardware_dir = resolve_input_path(s.hardware_dir, source);
  if (s.workload.trace) s.workload.trace->path = resolve_input_path(s.workload.trace->path, source);
  // A topology given as a file (a path, or a name ending in .yaml) resolves like the other inputs.
  if (s.cluster.topology.find('/') != std::string::npos || s.cluster.topology.ends_with(".yaml"))
    s.cluster.topology = resolve_input_path(s.cluster.topology, source);
  YAML::Emitter em;
  em << root;
  s.resolved_yaml = em.c_str();
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_scenario(read_input_file(path, "scenario file"), path, overrides);
}

}  // namespace kvsim
