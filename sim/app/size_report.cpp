#include "sim/app/size_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "sim/app/size_checks.h"
#include "sim/core/errors.h"
#include "sim/core/units.h"
#include "sim/model/json.h"
#include "sim/model/parallel_layout.h"

namespace kvsim {

SizeReport build_size_report(const ModelSpec& spec, const SizeOptions& options) {
  SizeOptions opt = options;
  opt.weight_dtype = weight_override(spec, options.weight_dtype);  // "fp4" on an FP4 checkpoint: the checkpoint
  check_layout(spec, opt.par);
  SizeReport r;
  r.spec = spec;
  r.kv_dtype = resolve_kv_dtype(spec, opt.kv_dtype, "--kv-dtype");
  r.state_dtypes = resolve_state_dtypes(spec, opt.state_dtype);
  r.weight_dtype = served_weight_dtype(spec, opt.weight_dtype);
  r.weight_format = weight_format(spec, opt.weight_dtype);
  r.kv_bytes_per_token = kv_bytes_per_token(spec, r.kv_dtype);
  r.kv_bytes_per_token_bf16 = kv_bytes_per_token(spec, DType::kBf16);
  r.kv_bytes_per_token_fp8 = kv_bytes_per_token(spec, DType::kFp8);
  r.window_bytes_max = window_bytes_max(spec, r.kv_dtype);
  r.window_bytes_per_token = window_bytes_per_token(spec, r.kv_dtype);
  for (const auto& l : spec.layers)
    if (l.kind == LayerKind::kSlidingWindow && (r.window_min == 0 || l.attn.window < r.window_min))
      r.window_min = l.attn.window;
  r.state_bytes_per_request = state_bytes_per_request(spec, r.state_dtypes);
  r.state_bytes_bf16 = state_bytes_per_request(spec, {DType::kBf16, DType::kBf16});
  r.state_token_equivalent =
      r.kv_bytes_per_token > 0 ? static_cast<double>(r.state_bytes_per_request) / r.kv_bytes_per_token : 0.0;
  r.weight_bytes = weight_bytes(spec, opt.weight_dtype);
  const int tp = opt.par.tp;
  r.kv_bytes_per_token_per_gpu = pipeline_kv_bytes_per_token(spec, r.kv_dtype, opt.par);
  // Per GPU under PP: the busiest stage's (each stage holds the caches and states of its own layers).
  std::vector<ModelSpec> stage_specs;
  const std::vector<StageRange> stages = pipeline_stages(static_cast<int>(spec.layers.size()), opt.par.pp);
  for (size_t i = 0; i < stages.size(); ++i)
    stage_specs.push_back(stage_model(spec, stages[i], i + 1 == stages.size()));
  const auto busiest_stage = [&](const std::function<int64_t(const ModelSpec&)>& f) {
    int64_t most = 0;
    for (const ModelSpec& sm : stage_specs) most = std::max(most, f(sm));
    return most;
  };
  r.window_bytes_max_per_gpu = busiest_stage([&](const ModelSpec& sm) { return window_bytes_max(sm, r.kv_dtype, tp); });
  r.state_bytes_per_gpu =
      busiest_stage([&](const ModelSpec& sm) { return state_bytes_per_request(sm, r.state_dtypes, tp); });
  // Weights are sharded across TP ranks (vocab-parallel embedding and head included) except the modules
  // vLLM replicates; experts across DP x TP, layers across pipeline stages (parallel_layout.h).
  const std::vector<int64_t> stage_weights = weight_bytes_per_stage(spec, opt.weight_dtype, opt.par);
  r.weight_bytes_per_gpu = *std::max_element(stage_weights.begin(), stage_weights.end());
  r.block_size = engine_block_size(spec, opt.engine, opt.block_size, r.kv_dtype, r.state_dtypes, tp);

  int64_t available = 0;
  if (opt.gpu) {
    r.memory_fraction = opt.memory_fraction.value_or(default_memory_fraction(opt.engine, tp));
    if (!(r.memory_fraction > 0.0 && r.memory_fraction <= 1.0))
      throw InputError("--gpu-memory-utilization must be in (0, 1] (got " + std::to_string(r.memory_fraction) + ")");
    MemoryRule rule;
    rule.engine = opt.engine;
    rule.fraction = r.memory_fraction;
    rule.reserve_bytes = opt.reserve_bytes.value_or(default_reserve_bytes(
        opt.engine, static_cast<int64_t>(std::llround(opt.gpu->activation_reserve_fraction * opt.gpu->memory_bytes))));
    r.memory = kv_memory(opt.gpu->memory_bytes, r.weight_bytes_per_gpu, rule);
    available = r.memory->kv_available;
  }
  Parallel one;
  r.layout = build_kv_layout(spec, r.block_size, r.kv_dtype, r.state_dtypes, opt.par, available);
  if (opt.par.pp > 1 && r.memory) {
    std::vector<int64_t> stage_available;
    MemoryRule rule;
    rule.engine = opt.engine;
    rule.fraction = r.memory_fraction;
    rule.reserve_bytes = r.memory->reserve;
    for (int64_t w : stage_weights) stage_available.push_back(kv_memory(opt.gpu->memory_bytes, w, rule).kv_available);
    r.layout.num_blocks = pipeline_kv_blocks(spec, r.block_size, r.kv_dtype, r.state_dtypes, opt.par, stage_available);
  }
  const KvCacheLayout whole = build_kv_layout(spec, r.block_size, r.kv_dtype, r.state_dtypes, one, 0);
  std::vector<KvCacheLayout> stage_layouts;  // per stage at this layout's parallelism (block counts unused)
  for (const ModelSpec& sm : stage_specs)
    stage_layouts.push_back(build_kv_layout(sm, r.block_size, r.kv_dtype, r.state_dtypes, opt.par, 0));

  if (opt.images > 0) {
    if (!spec.has_vision) throw InputError("--images: " + spec.name + " has no vision_config");
    r.image_tokens_each = image_tokens(spec, opt.image_width, opt.image_height);
    if (__builtin_mul_overflow(r.image_tokens_each, int64_t{opt.images}, &r.image_tokens_total) ||
        r.image_tokens_total > kMaxContextTokens)
      throw InputError("--images " + std::to_string(opt.images) + " at --image-size " +
                       std::to_string(opt.image_width) + "x" + std::to_string(opt.image_height) +
                       ": over 2^40 image tokens per request");
    r.image_bytes = r.image_tokens_total * r.kv_bytes_per_token;
  }
  const int decode_tp = opt.decode_tp > 0 ? opt.decode_tp : tp;
  if (opt.link && decode_tp != tp) check_parallel(spec, Parallel{decode_tp, 1}, "--decode-tp");
  for (int64_t ctx0 : opt.contexts) {
    const int64_t ctx = ctx0 + r.image_tokens_total;
    ContextRow row;
    row.tokens = ctx;
    row.bytes = request_bytes(spec, ctx, r.kv_dtype, r.state_dtypes, one);
    row.bytes_padded = request_bytes_padded(whole, ctx);
    row.bytes_per_gpu =
        busiest_stage([&](const ModelSpec& sm) { return request_bytes(sm, ctx, r.kv_dtype, r.state_dtypes, opt.par); });
    row.bytes_padded_per_gpu = 0;
    for (const KvCacheLayout& sl : stage_layouts)
      row.bytes_padded_per_gpu = std::max(row.bytes_padded_per_gpu, request_bytes_padded(sl, ctx, opt.par.dcp));
    if (opt.gpu) {
      const int64_t per = blocks_per_request(r.layout, ctx, opt.par.dcp);
      // One block is vLLM's null block and never holds data.
      row.max_concurrent = r.layout.num_blocks > 1 && per > 0 ? (r.layout.num_blocks - 1) / per : 0;
    }
    if (opt.link) {
      // The whole request's cache crosses the link once: per-token bytes x context plus state.
      row.transfer_s = opt.link->latency.seconds() + row.bytes / opt.link->effective_bandwidth();
      // Each decode GPU receives its own shard: KV heads regrouped for decode TP, MLA rows whole.
      row.bytes_per_decode_gpu = request_bytes(spec, ctx, r.kv_dtype, r.state_dtypes, Parallel{decode_tp, 1});
    }
    r.contexts.push_back(row);
  }
  if (opt.gpu) check_fit(spec, opt, r);
  add_context_warnings(spec, r);
  return r;
}

namespace {

constexpr LayerKind kAllLayerKinds[] = {LayerKind::kFullAttention, LayerKind::kSlidingWindow, LayerKind::kMla,
                                        LayerKind::kSparseMla,     LayerKind::kMamba2,        LayerKind::kGatedDeltaNet,
                                        LayerKind::kRwkv6,         LayerKind::kNone};

std::string layers_text(const ModelSpec& s) {
  std::string out;
  for (LayerKind k : kAllLayerKinds) {
    const int n = s.count(k);
    if (n == 0) continue;
    if (!out.empty()) out += " + ";
    out += std::to_string(n) + " " + layer_kind_name(k);
  }
  int shared = 0;
  for (const auto& l : s.layers) shared += l.reads_cache_of >= 0;
  if (shared) out += " (" + std::to_string(shared) + " share a cache)";
  return out;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string group_digits(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(i, ",");
  return (v < 0 ? "-" : "") + s;
}

std::string csv_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string pad(const std::string& s, size_t w, bool right = true) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}

}  // namespace

void print_size_table(const std::vector<SizeReport>& reports, const SizeOptions& opt, std::ostream& out) {
  out << "KV cache dtype " << opt.kv_dtype << ", state dtype " << opt.state_dtype << ", engine "
      << engine_name(opt.engine) << ", tp " << opt.par.tp
      << (opt.par.dcp > 1 ? ", dcp " + std::to_string(opt.par.dcp) : "") << "\n\n";
  out << pad("model", 20, false) << "  " << pad("layers", 38, false) << pad("kv", 11) << pad("KV B/token", 12)
      << pad("window cap", 12) << pad("state/req", 12) << pad("= tokens", 10) << pad("params", 10) << pad("weights", 12)
      << pad("block", 7);
  for (int64_t c : opt.contexts) out << pad("@" + group_digits(c), 14);
  out << "\n";
  bool all_sliding_note = false;
  for (const auto& r : reports) {
    // Every layer slides (Mistral-7B v0.1): show what a token costs until the window fills.
    const bool all_sliding = r.kv_bytes_per_token == 0 && r.window_bytes_per_token > 0;
    all_sliding_note |= all_sliding;
    out << pad(r.spec.name, 20, false) << "  " << pad(layers_text(r.spec), 38, false) << pad(dtype_name(r.kv_dtype), 11)
        << pad(all_sliding ? group_digits(r.window_bytes_per_token) + "*" : group_digits(r.kv_bytes_per_token), 12)
        << pad(r.window_bytes_max ? format_bytes(r.window_bytes_max) : "-", 12)
        << pad(r.state_bytes_per_request ? format_bytes(r.state_bytes_per_request) : "-", 12)
        << pad(r.state_token_equivalent > 0 ? group_digits(std::llround(r.state_token_equivalent)) : "-", 10)
        << pad(fmt("%.2fB", (r.spec.params + r.spec.vision_params) / 1e9), 10) << pad(format_bytes(r.weight_bytes), 12)
        << pad(std::to_string(r.block_size), 7);
    for (const auto& c : r.contexts) out << pad(format_bytes(c.bytes), 14);
    out << "\n";
  }
  if (all_sliding_note)
    out << "* every layer slides: bytes per token while the context is inside the window; the window cap is the most "
           "a request ever holds\n";
  for (const auto& r : reports)
    for (const auto& w : r.warnings) out << "warning: " << w << "\n";
  for (const auto& r : reports) {
    const bool detail = opt.gpu || opt.link || opt.images > 0 || reports.size() == 1 || opt.par.tp > 1;
    if (!detail) continue;
    out << "\n" << r.spec.name << " (" << r.spec.path << ")\n";
    out << "  layers: " << layers_text(r.spec) << "\n";
    if (r.kv_bytes_per_token == 0 && r.window_bytes_per_token > 0)
      out << "  KV bytes per token: " << group_digits(r.window_bytes_per_token) << " inside the "
          << group_digits(r.window_min) << "-token window (BF16 "
          << group_digits(window_bytes_per_token(r.spec, DType::kBf16)) << ", FP8 "
          << group_digits(window_bytes_per_token(r.spec, DType::kFp8)) << "), 0 past it: every layer slides\n";
    else
      out << "  KV bytes per token: " << group_digits(r.kv_bytes_per_token) << " (BF16 "
          << group_digits(r.kv_bytes_per_token_bf16) << ", FP8 " << group_digits(r.kv_bytes_per_token_fp8) << ")\n";
    if (r.window_bytes_max)
      out << "  window layers hold at most " << format_bytes(r.window_bytes_max) << " per request ("
          << group_digits(r.window_bytes_per_token) << " B/token until the " << group_digits(r.window_min)
          << "-token window fills" << (r.kv_bytes_per_token == 0 ? ", then nothing more grows" : "") << ")\n";
    if (r.state_bytes_per_request)
      out << "  fixed state per request: " << format_bytes(r.state_bytes_per_request) << " (conv "
          << dtype_name(r.state_dtypes.conv) << ", ssm " << dtype_name(r.state_dtypes.ssm) << "; BF16 "
          << format_bytes(r.state_bytes_bf16) << ")"
          << (r.state_token_equivalent > 0 ? " = " + fmt("%.0f", r.state_token_equivalent) + " tokens of cache" : "")
          << "\n";
    out << "  parameters: " << group_digits(r.spec.params) << " (active " << group_digits(r.spec.active_params)
        << (r.spec.vision_params ? ", vision " + group_digits(r.spec.vision_params) : "") << "), weights "
        << format_bytes(r.weight_bytes) << " in " << r.weight_format << "\n";
    out << "  engine block size: " << r.block_size << " tokens; " << r.layout.describe() << "\n";
    const bool layout = opt.par.dp > 1 || opt.par.pp > 1 || opt.par.expert_parallel;
    if (opt.par.tp > 1 || opt.par.dcp > 1 || layout)
      out << "  per GPU (tp " << opt.par.tp << ", dcp " << opt.par.dcp
          << (layout ? ", dp " + std::to_string(opt.par.dp) + ", pp " + std::to_string(opt.par.pp) : "")
          << (layout && r.spec.num_experts > 0
                  ? ", ep " + std::to_string(expert_parallel_size(r.spec, opt.par)) +
                        (opt.par.ep > 0 ? " x moe-tp " + std::to_string(moe_tensor_parallel_size(r.spec, opt.par))
                                        : "") +
                        " (" + std::to_string(experts_per_rank(r.spec, opt.par)) + " experts per rank)"
                  : "")
          << "): KV " << group_digits(r.kv_bytes_per_token_per_gpu) << " B/token, state "
          << format_bytes(r.state_bytes_per_gpu) << ", weights " << format_bytes(r.weight_bytes_per_gpu) << "\n";
    if (r.image_tokens_total)
      out << "  images: " << opt.images << " x " << opt.image_width << "x" << opt.image_height << " = "
          << group_digits(r.image_tokens_total) << " tokens (" << group_digits(r.image_tokens_each)
          << " each, plus 2 wrapper tokens each), " << format_bytes(r.image_bytes) << " of cache\n";
    if (r.memory) {
      const auto& m = *r.memory;
      out << "  " << opt.gpu->name << ": " << format_bytes(m.total) << " total; ";
      if (opt.engine == EngineKind::kTrtllm) {
        // free_gpu_memory_fraction is a share of what the weights and the reserve leave (sizing.cpp kv_memory).
        out << "weights " << format_bytes(m.weights) << "; activation + CUDA graph reserve " << format_bytes(m.reserve)
            << "; free " << format_bytes(std::max<int64_t>(m.engine_share, 0)) << " x trtllm fraction "
            << fmt("%.2f", r.memory_fraction) << "; KV cache ";
      } else {
        out << engine_name(opt.engine) << " fraction " << fmt("%.2f", r.memory_fraction) << " -> "
            << format_bytes(m.engine_share) << "; weights " << format_bytes(m.weights)
            << "; activation + CUDA graph reserve " << format_bytes(m.reserve) << "; KV cache ";
      }
      if (m.kv_available > 0)
        out << format_bytes(m.kv_available) << " = " << group_digits(r.layout.num_blocks) << " blocks\n";
      else if (opt.engine == EngineKind::kTrtllm)
        out << "none (weights and reserve exceed the GPU's memory by " << format_bytes(-m.engine_share) << ")\n";
      else
        out << "none (weights and reserve exceed the engine's share by " << format_bytes(-m.kv_available) << ")\n";
      if (!r.fits)
        out << "  does not fit: " << opt.gpu->name << " at tp " << opt.par.tp
            << " has no room for one request of the longest context; "
            << (r.gpus_needed > 0 ? "it needs the memory of " + std::to_string(r.gpus_needed) + " GPUs" : "")
            << (r.tp_needed > 0 ? "; the smallest TP size that splits its heads and fits is --tp " +
                                      std::to_string(r.tp_needed) + " (" + std::to_string(r.tp_needed) + " GPUs)"
                                : "")
            << (r.gpus_needed == 0 ? std::string("not even 1,024 GPUs are enough") : "") << "\n";
    }
    out << "  " << pad("context", 10) << pad("exact", 14) << pad("padded", 14);
    if (opt.par.tp > 1 || opt.par.dcp > 1) out << pad("per GPU", 14);
    if (opt.gpu) out << pad("max concurrent", 16);
    if (opt.link) out << pad("send (" + opt.link->name + ")", 22) << pad("per decode GPU", 16);
    out << "\n";
    for (const auto& c : r.contexts) {
      out << "  " << pad(group_digits(c.tokens), 10) << pad(format_bytes(c.bytes), 14)
          << pad(format_bytes(c.bytes_padded), 14);
      if (opt.par.tp > 1 || opt.par.dcp > 1) out << pad(format_bytes(c.bytes_padded_per_gpu), 14);
      if (c.max_concurrent) out << pad(group_digits(*c.max_concurrent), 16);
      if (c.transfer_s)
        out << pad(fmt("%.3f ms", *c.transfer_s * 1e3), 22) << pad(format_bytes(*c.bytes_per_decode_gpu), 16);
      out << "\n";
    }
  }
}

void print_size_json(const std::vector<SizeReport>& reports, const SizeOptions& opt, std::ostream& out) {
  out << "[";
  for (size_t i = 0; i < reports.size(); ++i) {
    const SizeReport& r = reports[i];
    std::ostringstream o;
    o << (i ? ",\n" : "\n") << "  {\"name\": " << json_quote(r.spec.name) << ", \"path\": " << json_quote(r.spec.path)
      << ", \"model_type\": " << json_quote(r.spec.model_type) << ", \"layers\": {";
    bool first = true;
    for (LayerKind k : kAllLayerKinds) {
      if (!r.spec.count(k)) continue;
      o << (first ? "" : ", ") << json_quote(layer_kind_name(k)) << ": " << r.spec.count(k);
      first = false;
    }
    o << "}, \"kv_dtype\": " << json_quote(dtype_name(r.kv_dtype))
      << ", \"kv_bytes_per_token\": " << r.kv_bytes_per_token
      << ", \"kv_bytes_per_token_bf16\": " << r.kv_bytes_per_token_bf16
      << ", \"kv_bytes_per_token_fp8\": " << r.kv_bytes_per_token_fp8
      << ", \"window_bytes_max\": " << r.window_bytes_max
      << ", \"window_bytes_per_token\": " << r.window_bytes_per_token
      << ", \"state_bytes_per_request\": " << r.state_bytes_per_request
      << ", \"state_dtype\": {\"conv\": " << json_quote(dtype_name(r.state_dtypes.conv))
      << ", \"ssm\": " << json_quote(dtype_name(r.state_dtypes.ssm))
      << "}, \"state_bytes_bf16\": " << r.state_bytes_bf16
      << ", \"state_token_equivalent\": " << json_number(r.state_token_equivalent) << ", \"params\": " << r.spec.params
      << ", \"active_params\": " << r.spec.active_params << ", \"vision_params\": " << r.spec.vision_params
      << ", \"weight_dtype\": " << json_quote(dtype_name(r.weight_dtype))
      << ", \"weight_format\": " << json_quote(r.weight_format)
      << ", \"quantized_params\": " << (weight_override(r.spec, opt.weight_dtype) ? 0 : r.spec.quantized_params)
      << ", \"weight_bytes\": " << r.weight_bytes << ", \"block_size\": " << r.block_size << ", \"tp\": " << opt.par.tp
      << ", \"dcp\": " << opt.par.dcp << ", \"per_gpu\": {\"kv_bytes_per_token\": " << r.kv_bytes_per_token_per_gpu
      << ", \"window_bytes_max\": " << r.window_bytes_max_per_gpu
      << ", \"state_bytes_per_request\": " << r.state_bytes_per_gpu << ", \"weight_bytes\": " << r.weight_bytes_per_gpu
      << "}, \"kv_cache_groups\": " << r.layout.groups.size();
    if (r.memory) {
      const auto& m = *r.memory;
      o << ", \"gpu\": {\"name\": " << json_quote(opt.gpu->name)
        << ", \"engine\": " << json_quote(engine_name(opt.engine)) << ", \"memory_bytes\": " << m.total
        << ", \"memory_fraction\": " << json_number(r.memory_fraction) << ", \"engine_share_bytes\": " << m.engine_share
        << ", \"weight_bytes\": " << m.weights << ", \"reserve_bytes\": " << m.reserve
        << ", \"kv_bytes\": " << std::max<int64_t>(0, m.kv_available) << ", \"num_blocks\": " << r.layout.num_blocks
        << ", \"fits\": " << (r.fits ? "true" : "false") << ", \"gpus_needed\": " << r.gpus_needed
        << ", \"tp_needed\": " << r.tp_needed << ", \"shortfall_bytes\": " << std::max<int64_t>(0, -m.kv_available)
        << "}";
    }
    o << ", \"warnings\": [";
    for (size_t w = 0; w < r.warnings.size(); ++w) o << (w ? ", " : "") << json_quote(r.warnings[w]);
    o << "]";
    if (r.image_tokens_total)
      o << ", \"images\": {\"count\": " << opt.images << ", \"width\": " << opt.image_width
        << ", \"height\": " << opt.image_height << ", \"tokens_per_image\": " << r.image_tokens_each
        << ", \"tokens\": " << r.image_tokens_total << ", \"bytes\": " << r.image_bytes << "}";
    if (opt.link)
      o << ", \"link\": {\"name\": " << json_quote(opt.link->name)
        << ", \"effective_bytes_per_s\": " << json_number(opt.link->effective_bandwidth())
        << ", \"latency_s\": " << json_number(opt.link->latency.seconds())
        << ", \"decode_tp\": " << (opt.decode_tp > 0 ? opt.decode_tp : opt.par.tp) << "}";
    o << ", \"contexts\": [";
    for (size_t j = 0; j < r.contexts.size(); ++j) {
      const ContextRow& c = r.contexts[j];
      o << (j ? ", " : "") << "{\"tokens\": " << c.tokens << ", \"bytes\": " << c.bytes
        << ", \"bytes_padded\": " << c.bytes_padded << ", \"bytes_per_gpu\": " << c.bytes_per_gpu
        << ", \"bytes_padded_per_gpu\": " << c.bytes_padded_per_gpu;
      if (c.max_concurrent) o << ", \"max_concurrent\": " << *c.max_concurrent;
      if (c.transfer_s)
        o << ", \"transfer_s\": " << json_number(*c.transfer_s)
          << ", \"bytes_per_decode_gpu\": " << *c.bytes_per_decode_gpu;
      o << "}";
    }
    o << "]}";
    out << o.str();
  }
  out << "\n]\n";
}

void print_size_csv(const std::vector<SizeReport>& reports, const SizeOptions& opt, std::ostream& out) {
  out << "name,layers,kv_dtype,kv_bytes_per_token,kv_bytes_per_token_bf16,kv_bytes_per_token_fp8,window_bytes_max,"
         "state_bytes_per_request,state_token_equivalent,params,weight_bytes,block_size,tp,context,bytes,bytes_padded,"
         "bytes_per_gpu,bytes_padded_per_gpu,max_concurrent,transfer_s,warning\n";
  for (const auto& r : reports) {
    for (const auto& c : r.contexts) {
      out << r.spec.name << ",\"" << layers_text(r.spec) << "\"," << dtype_name(r.kv_dtype) << ","
          << r.kv_bytes_per_token << "," << r.kv_bytes_per_token_bf16 << "," << r.kv_bytes_per_token_fp8 << ","
          << r.window_bytes_max << "," << r.state_bytes_per_request << "," << json_number(r.state_token_equivalent)
          << "," << r.spec.params << "," << r.weight_bytes << "," << r.block_size << "," << opt.par.tp << ","
          << c.tokens << "," << c.bytes << "," << c.bytes_padded << "," << c.bytes_per_gpu << ","
          << c.bytes_padded_per_gpu << "," << (c.max_concurrent ? std::to_string(*c.max_concurrent) : "") << ","
          << (c.transfer_s ? json_number(*c.transfer_s) : "") << ",";
      // The warning (a context past max_position_embeddings) on the rows it is about.
      const int64_t max_pos = r.spec.max_position_embeddings;
      if (!r.warnings.empty() && max_pos > 0 && c.tokens > max_pos) out << csv_quote(r.warnings.front());
      out << "\n";
    }
  }
}

}  // namespace kvsim
