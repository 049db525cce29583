#include "sim/metrics/summary.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "sim/core/units.h"
#include "sim/model/json.h"

namespace kvsim {

const char* miss_cause_name(MissCause c) {
  switch (c) {
    case MissCause::kNone:
      return "none";
    case MissCause::kNeverSeen:
      return "never_seen";
    case MissCause::kEvicted:
      return "evicted";
    case MissCause::kPartialBlock:
      return "partial_block";
    case MissCause::kDifferentImage:
      return "different_image";
    case MissCause::kNoSavedState:
      return "no_saved_state";
    case MissCause::kStateEvicted:
      return "state_evicted";
    case MissCause::kEvictedAllTiers:
      return "evicted_all_tiers";
  }
  return "unknown";
}

bool is_what_if(MissCause c) { return c == MissCause::kDifferentImage; }

const char* reject_reason_name(RejectReason r) {
  switch (r) {
    case RejectReason::kNone:
      return "none";
    case RejectReason::kEmptyPrompt:
      return "empty_prompt";
    case RejectReason::kPromptTooLong:
      return "prompt_too_long";
    case RejectReason::kOverBudget:
      return "over_token_budget";
    case RejectReason::kDoesNotFit:
      return "does_not_fit";
    case RejectReason::kNoProgress:
      return "no_progress";
    case RejectReason::kHitDoesNotFit:
      return "hit_does_not_fit";
  }
  return "unknown";
}

const char* reject_reason_text(RejectReason r) {
  switch (r) {
    case RejectReason::kNone:
      return "not rejected";
    case RejectReason::kEmptyPrompt:
      return "empty prompt";
    case RejectReason::kPromptTooLong:
      return "prompt of max_model_len tokens or more";
    case RejectReason::kOverBudget:
      return "chunked prefill off and the prompt exceeds max_num_batched_tokens";
    case RejectReason::kDoesNotFit:
      return "its blocks do not fit even in the empty KV cache";
    case RejectReason::kNoProgress:
      return "alone in the KV cache it preempts itself and can never finish (KV cache too small for it)";
    case RejectReason::kHitDoesNotFit:
      return "its partial prefix-cache hit needs copy-on-write blocks beyond the empty KV cache (vLLM would wait "
             "forever; raise num_gpu_blocks or the prefix_match_unit)";
  }
  return "unknown";
}

std::string fingerprint_hex(uint64_t fingerprint) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, fingerprint);
  return buf;
}

namespace {

// Writes a JSON object with one member per line; nested objects are indented by two spaces.
class JsonObjectWriter {
 public:
  explicit JsonObjectWriter(int indent) : indent_(indent) {}
  void number(const std::string& key, double v) { add(key, json_number(v)); }
  void integer(const std::string& key, int64_t v) { add(key, std::to_string(v)); }
  void integer(const std::string& key, uint64_t v) { add(key, std::to_string(v)); }
  void string(const std::string& key, const std::string& v) { add(key, json_quote(v)); }
  void raw(const std::string& key, const std::string& json) { add(key, json); }
  std::string finish() const {
    if (members_.empty()) return "{}";
    std::string pad(static_cast<size_t>(indent_ + 2), ' ');
    std::string out = "{\n";
    for (size_t i = 0; i < members_.size(); ++i) {
      out += pad + members_[i];
      out += i + 1 < members_.size() ? ",\n" : "\n";
    }
    out += std::string(static_cast<size_t>(indent_), ' ') + "}";
    return out;
  }
  int child_indent() const { return indent_ + 2; }

 private:
  void add(const std::string& key, const std::string& value) { members_.push_back(json_quote(key) + ": " + value); }
  int indent_;
  std::vector<std::string> members_;
};

std::string distribution_json(const Distribution& d, int indent) {
  JsonObjectWriter w(indent);
  w.integer("count", d.count);
  w.number("mean", d.mean);
  w.number("p50", d.p50);
  w.number("p90", d.p90);
  w.number("p95", d.p95);
  w.number("p99", d.p99);
  w.number("p99_9", d.p999);
  w.number("stddev", d.stddev);
  return w.finish();
}

// A latency distribution in ms as a vLLM histogram's figures in seconds (sum = count x mean).
std::string seconds_json(const Distribution& d, int indent) {
  JsonObjectWriter w(indent);
  w.integer("count", d.count);
  w.number("sum", d.count > 0 ? d.mean * static_cast<double>(d.count) * 1e-3 : 0.0);
  w.number("mean", d.mean * 1e-3);
  w.number("p50", d.p50 * 1e-3);
  w.number("p90", d.p90 * 1e-3);
  w.number("p95", d.p95 * 1e-3);
  w.number("p99", d.p99 * 1e-3);
  return w.finish();
}

// vLLM's Prometheus names (vllm/v1/metrics/loggers.py, PrometheusStatLogger.__init__).
std::string vllm_names_json(const RunSummary& s, int indent) {
  JsonObjectWriter w(indent);
  const int in = w.child_indent();
  w.raw("vllm:time_to_first_token_seconds", seconds_json(s.ttft_ms, in));
  w.raw("vllm:inter_token_latency_seconds", seconds_json(s.itl_ms, in));
  w.raw("vllm:request_time_per_output_token_seconds", seconds_json(s.tpot_ms, in));
  w.raw("vllm:e2e_request_latency_seconds", seconds_json(s.e2e_ms, in));
  w.raw("vllm:request_queue_time_seconds", seconds_json(s.queue_ms, in));
  w.integer("vllm:prefix_cache_queries", s.prefix_cache.queries);
  w.integer("vllm:prefix_cache_hits", s.prefix_cache.hits);
  w.integer("vllm:num_preemptions", s.preemptions);
  w.integer("vllm:prompt_tokens", s.prompt_tokens_prefilled);
  w.integer("vllm:generation_tokens", s.generated_tokens);
  w.integer("vllm:request_success", s.requests.finished);
  return w.finish();
}

std::string pool_json(const PoolSummary& p, int indent) {
  JsonObjectWriter w(indent);
  const int in = w.child_indent();
  w.string("name", p.info.name);
  w.string("role", p.info.role);
  w.string("gpu", p.info.gpu);
  w.integer("tensor_parallel_size", static_cast<int64_t>(p.info.tensor_parallel_size));
  w.integer("instances", static_cast<int64_t>(p.info.instances));
  w.integer("requests", p.requests);
  w.integer("finished", p.finished);
  w.integer("prompt_tokens", p.prompt_tokens);
  w.integer("hit_tokens", p.hit_tokens);
  w.number("token_hit_rate", p.token_hit_rate);
  w.raw("ttft_ms", distribution_json(p.ttft_ms, in));
  w.raw("tpot_ms", distribution_json(p.tpot_ms, in));
  w.raw("e2e_ms", distribution_json(p.e2e_ms, in));
  w.number("peak_kv_usage", p.peak_kv_usage);
  w.integer("preemptions", p.preemptions);
  JsonObjectWriter imb(in);
  imb.number("requests", p.requests_imbalance);
  imb.number("busy", p.busy_imbalance);
  w.raw("imbalance", imb.finish());
  // One line per instance: a pool of 64 stays readable.
  std::string list = "[";
  for (size_t k = 0; k < p.per_instance.size(); ++k) {
    const InstanceSummary& s = p.per_instance[k];
    list += std::string(k == 0 ? "\n" : ",\n") + std::string(static_cast<size_t>(in + 2), ' ') +
            "{\"instance\": " + std::to_string(s.instance) + ", \"requests\": " + std::to_string(s.requests) +
            ", \"busy_s\": " + json_number(s.busy_s) + ", \"token_hit_rate\": " + json_number(s.token_hit_rate) +
            ", \"peak_kv_usage\": " + json_number(s.peak_kv_usage) +
            ", \"preemptions\": " + std::to_string(s.preemptions) + "}";
  }
  list += "\n" + std::string(static_cast<size_t>(in), ' ') + "]";
  w.raw("per_instance", list);
  return w.finish();
}

std::string cluster_json(const RunSummary& s, int indent) {
  JsonObjectWriter w(indent);
  const int in = w.child_indent();
  w.string("router", s.router);
  int64_t instances = 0;
  for (const PoolSummary& p : s.pools) instances += p.info.instances;
  w.integer("instances", instances);
  std::string list = "[";
  for (size_t k = 0; k < s.pools.size(); ++k)
    list += std::string(k == 0 ? "\n" : ",\n") + std::string(static_cast<size_t>(in + 2), ' ') +
            pool_json(s.pools[k], in + 2);
  list += "\n" + std::string(static_cast<size_t>(in), ' ') + "]";
  w.raw("pools", list);
  return w.finish();
}

// The five busiest links as a JSON list.
std::string links_json(const std::vector<LinkTotal>& links, int in) {
  std::string list = "[";
  const size_t n = std::min<size_t>(links.size(), 5);
  for (size_t k = 0; k < n; ++k) {
    const LinkTotal& l = links[k];
    list += std::string(k == 0 ? "\n" : ",\n") + std::string(static_cast<size_t>(in + 2), ' ') +
            "{\"name\": " + json_quote(l.name) + ", \"type\": " + json_quote(l.type) +
            ", \"bytes\": " + json_number(l.bytes) + ", \"mean_utilisation\": " + json_number(l.mean_utilisation) +
            ", \"peak_utilisation\": " + json_number(l.peak_utilisation) + "}";
  }
  list += n == 0 ? "]" : "\n" + std::string(static_cast<size_t>(in), ' ') + "]";
  return list;
}

std::string disaggregation_json(const RunSummary::Disaggregation& d, int indent) {
  JsonObjectWriter w(indent);
  const int in = w.child_indent();
  w.integer("requests", d.requests);
  w.integer("flows", d.flows);
  w.number("bytes", d.bytes);
  w.raw("transfer_ms", distribution_json(d.transfer_ms, in));
  JsonObjectWriter parts(in);
  const int pin = parts.child_indent();
  parts.raw("router", distribution_json(d.router_ms, pin));
  parts.raw("prefill_queue", distribution_json(d.prefill_queue_ms, pin));
  parts.raw("prefill", distribution_json(d.prefill_ms, pin));
  parts.raw("decode_queue", distribution_json(d.decode_queue_ms, pin));
  parts.raw("transfer", distribution_json(d.pull_ms, pin));
  parts.raw("first_decode_step", distribution_json(d.first_decode_step_ms, pin));
  w.raw("ttft_breakdown_ms", parts.finish());
  w.raw("busiest_links", links_json(d.links, in));
  return w.finish();
}

std::string kv_offload_json(const RunSummary::KvOffload& o, int indent) {
  JsonObjectWriter w(indent);
  w.string("tier", o.tier);
  w.integer("size_bytes", o.size_bytes);
  w.string("policy", o.policy);
  w.integer("hit_tokens", o.hit_tokens);
  w.integer("hit_blocks", o.hit_blocks);
  w.integer("hit_requests", o.hit_requests);
  w.number("token_hit_rate", o.token_hit_rate);
  w.number("combined_token_hit_rate", o.combined_token_hit_rate);
  w.integer("loads", o.loads);
  w.integer("loaded_bytes", o.loaded_bytes);
  w.integer("stored_bytes", o.stored_bytes);
  w.integer("stores_skipped_chunks", o.stores_skipped_chunks);
  w.raw("load_ms", distribution_json(o.load_ms, w.child_indent()));
  w.string("backend", o.backend);
  w.integer("store_wait_steps", o.store_wait_steps);
  w.number("store_wait_ms", o.store_wait_ms);
  const int in = w.child_indent();
  std::string list = "[";
  for (size_t i = 0; i < o.tiers.size(); ++i) {
    const KvOffloadTier& t = o.tiers[i];
    JsonObjectWriter tw(in + 2);
    tw.string("name", t.name);
    tw.integer("size_bytes", t.size_bytes);
    tw.integer("hit_tokens", t.hit_tokens);
    tw.integer("hit_blocks", t.hit_blocks);
    tw.integer("stored_bytes", t.stored_bytes);
    tw.integer("loaded_bytes", t.loaded_bytes);
    tw.integer("stores_skipped_chunks", t.stores_skipped_chunks);
    tw.integer("peak_used_bytes", t.peak_used_bytes);
    list += std::string(i == 0 ? "\n" : ",\n") + std::string(static_cast<size_t>(in + 2), ' ') + tw.finish();
  }
  list += o.tiers.empty() ? "]" : "\n" + std::string(static_cast<size_t>(in), ' ') + "]";
  w.raw("tiers", list);
  if (!o.links.empty()) w.raw("busiest_links", links_json(o.links, in));
  return w.finish();
}

std::string fmt(double v, int decimals) {
  if (std::isnan(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// The three busiest links as terminal lines.
void link_lines(std::ostream& os, const std::vector<LinkTotal>& links, bool peaks) {
  for (size_t k = 0; k < std::min<size_t>(links.size(), 3); ++k) {
    os << "  link " << links[k].name << " (" << links[k].type << "): " << fmt(links[k].bytes / 1e9, 3) << " GB, mean "
       << fmt(100.0 * links[k].mean_utilisation, 2) << "%";
    if (peaks) os << ", peak " << fmt(100.0 * links[k].peak_utilisation, 1) << "%";
    os << "\n";
  }
}

}  // namespace

std::string summary_to_json(const RunSummary& s, const SummaryJsonOptions& options) {
  JsonObjectWriter root(0);
  const int in = root.child_indent();
  {
    JsonObjectWriter w(in);
    w.integer("count", s.requests.count);
    w.integer("finished", s.requests.finished);
    w.integer("unfinished", s.requests.unfinished);
    if (s.requests.in_flight > 0) w.integer("in_flight", s.requests.in_flight);
    if (s.requests.skipped_trace_lines > 0) w.integer("skipped_trace_lines", s.requests.skipped_trace_lines);
    // Only when some request was rejected, so that runs without rejections keep their bytes.
    JsonObjectWriter rej(w.child_indent());
    bool any = false;
    for (int r = 1; r < kNumRejectReasons; ++r) {
      const int64_t n = s.requests.rejected[static_cast<size_t>(r)];
      if (n > 0) rej.integer(reject_reason_name(static_cast<RejectReason>(r)), n);
      any |= n > 0;
    }
    if (any) w.raw("rejected", rej.finish());
    root.raw("requests", w.finish());
  }
  root.raw("ttft_ms", distribution_json(s.ttft_ms, in));
  root.raw("tpot_ms", distribution_json(s.tpot_ms, in));
  root.raw("itl_ms", distribution_json(s.itl_ms, in));
  root.raw("e2e_ms", distribution_json(s.e2e_ms, in));
  root.raw("queue_ms", distribution_json(s.queue_ms, in));
  {
    JsonObjectWriter w(in);
    w.number("duration_s", s.throughput.duration_s);
    w.number("requests_per_s", s.throughput.requests_per_s);
    w.number("output_tokens_per_s", s.throughput.output_tokens_per_s);
    root.raw("throughput", w.finish());
  }
  {
    const auto& p = s.prefix_cache;
    JsonObjectWriter w(in);
    w.integer("prompt_tokens", p.prompt_tokens);
    w.integer("hit_tokens", p.hit_tokens);
    w.number("token_hit_rate", p.token_hit_rate);
    w.integer("queries", p.queries);
    w.integer("hits", p.hits);
    w.number("hit_rate", p.hit_rate);
    w.integer("preempted_queries", p.preempted_queries);
    w.integer("preempted_hits", p.preempted_hits);
    w.number("preempted_hit_rate", p.preempted_hit_rate);
    w.integer("queries_blocks", p.queries_blocks);
    w.integer("hits_blocks", p.hits_blocks);
    w.number("block_hit_rate", p.block_hit_rate);
    w.integer("hit_requests", p.hit_requests);
    JsonObjectWriter lost(w.child_indent());
    for (int c = 0; c < kNumMissCauses; ++c) {
      if (is_what_if(static_cast<MissCause>(c))) continue;
      lost.integer(miss_cause_name(static_cast<MissCause>(c)), p.lost_tokens_by_cause[static_cast<size_t>(c)]);
    }
    w.raw("lost_tokens_by_cause", lost.finish());
    // Not a cache loss: what would have hit under another request's image (see MissCause).
    JsonObjectWriter what_if(w.child_indent());
    what_if.integer(miss_cause_name(MissCause::kDifferentImage),
                    p.lost_tokens_by_cause[static_cast<size_t>(MissCause::kDifferentImage)]);
    w.raw("what_if_lost_tokens", what_if.finish());
    root.raw("prefix_cache", w.finish());
  }
  {
    JsonObjectWriter w(in);
    w.integer("peak", s.concurrency.peak);
    w.number("mean", s.concurrency.mean);
    root.raw("concurrency", w.finish());
  }
  root.integer("preemptions", s.preemptions);
  {
    JsonObjectWriter w(in);
    w.integer("total", s.kv_blocks.total);
    w.integer("peak_used", s.kv_blocks.peak_used);
    root.raw("kv_blocks", w.finish());
  }
  if (!s.pools.empty()) root.raw("cluster", cluster_json(s, in));
  if (s.disaggregation.present) root.raw("disaggregation", disaggregation_json(s.disaggregation, in));
  if (s.kv_offload.present) root.raw("kv_offload", kv_offload_json(s.kv_offload, in));
  {
    JsonObjectWriter w(in);
    w.integer("events", s.sim.events);
    if (options.include_wall_time) w.number("wall_s", s.sim.wall_s);
    w.string("fingerprint", fingerprint_hex(s.sim.fingerprint));
    root.raw("sim", w.finish());
  }
  root.raw("vllm_names", vllm_names_json(s, in));
  return root.finish() + "\n";
}

std::string summary_to_text(const RunSummary& s) {
  std::ostringstream os;
  os << "requests     " << s.requests.count << " (" << s.requests.finished << " finished, " << s.requests.unfinished
     << " unfinished";
  if (s.requests.in_flight > 0) os << ", " << s.requests.in_flight << " of them in flight when interrupted";
  os << ")\n";
  if (s.requests.skipped_trace_lines > 0)
    os << "skipped      " << s.requests.skipped_trace_lines << " malformed trace lines (not requests)\n";
  for (int r = 1; r < kNumRejectReasons; ++r) {
    const int64_t n = s.requests.rejected[static_cast<size_t>(r)];
    if (n > 0)
      os << "rejected     " << n << " " << reject_reason_name(static_cast<RejectReason>(r)) << ": "
         << reject_reason_text(static_cast<RejectReason>(r)) << "\n";
  }
  os << "latency ms        mean       p50       p90       p99\n";
  auto row = [&](const char* name, const Distribution& d) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-8s %9s %9s %9s %9s\n", name, fmt(d.mean, 2).c_str(), fmt(d.p50, 2).c_str(),
                  fmt(d.p90, 2).c_str(), fmt(d.p99, 2).c_str());
    os << buf;
  };
  row("ttft", s.ttft_ms);
  row("tpot", s.tpot_ms);
  row("itl", s.itl_ms);
  row("e2e", s.e2e_ms);
  row("queue", s.queue_ms);
  os << "throughput   " << fmt(s.throughput.requests_per_s, 3) << " req/s, " << fmt(s.throughput.output_tokens_per_s, 1)
     << " output tok/s over " << fmt(s.throughput.duration_s, 3) << " s\n";
  const auto& pc = s.prefix_cache;
  os << "prefix cache " << fmt(100.0 * pc.token_hit_rate, 2) << "% tokens (" << pc.hit_tokens << "/" << pc.prompt_tokens
     << "), vLLM hit rate " << fmt(100.0 * pc.hit_rate, 2) << "% (" << pc.hits << "/" << pc.queries
     << " queried tokens), " << fmt(100.0 * pc.block_hit_rate, 2) << "% blocks, " << pc.hit_requests
     << " requests hit\n";
  if (pc.preempted_queries > 0)
    os << "preempted    re-admissions hit " << pc.preempted_hits << "/" << pc.preempted_queries
       << " tokens (own recompute; vLLM preempted_hits / preempted_queries, not in the rates above)\n";
  std::string lost;
  for (int c = 0; c < kNumMissCauses; ++c) {
    const int64_t n = s.prefix_cache.lost_tokens_by_cause[static_cast<size_t>(c)];
    if (n > 0 && !is_what_if(static_cast<MissCause>(c)))
      lost += (lost.empty() ? "" : ", ") + std::string(miss_cause_name(static_cast<MissCause>(c))) + " " +
              std::to_string(n);
  }
  if (!lost.empty()) os << "lost reuse   " << lost << " tokens\n";
  const int64_t what_if = s.prefix_cache.lost_tokens_by_cause[static_cast<size_t>(MissCause::kDifferentImage)];
  if (what_if > 0)
    os << "what-if      different_image " << what_if
       << " tokens: the same text was seen under another image (a hit only if the image were the same; not a "
          "cache loss)\n";
  os << "concurrency  peak " << s.concurrency.peak << ", mean " << fmt(s.concurrency.mean, 2) << "\n";
  os << "kv blocks    peak " << s.kv_blocks.peak_used << " of " << s.kv_blocks.total << "; preemptions "
     << s.preemptions << "\n";
  if (!s.pools.empty()) {
    int64_t instances = 0;
    for (const PoolSummary& p : s.pools) instances += p.info.instances;
    os << "cluster      " << instances << " instances in " << s.pools.size() << " pool"
       << (s.pools.size() > 1 ? "s" : "") << ", router " << s.router << "\n";
    for (const PoolSummary& p : s.pools) {
      os << "pool " << p.info.name << "  " << p.info.role << ", " << p.info.instances << " x " << p.info.gpu << " TP"
         << p.info.tensor_parallel_size << ": " << p.requests << " requests (" << p.finished << " finished), hit "
         << fmt(100.0 * p.token_hit_rate, 2) << "% tokens\n";
      os << "  ttft p50/p99 " << fmt(p.ttft_ms.p50, 2) << " / " << fmt(p.ttft_ms.p99, 2) << " ms, tpot p50/p99 "
         << fmt(p.tpot_ms.p50, 2) << " / " << fmt(p.tpot_ms.p99, 2) << " ms, e2e p50/p99 " << fmt(p.e2e_ms.p50, 2)
         << " / " << fmt(p.e2e_ms.p99, 2) << " ms\n";
      os << "  peak kv " << fmt(100.0 * p.peak_kv_usage, 1) << "%, preemptions " << p.preemptions
         << ", imbalance (max/mean) requests " << fmt(p.requests_imbalance, 3) << ", busy " << fmt(p.busy_imbalance, 3)
         << "\n";
    }
  }
  if (s.disaggregation.present) {
    const auto& d = s.disaggregation;
    os << "disagg       " << d.requests << " requests prefilled remotely, " << d.flows << " flows, "
       << fmt(d.bytes / 1e9, 3) << " GB; transfer p50/p99 " << fmt(d.transfer_ms.p50, 3) << " / "
       << fmt(d.transfer_ms.p99, 3) << " ms\n";
    os << "  ttft parts (mean ms): router " << fmt(d.router_ms.mean, 2) << ", prefill queue "
       << fmt(d.prefill_queue_ms.mean, 2) << ", prefill " << fmt(d.prefill_ms.mean, 2) << ", decode queue "
       << fmt(d.decode_queue_ms.mean, 2) << ", transfer " << fmt(d.pull_ms.mean, 2) << ", first decode step "
       << fmt(d.first_decode_step_ms.mean, 2) << "\n";
    link_lines(os, d.links, true);
  }
  if (s.kv_offload.present) {
    const auto& o = s.kv_offload;
    os << "kv offload   " << o.tier << " " << format_bytes(o.size_bytes) << " (" << o.policy
       << "): " << fmt(100.0 * o.token_hit_rate, 2) << "% tokens from the tier (" << o.hit_tokens << " tokens, "
       << o.hit_blocks << " blocks, " << o.hit_requests << " requests), GPU + tier "
       << fmt(100.0 * o.combined_token_hit_rate, 2) << "%; loaded " << format_bytes(o.loaded_bytes) << " in " << o.loads
       << " loads (p50/p99 " << fmt(o.load_ms.p50, 3) << " / " << fmt(o.load_ms.p99, 3) << " ms), stored "
       << format_bytes(o.stored_bytes) << ", " << o.stores_skipped_chunks
       << " chunks skipped (no room for a whole store)\n";
    os << "  " << o.backend << ", " << o.store_wait_steps << " steps waited on a store (" << fmt(o.store_wait_ms, 3)
       << " ms in all)\n";
    for (const KvOffloadTier& t : o.tiers)
      os << "  tier " << t.name << " " << format_bytes(t.size_bytes) << ": hits " << t.hit_tokens << " tokens ("
         << t.hit_blocks << " blocks), stored " << format_bytes(t.stored_bytes) << ", loaded "
         << format_bytes(t.loaded_bytes) << ", peak " << format_bytes(t.peak_used_bytes) << ", "
         << t.stores_skipped_chunks << " chunks skipped\n";
    link_lines(os, o.links, false);
  }
  os << "sim          " << s.sim.events << " events, " << fmt(s.sim.wall_s, 2) << " s wall, fingerprint "
     << fingerprint_hex(s.sim.fingerprint) << "\n";
  return os.str();
}

}  // namespace kvsim
