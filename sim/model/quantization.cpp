#include "sim/model/quantization.h"

#include <re2/re2.h>

#include "sim/core/errors.h"

namespace kvsim {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string str_or(const JsonValue& o, const char* key, const std::string& fallback) {
  const JsonValue* v = o.find(key);
  return (v && v->is_string()) ? v->str() : fallback;
}

// An integer key in [lo, hi], or `fallback` when absent or null.
int int_or(const JsonValue& o, const char* key, int fallback, int lo, int hi, const std::string& where) {
  const JsonValue* v = o.find(key);
  if (!v || v->is_null()) return fallback;
  if (!v->is_integer() || v->integer() < lo || v->integer() > hi)
    throw InputError(where + "." + key + ": must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "]");
  return static_cast<int>(v->integer());
}

void append_patterns(const JsonValue& o, const char* key, const std::string& where, std::vector<std::string>* out) {
  const JsonValue* v = o.find(key);
  if (!v || v->is_null()) return;
  if (!v->is_array()) throw InputError(where + "." + key + ": must be a list of module names");
  // Bounded: each pattern is compiled and searched in every module name.
  if (v->array().size() > 100000) throw InputError(where + "." + key + ": over 100,000 module names");
  for (const JsonValue& p : v->array()) {
    if (!p.is_string()) throw InputError(where + "." + key + ": must be a list of module names");
    if (p.str().size() > 1000) throw InputError(where + "." + key + ": a module name over 1,000 characters");
    if (p.str().empty()) throw InputError(where + "." + key + ": an empty module name");
    out->push_back(p.str());
  }
}

std::shared_ptr<const re2::RE2> compile(const std::string& pattern, const std::string& where) {
  std::string re;
  if (pattern.rfind("re:", 0) == 0) {
    re = pattern.substr(3);
  } else {
    // A dotted name with '*' wildcards, matched on whole dot-separated components.
    re = "(^|\\.)";
    for (char c : pattern) {
      if (c == '*')
        re += ".*";
      else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_')
        re += c;
      else
        re += std::string("\\") + c;
    }
    re += "($|\\.)";
  }
  // RE2 (Python re's syntax less backreferences and lookaround) matches in linear time: with a
  // backtracking engine "re:(.*)*x" never returned.
  re2::RE2::Options options;
  options.set_log_errors(false);
  auto compiled = std::make_shared<const re2::RE2>(re, options);
  if (!compiled->ok())
    throw InputError(where + ": bad module pattern '" + pattern + "' (" + compiled->error() +
                     "; kvsim matches patterns with RE2, which has no backreferences or lookaround)");
  return compiled;
}

void set_fp8(QuantGroup& s, const JsonValue& q, const std::string& where, int scale_bits) {
  s.dtype = DType::kFp8;
  s.value_bits = 8;
  const JsonValue* b = q.find("weight_block_size");
  if (!b || b->is_null()) b = q.find("block_structure");
  if (b && !b->is_null()) {
    if (!b->is_array() || b->array().size() != 2 || !b->array()[0].is_integer() || !b->array()[1].is_integer() ||
        b->array()[0].integer() < 1 || b->array()[1].integer() < 1 || b->array()[0].integer() > (1 << 20) ||
        b->array()[1].integer() > (1 << 20))
      throw InputError(where + ".weight_block_size: must be two positive integers [rows, cols]");
    s.block_rows = static_cast<int>(b->array()[0].integer());
    s.block_cols = static_cast<int>(b->array()[1].integer());
    s.scale_bits = scale_bits;
    s.format = "fp8 block " + std::to_string(s.block_rows) + "x" + std::to_string(s.block_cols);
  } else {
    s.tensor_scale_bits = 32;
    s.format = "fp8 per tensor";
  }
}

void set_nvfp4(QuantGroup& s, int group) {
  s.dtype = DType::kNvfp4;
  s.value_bits = 4;
  s.group_size = group;
  s.scale_bits = 8;          // FP8 E4M3 block scale
  s.tensor_scale_bits = 32;  // FP32 global scale (weight_scale_2 / weight_global_scale)
  s.format = "nvfp4 group " + std::to_string(group);
}

// compressed-tensors: one QuantGroup per config group, with its targets.
QuantGroup read_ct_group(const std::string& gname, const JsonValue& g, const JsonValue& q, const std::string& where) {
  QuantGroup s;
  const std::string gw = where + ".config_groups." + gname;
  if (!g.is_object()) throw InputError(gw + ": must be an object");
  const JsonValue* w = g.find("weights");
  if (!w || !w->is_object()) throw InputError(gw + ".weights: missing");
  append_patterns(g, "targets", gw, &s.targets);
  if (s.targets.empty()) s.targets = {"Linear"};
  const int bits = int_or(*w, "num_bits", 8, 1, 32, gw + ".weights");
  const std::string type = str_or(*w, "type", "int");
  const std::string strategy = str_or(*w, "strategy", "tensor");
  const std::string fmt = str_or(g, "format", str_or(q, "format", ""));
  if (fmt == "nvfp4-pack-quantized" || (type == "float" && bits == 4)) {
    set_nvfp4(s, int_or(*w, "group_size", 16, 1, 1 << 20, gw + ".weights"));
    return s;
  }
  if (type == "float" && bits == 8) {
    set_fp8(s, *w, gw + ".weights", 16);
    if (strategy == "channel") {
      s.tensor_scale_bits = 0;
      s.group_size = -1;
      s.scale_bits = 16;
      s.format = "fp8 per channel";
    }
    return s;
  }
  s.value_bits = bits;
  s.dtype = bits == 4 ? DType::kInt4 : (bits == 8 ? DType::kFp8 : DType::kBf16);
  s.scale_bits = 16;  // scales in the checkpoint dtype (BF16)
  if (strategy == "group") {
    s.group_size = int_or(*w, "group_size", 128, 1, 1 << 20, gw + ".weights");
    s.format = "int" + std::to_string(bits) + " group " + std::to_string(s.group_size);
  } else if (strategy == "channel") {
    s.group_size = -1;
    s.format = "int" + std::to_string(bits) + " per channel";
  } else if (strategy == "tensor") {
    s.scale_bits = 0;
    s.tensor_scale_bits = 16;
    s.format = "int" + std::to_string(bits) + " per tensor";
  } else {
    throw InputError(gw + ".weights.strategy: '" + strategy + "' is not understood (known: group, channel, tensor)");
  }
  const JsonValue* sym = w->find("symmetric");
  if (sym && sym->is_bool() && !sym->boolean()) s.zero_point_bits = bits;
  return s;
}

void read_compressed_tensors(QuantScheme& s, const JsonValue& q, const std::string& where) {
  const JsonValue* groups = q.find("config_groups");
  if (!groups || !groups->is_object() || groups->object().empty())
    throw InputError(where + ".config_groups: missing (compressed-tensors needs a config group)");
  for (const auto& [name, g] : groups->object()) s.groups.push_back(read_ct_group(name, g, q, where));
}

}  // namespace

ModulePattern::ModulePattern(const std::string& pattern, const std::string& where) {
  if (pattern.rfind("re:", 0) != 0 && pattern.find('*') == std::string::npos)
    plain_ = pattern;
  else
    re_ = compile(pattern, where);
}

bool ModulePattern::matches(const std::string& module) const {
  if (re_) return re2::RE2::PartialMatch(module, *re_);
  if (plain_.empty()) return false;
  for (size_t at = module.find(plain_); at != std::string::npos; at = module.find(plain_, at + 1)) {
    const size_t end = at + plain_.size();
    if ((at == 0 || module[at - 1] == '.') && (end == module.size() || module[end] == '.')) return true;
  }
  return false;
}

bool module_matches(const std::string& pattern, const std::string& module) {
  return ModulePattern(pattern, "module pattern").matches(module);
}

QuantScheme read_quantization(const JsonValue& q, const std::string& where) {
  if (!q.is_object()) throw InputError(where + ": must be an object");
  QuantScheme s;
  s.method = str_or(q, "quant_method", "");
  if (s.method.empty()) {
    s.method = "unknown";
    s.understood = false;
    return s;
  }
  append_patterns(q, "modules_to_not_convert", where, &s.keep);
  append_patterns(q, "ignore", where, &s.keep);
  append_patterns(q, "exclude_modules", where, &s.keep);
  const std::string algo = str_or(q, "quant_algo", "");
  QuantGroup g;
  g.targets = {"Linear"};
  if (s.method == "fp8" || s.method == "fbgemm_fp8") {
    set_fp8(g, q, where, 32);  // weight_scale_inv: FP32 (DeepSeek, HF FineGrainedFP8)
  } else if (s.method == "mxfp4") {
    g.dtype = DType::kMxfp4;
    g.value_bits = 4;
    g.group_size = 32;
    g.scale_bits = 8;
    g.format = "mxfp4 group 32";
  } else if (s.method == "nvfp4" || (s.method == "modelopt" && (algo == "NVFP4" || algo == "nvfp4"))) {
    set_nvfp4(g, int_or(q, "group_size", 16, 1, 1 << 20, where));
  } else if (s.method == "modelopt" && (algo == "FP8" || algo == "fp8")) {
    set_fp8(g, q, where, 32);
  } else if (s.method == "compressed-tensors") {
    read_compressed_tensors(s, q, where);
  } else if (s.method == "gptq" || s.method == "awq") {
    g.value_bits = int_or(q, "bits", int_or(q, "w_bit", 4, 1, 16, where), 1, 16, where);
    g.dtype = g.value_bits == 4 ? DType::kInt4 : DType::kFp8;
    const int gs = int_or(q, "group_size", int_or(q, "q_group_size", 128, -1, 1 << 20, where), -1, 1 << 20, where);
    g.group_size = gs <= 0 ? -1 : gs;
    g.scale_bits = 16;  // FP16 scales
    g.zero_point_bits = g.value_bits;
    g.format = "int" + std::to_string(g.value_bits) + (gs > 0 ? " group " + std::to_string(gs) : " per channel");
  } else {
    s.understood = false;
    return s;
  }
  if (s.groups.empty()) s.groups.push_back(g);
  for (const auto& p : s.keep) ModulePattern(p, where);  // a bad pattern is an error at load
  for (const auto& grp : s.groups)
    for (const auto& p : grp.targets)
      if (p != "Linear") ModulePattern(p, where);
  return s;
}

WeightTally::WeightTally(const QuantScheme& q) : q_(q) {
  if (!q.quantized() || !q.understood) return;
  for (const auto& p : q.keep) keep_.emplace_back(p, "quantization_config");
  for (const auto& g : q.groups) {
    std::vector<ModulePattern> named;
    bool linear = false;
    for (const auto& p : g.targets) {
      if (p == "Linear")
        linear = true;
      else
        named.emplace_back(p, "quantization_config");
    }
    groups_.push_back({&g, std::move(named), linear});
  }
}

// compressed-tensors precedence: a group that names the module (by name or regex) before one that
// targets every Linear; a module no group targets stays unquantised.
const QuantGroup* WeightTally::group_for(const std::string& module) const {
  if (groups_.empty()) return nullptr;
  const std::string wrapped = "language_model." + module;
  auto any = [&](const std::vector<ModulePattern>& patterns) {
    for (const auto& p : patterns)
      if (p.matches(module) || p.matches(wrapped)) return true;
    return false;
  };
  if (any(keep_)) return nullptr;
  for (const auto& g : groups_)
    if (any(g.named)) return g.group;
  for (const auto& g : groups_)
    if (g.all_linear) return g.group;
  return nullptr;
}

int64_t WeightTally::linear(const std::string& module, int64_t out, int64_t in, int64_t copies) {
  const int64_t n = out * in * copies;
  const QuantGroup* g = group_for(module);
  if (!g) {
    kept_ += n;
    if (copies > 1) expert_kept_ += n;
    return n;
  }
  quantized_ += n;
  if (copies == 1) quantized_dense_ += n;
  int64_t scales = 0;
  if (g->group_size > 0)
    scales = out * cdiv(in, g->group_size);
  else if (g->group_size < 0)
    scales = out;  // one per output row
  else if (g->block_rows > 0)
    scales = cdiv(out, g->block_rows) * cdiv(in, g->block_cols);
  const int64_t bits =
      n * g->value_bits + copies * (scales * (g->scale_bits + g->zero_point_bits) + g->tensor_scale_bits);
  quantized_bits_ += bits;
  if (copies > 1) expert_quantized_bits_ += bits;
  return n;
}

int64_t WeightTally::other(int64_t n) {
  kept_ += n;
  return n;
}

int64_t WeightTally::expert_other(int64_t n) {
  expert_kept_ += n;
  return other(n);
}

int64_t WeightTally::replicated(const std::string& module, int64_t out, int64_t in) {
  return tally_into(replicated_, [&] { return linear(module, out, in); });
}

int64_t WeightTally::replicated_other(int64_t n) {
  return tally_into(replicated_, [&] { return other(n); });
}

int64_t WeightTally::kv_linear(const std::string& module, int64_t out, int64_t in, int kv_heads) {
  return tally_into(kv_[kv_heads], [&] { return linear(module, out, in); });
}

}  // namespace kvsim
