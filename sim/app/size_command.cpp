#include "sim/app/size_command.h"

#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "sim/app/commands.h"
#include "sim/app/recompute_report.h"
#include "sim/app/simulation.h"
#include "sim/app/size_report.h"
#include "sim/core/errors.h"
#include "sim/core/units.h"
#include "sim/model/config_reader.h"
#include "sim/model/parallel_layout.h"
#include "sim/model/sizing.h"
#include "sim/perf/calibrated_model.h"
#include "sim/perf/latency_factory.h"
#include "sim/scenario/hardware_catalog.h"

namespace po = boost::program_options;

namespace kvsim {
namespace {

// Far above any engine's block (hybrid "all" mode blocks are a few thousand tokens); beyond it a
// block's bytes stop meaning anything.
constexpr int kMaxBlockSize = 1 << 20;

po::options_description size_options() {
  po::options_description d(
      "kvsim size CONFIG.json... [options]\n\n"
      "Exact KV cache, state, weights and capacity per model. Weights follow the config's quantization_config.\n"
      "A context past max_position_embeddings is a warning naming the RoPE scaling that would allow it; with --gpu,\n"
      "a model with no room for one request says 'does not fit' and how many GPUs (and which --tp) it needs; a model\n"
      "whose every layer slides shows its bytes per token inside the window (marked *). A config that fails does\n"
      "not stop the others: its error follows them and the exit code is 2.\n\nOptions",
      kHelpLineLength, kHelpLineLength / 2);
  // clang-format off
  d.add_options()
    ("help,h", "show this help")
    ("kv-dtype", po::value<std::string>()->default_value("auto"),
     "KV cache dtype: auto|bf16|fp16|fp8|fp8_ds_mla|fp4 (auto: BF16, except DeepSeek-V3.2's fp8_ds_mla as in "
     "vLLM; fp8 is per-tensor scaled; sparse MLA with fp8 or fp4 uses vLLM's fp8_ds_mla row)")
    ("state-dtype", po::value<std::string>()->default_value("auto"),
     "recurrent state dtype: auto (vLLM's per-model rule) | bf16 | fp16 | fp32 | mixed (conv bf16, ssm fp32)")
    ("weight-dtype", po::value<std::string>()->default_value("auto"),
     "weight dtype for weight bytes: auto|bf16|fp16|fp8|fp8_block|int4|mxfp4|nvfp4|fp4|fp32. auto: as the config's "
     "quantization_config stores them (fp8 blocks, mxfp4, nvfp4, compressed-tensors int4, gptq/awq; scales counted; "
     "embeddings, lm_head, norms, routers and the modules it lists as not converted stay bf16), bf16 without one. "
     "A dtype overrides the config and puts every weight in it (mxfp4 4.25 bits, nvfp4 4.5, int4 4.125 with scales; "
     "fp8_block: 8 bits, and --recompute prices vLLM's block-scaled FP8 kernels; fp8 and auto use the per-tensor "
     "FP8 rows, also on a checkpoint with weight_block_size); fp4 on an mxfp4 or nvfp4 checkpoint, and int4 on an "
     "int4 one, mean that checkpoint as stored)")
    ("context", po::value<std::vector<int64_t>>()->composing(),
     "context length in tokens; repeat for several (default 8192, 32768, 131072)")
    ("images", po::value<int>()->default_value(0), "images per request (vision-language configs)")
    ("image-size", po::value<std::string>()->default_value("1024x1024"), "image size WxH in pixels")
    ("tp", po::value<int>()->default_value(1), "tensor-parallel size")
    ("dcp", po::value<int>()->default_value(1), "decode-context-parallel size (shards the cache across tokens)")
    ("dp", po::value<int>()->default_value(1), "data-parallel size (attention DP: each rank its own cache; MoE experts shard over dp x tp)")
    ("pp", po::value<int>()->default_value(1), "pipeline-parallel size (layers split over stages, vLLM get_pp_indices)")
    ("enable-expert-parallel", po::bool_switch(), "expert parallelism: EP = dp x tp, whole experts per rank")
    ("ep", po::value<int>()->default_value(0),
     "EP size dividing dp x tp, each expert tensor-split dp x tp / ep ways (SGLang --ep-size, TensorRT-LLM "
     "moe_expert_parallel_size; --engine sglang or trtllm); implies --enable-expert-parallel")
    ("decode-tp", po::value<int>()->default_value(0), "decode TP size for --link (default: --tp)")
    ("gpu", po::value<std::string>(), "GPU from models/hardware/ (e.g. h100-sxm): capacity and max concurrency")
    ("engine", po::value<std::string>()->default_value("vllm"), "memory rule and block size: vllm|sglang|trtllm")
    ("gpu-memory-utilization", po::value<double>(),
     "engine memory fraction (vLLM default 0.92, 0.9 before v0.21; SGLang mem_fraction_static by TP; "
     "TensorRT-LLM free_gpu_memory_fraction 0.9)")
    ("activation-reserve", po::value<std::string>(),
     "memory kept for activations and CUDA graphs, e.g. 4GiB (default: the GPU file's activation_reserve)")
    ("block-size", po::value<std::string>()->default_value("auto"), "engine block size in tokens, or auto")
    ("link", po::value<std::string>(), "link from models/hardware/links.yaml: time to send one request's cache")
    ("cla", po::value<int>()->default_value(1), "cross-layer attention: 2 or 3 adjacent layers share one cache")
    ("yoco-window", po::value<int>()->default_value(0),
     "YOCO: half the layers keep a W-token window, the other half read one shared cache")
    ("hardware-dir", po::value<std::string>()->default_value(kDefaultHardwareDir), "hardware catalog directory")
    ("format", po::value<std::string>()->default_value("table"), "output: table|json|csv")
    ("recompute", po::bool_switch(), "with --gpu: per context, reload time from each --tier vs prefill time again "
     "(calibrated latency model), and the crossover length")
    ("tier", po::value<std::vector<std::string>>()->composing(),
     "storage tier for --recompute (host-dram, nvme-gen4, nvme-gen5, remote-rdma); repeat; default all")
    ("recompute-chunk", po::value<int64_t>()->default_value(8192), "prefill chunk (tokens) for --recompute")
    ("config", po::value<std::vector<std::string>>(), "model config.json files (positional)");
  // clang-format on
  return d;
}

void parse_image_size(const std::string& s, int* w, int* h) {
  const auto x = s.find('x');
  try {
    if (x == std::string::npos) throw std::invalid_argument("x");
    size_t used = 0;
    *w = std::stoi(s.substr(0, x), &used);
    if (used != x) throw std::invalid_argument("w");
    *h = std::stoi(s.substr(x + 1), &used);
    if (used != s.size() - x - 1) throw std::invalid_argument("h");
  } catch (const std::exception&) {
    throw InputError("--image-size: expected WxH in pixels, e.g. 1024x1024 (got '" + s + "')");
  }
  if (*w <= 0 || *h <= 0) throw InputError("--image-size: width and height must be > 0 (got '" + s + "')");
}

// `--recompute`: reload from each tier vs prefill again, with the calibrated latency model.
void print_recompute_section(const SizeReport& r, const SizeOptions& opt, const std::string& hw_dir,
                             const std::vector<TierSpec>& tiers, int64_t chunk, std::ostream& out) {
  const std::string dir = latency_tables_dir(hw_dir);
  // The engine's default MoE routing (engine.moe_routing auto) for the architecture.
  LatencyTables tables =
      load_latency_tables(dir, opt.gpu->name, resolve_moe_routing("auto", r.spec.architecture, "moe_routing"));
  if (fp8_block_scaled(opt.weight_dtype_name)) tables = with_block_fp8_rows(std::move(tables));
  const bool checkpoint = !weight_override(r.spec, opt.weight_dtype);  // weights as quantization_config stores them
  const CalibratedLatencyModel model(r.spec, *opt.gpu, opt.par.tp, r.weight_dtype, r.kv_dtype, tables,
                                     engine_overhead(dir, engine_name(opt.engine)), {}, {}, {},
                                     checkpoint ? checkpoint_weight_bits(r.spec) : 0.0,
                                     checkpoint && checkpoint_dense_weights_16bit(r.spec));
  int64_t max_context = r.spec.max_position_embeddings > 0 ? r.spec.max_position_embeddings : 131072;
  for (int64_t c : opt.contexts) max_context = std::max(max_context, c);
  const RecomputeReport rep = build_recompute_report(r.spec, model, r.kv_dtype, r.state_dtypes, opt.par, tiers,
                                                     opt.contexts, max_context, chunk);
  print_recompute_report(rep, r.spec.name, opt.gpu->name, model.name(), out);
}

}  // namespace

int run_size_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc = size_options();
  po::positional_options_description pos;
  pos.add("config", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string("size: ") + e.what());
  }
  if (vm.count("help")) {
    out << desc << "\n";
    return 0;
  }
  if (!vm.count("config")) throw InputError("size: no model config given (try: kvsim size models/qwen3-8b.json)");

  SizeOptions opt;
  opt.kv_dtype = vm["kv-dtype"].as<std::string>();
  if (opt.kv_dtype != "auto") parse_dtype(opt.kv_dtype, "--kv-dtype");  // reject a bad name before any file is read
  opt.state_dtype = vm["state-dtype"].as<std::string>();
  opt.weight_dtype_name = vm["weight-dtype"].as<std::string>();
  opt.weight_dtype = resolve_weight_dtype(opt.weight_dtype_name, "--weight-dtype");
  opt.contexts =
      vm.count("context") ? vm["context"].as<std::vector<int64_t>>() : std::vector<int64_t>{8192, 32768, 131072};
  for (int64_t c : opt.contexts) {
    if (c <= 0) throw InputError("--context must be > 0 (got " + std::to_string(c) + ")");
    if (c > kMaxContextTokens) throw InputError("--context must be <= 2^40 tokens (got " + std::to_string(c) + ")");
  }
  opt.images = vm["images"].as<int>();
  if (opt.images < 0) throw InputError("--images must be >= 0");
  parse_image_size(vm["image-size"].as<std::string>(), &opt.image_width, &opt.image_height);
  opt.par.tp = vm["tp"].as<int>();
  opt.par.dcp = vm["dcp"].as<int>();
  opt.par.dp = vm["dp"].as<int>();
  opt.par.pp = vm["pp"].as<int>();
  opt.par.ep = vm["ep"].as<int>();
  if (opt.par.ep < 0) throw InputError("--ep must be >= 1, or 0 for none (got " + std::to_string(opt.par.ep) + ")");
  opt.par.expert_parallel = vm["enable-expert-parallel"].as<bool>() || opt.par.ep > 0;
  opt.decode_tp = vm["decode-tp"].as<int>();
  if (opt.decode_tp < 0) throw InputError("--decode-tp must be >= 1");
  opt.engine = parse_engine(vm["engine"].as<std::string>(), "--engine");
  if (opt.par.ep > 0) {
    const std::string why = explicit_ep_problem(opt.par.ep, static_cast<int64_t>(opt.par.dp) * opt.par.tp, opt.engine);
    if (!why.empty()) throw InputError("--ep " + std::to_string(opt.par.ep) + ": " + why);
  }
  if (vm.count("gpu-memory-utilization")) {
    const double f = vm["gpu-memory-utilization"].as<double>();
    if (!(f > 0.0 && f <= 1.0))
      throw InputError("--gpu-memory-utilization must be in (0, 1] (got " + (std::ostringstream() << f).str() + ")");
    if (!vm.count("gpu")) throw InputError("--gpu-memory-utilization needs --gpu (it sets the GPU's memory share)");
    opt.memory_fraction = f;
  }
  if (vm.count("activation-reserve"))
    opt.reserve_bytes = parse_bytes(vm["activation-reserve"].as<std::string>(), "--activation-reserve");
  const std::string bs = vm["block-size"].as<std::string>();
  if (bs != "auto") {
    try {
      size_t used = 0;
      opt.block_size = std::stoi(bs, &used);
      if (used != bs.size()) throw std::invalid_argument(bs);
    } catch (const std::exception&) {
      throw InputError("--block-size: expected a number of tokens or 'auto' (got '" + bs + "')");
    }
    if (opt.block_size <= 0) throw InputError("--block-size must be > 0 (got " + bs + ")");
    if (opt.block_size > kMaxBlockSize)
      throw InputError("--block-size must be <= " + std::to_string(kMaxBlockSize) + " tokens (got " + bs + ")");
  }
  opt.cla = vm["cla"].as<int>();
  if (opt.cla != 1 && opt.cla != 2 && opt.cla != 3) throw InputError("--cla must be 1, 2 or 3");
  opt.yoco_window = vm["yoco-window"].as<int>();
  if (opt.yoco_window < 0) throw InputError("--yoco-window must be >= 0");
  const std::string format = vm["format"].as<std::string>();
  if (format != "table" && format != "json" && format != "csv")
    throw InputError("--format: unknown format '" + format + "' (known: table, json, csv)");
  if (vm.count("gpu") || vm.count("link")) {
    const HardwareCatalog hw = load_hardware_catalog(vm["hardware-dir"].as<std::string>());
    if (vm.count("gpu")) opt.gpu = hw.gpu(vm["gpu"].as<std::string>());
    if (vm.count("link")) opt.link = hw.link(vm["link"].as<std::string>());
  }

  if (vm["recompute"].as<bool>() && !vm.count("gpu")) throw InputError("--recompute needs --gpu");
  if (vm["recompute-chunk"].as<int64_t>() < 1) throw InputError("--recompute-chunk must be >= 1");
  if (vm["recompute"].as<bool>()) {
    // Before any output: the context lengths asked for are more prefill steps than a report prices.
    for (int64_t c : opt.contexts) check_recompute_chunks(c, vm["recompute-chunk"].as<int64_t>(), "--context");
  }
  if (vm.count("tier") && !vm["recompute"].as<bool>()) throw InputError("--tier needs --recompute");
  // A config that fails does not stop the others: they are printed, the errors follow on stderr, and
  // the exit code is 2. With no config left there is nothing to print: the (last) error is thrown.
  std::vector<SizeReport> reports;
  std::vector<std::string> errors;
  for (const auto& path : vm["config"].as<std::vector<std::string>>()) {
    try {
      ModelSpec spec = read_model_config(path);
      if (opt.cla > 1) apply_cla(spec, opt.cla);
      if (opt.yoco_window > 0) apply_yoco(spec, opt.yoco_window);
      reports.push_back(build_size_report(spec, opt));
    } catch (const InputError& e) {
      errors.push_back(e.what());
    }
  }
  if (reports.empty()) {
    for (size_t i = 0; i + 1 < errors.size(); ++i) std::cerr << "kvsim: error: " << errors[i] << "\n";
    throw InputError(errors.back());
  }
  if (format == "json")
    print_size_json(reports, opt, out);
  else if (format == "csv")
    print_size_csv(reports, opt, out);
  else
    print_size_table(reports, opt, out);
  if (vm["recompute"].as<bool>()) {
    const std::string hw_dir = vm["hardware-dir"].as<std::string>();
    const HardwareCatalog hw = load_hardware_catalog(hw_dir);
    std::vector<TierSpec> tiers;
    if (vm.count("tier"))
      for (const auto& t : vm["tier"].as<std::vector<std::string>>()) tiers.push_back(hw.tier(t));
    else
      for (const auto& [name, t] : hw.tiers) tiers.push_back(t);
    const int64_t chunk = vm["recompute-chunk"].as<int64_t>();
    if (chunk < 1) throw InputError("--recompute-chunk must be >= 1");
    for (const SizeReport& r : reports) print_recompute_section(r, opt, hw_dir, tiers, chunk, out);
  }
  if (errors.empty()) return 0;
  out.flush();
  for (const auto& e : errors) std::cerr << "kvsim: error: " << e << "\n";
  return 2;
}

}  // namespace kvsim
