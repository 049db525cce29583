#include "sim/app/calibrate_command.h"

#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <set>

#include "sim/app/commands.h"
#include "sim/app/simulation.h"
#include "sim/core/errors.h"
#include "sim/model/config_reader.h"
#include "sim/model/sizing.h"
#include "sim/perf/calibration.h"
#include "sim/perf/latency_tables.h"
#include "sim/scenario/hardware_catalog.h"

namespace po = boost::program_options;

namespace kvsim {
namespace {

struct Coef {
  std::string gpu, op, name;
  double value = 0;
  std::string unit;
  int rows = 0;
  ErrorStats err;
};

void print_row(std::ostream& out, const std::string& op, int rows, const std::string& coefs, const ErrorStats& e) {
  char buf[400];
  std::snprintf(buf, sizeof buf, "  %-34s %7d %8.1f %8.1f  %s\n", op.c_str(), rows, e.median * 100, e.p90 * 100,
                coefs.c_str());
  out << buf;
}

std::string num(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

int run_calibrate_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "kvsim calibrate [options]\n\nFit the calibrated latency model on the operator tables and report the fit "
      "error per operator",
      kHelpLineLength, kHelpLineLength / 2);
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("gpu", po::value<std::vector<std::string>>()->composing(),
     "GPU to calibrate; repeat for several (default: every GPU with tables)")
    ("model", po::value<std::string>(), "also fit the attention shapes of this config.json")
    ("tp", po::value<int>()->default_value(1), "tensor-parallel size for --model shapes")
    ("hardware-dir", po::value<std::string>()->default_value(kDefaultHardwareDir), "hardware catalog directory")
    ("tables-dir", po::value<std::string>(), "latency tables (default: <hardware-dir>/../latency)")
    ("out", po::value<std::string>(), "write the coefficients as CSV to this file");
  // clang-format on
  po::variables_map vm;
  try {
    // No positional arguments: an empty description makes a stray word an error, not silently ignored.
    po::store(po::command_line_parser(args).options(desc).positional(po::positional_options_description()).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string("calibrate: ") + e.what());
  }
  if (vm.count("help")) {
    out << desc << "\n";
    return 0;
  }
  const std::string hw_dir = vm["hardware-dir"].as<std::string>();
  const std::string dir = vm.count("tables-dir") ? vm["tables-dir"].as<std::string>() : latency_tables_dir(hw_dir);
  const HardwareCatalog hw = load_hardware_catalog(hw_dir);
  std::vector<std::string> gpus = vm.count("gpu") ? vm["gpu"].as<std::vector<std::string>>() : gpus_with_tables(dir);
  if (gpus.empty()) throw InputError("calibrate: no latency tables under " + dir);
  const int tp = vm["tp"].as<int>();
  if (tp < 1) throw InputError("--tp must be >= 1");
  std::optional<ModelSpec> model;
  if (vm.count("model")) {
    model = read_model_config(vm["model"].as<std::string>());
    check_parallel(*model, Parallel{.tp = tp});  // a TP that splits no head evenly has no shape to fit
  }

  std::vector<Coef> coefs;
  for (const std::string& name : gpus) {
    const GpuSpec& g = hw.gpu(name);
    const LatencyTables t = load_latency_tables(dir, name);
    if (!t.has_gemm()) throw InputError("calibrate: no GEMM table for " + name + " under " + dir);
    const GpuCalibration c = calibrate_gpu(t, g, true);
    out << "gpu " << name << " (" << t.dir << "): " << t.gemm.size() << " GEMM, " << t.context_attention.size()
        << " prefill-attention, " << t.generation_attention.size() << " decode-attention, " << t.allreduce.size()
        << " all-reduce, " << t.moe.size() << " MoE rows\n";
    out << "  operator                              rows  med err%  p90 err%  coefficients\n";
    print_row(out, "gemm: table interpolation (leave-k-out)", c.gemm_holdout ? c.gemm_holdout->count : 0,
              "measured points returned exactly; each interior k column predicted from its neighbours",
              c.gemm_holdout.value_or(ErrorStats{}));
    print_row(out, "gemm: fitted roofline (fallback)", c.gemm.rows,
              "eta_compute " + num("%.3f", c.gemm.eta_compute) + ", eta_memory " + num("%.3f", c.gemm.eta_memory) +
                  ", floor " + num("%.2f", c.gemm.floor_s * 1e6) + " us",
              c.gemm.error);
    coefs.push_back(
        {name, "gemm_roofline", "eta_compute", c.gemm.eta_compute, "fraction of bf16 peak", c.gemm.rows, c.gemm.error});
    coefs.push_back({name, "gemm_roofline", "eta_memory", c.gemm.eta_memory, "fraction of HBM bandwidth", c.gemm.rows,
                     c.gemm.error});
    coefs.push_back({name, "gemm_roofline", "floor", c.gemm.floor_s * 1e6, "us", c.gemm.rows, c.gemm.error});
    if (c.gemm_holdout)
      coefs.push_back({name, "gemm_interpolation", "leave_k_out", 0, "-", c.gemm_holdout->count, *c.gemm_holdout});
    if (c.moe) {
      print_row(out, "moe: fused expert kernel", c.moe->rows,
                "per_call " + num("%.1f", c.moe->per_call_s * 1e6) + " us, eta_memory " +
                    num("%.3f", 1.0 / (c.moe->per_byte_s * g.hbm_bandwidth)) + ", eta_compute " +
                    num("%.3f", 1.0 / (c.moe->per_flop_s * g.bf16_flops)),
                c.moe->error);
      coefs.push_back({name, "moe", "per_call", c.moe->per_call_s * 1e6, "us", c.moe->rows, c.moe->error});
      coefs.push_back({name, "moe", "eta_memory", 1.0 / (c.moe->per_byte_s * g.hbm_bandwidth),
                       "fraction of HBM bandwidth", c.moe->rows, c.moe->error});
      coefs.push_back({name, "moe", "eta_compute", 1.0 / (c.moe->per_flop_s * g.bf16_flops), "fraction of bf16 peak",
                       c.moe->rows, c.moe->error});
    } else {
      out << "  moe: no table for this GPU; priced by the fitted roofline\n";
    }
    out << "  attention achieved efficiency (MLA and unmatched shapes): prefill "
        << num("%.3f", c.attention_prefill_eta) << " of bf16 peak, decode " << num("%.3f", c.attention_decode_eta)
        << " of HBM bandwidth\n";
    coefs.push_back({name, "attention", "prefill_eta", c.attention_prefill_eta, "fraction of bf16 peak", 0, {}});
    coefs.push_back({name, "attention", "decode_eta", c.attention_decode_eta, "fraction of HBM bandwidth", 0, {}});

    // Attention fits per shape: the model's shapes, or a few common ones.
    std::set<std::tuple<int, int, int, int>> shapes;  // heads, kv, head_dim, window (per GPU)
    if (model) {
      for (const auto& l : model->layers) {
        if (l.kind != LayerKind::kFullAttention && l.kind != LayerKind::kSlidingWindow) continue;
        const int hd = l.attn.head_dim > 0 ? l.attn.head_dim : model->head_dim;
        shapes.insert({std::max(1, model->num_attention_heads / tp), std::max(1, l.attn.num_kv_heads / tp), hd,
                       l.kind == LayerKind::kSlidingWindow ? l.attn.window : 0});
      }
    } else {
      shapes = {{32, 8, 128, 0}, {16, 4, 128, 0}, {64, 8, 128, 0}};
    }
    for (const auto& [h, kv, hd, w] : shapes) {
      const std::string shape = std::to_string(h) + "q/" + std::to_string(kv) + "kv/hd" + std::to_string(hd) +
                                (w > 0 ? "/w" + std::to_string(w) : "");
      if (auto p = fit_prefill_attention(t, h, kv, hd, w)) {
        print_row(out, "prefill attention " + shape, p->rows,
                  "a " + num("%.1f", p->per_call_s * 1e6) + " us + " + num("%.3g", p->per_pair_s * 1e9) +
                      " ns/pair + " + num("%.3g", p->per_token_s * 1e9) + " ns/token (table " +
                      std::to_string(p->table_heads) + "q/" + std::to_string(p->table_kv_heads) + "kv)",
                  p->error);
        coefs.push_back({name, "prefill_attention_" + shape, "per_pair", p->per_pair_s * 1e9, "ns", p->rows, p->error});
      }
      if (auto d = fit_decode_attention(t, h, kv, hd, w)) {
        print_row(out, "decode attention " + shape, d->rows,
                  "a " + num("%.1f", d->per_call_s * 1e6) + " us + " + num("%.3g", d->per_request_s * 1e9) +
                      " ns/request + " + num("%.3g", d->per_context_token_s * 1e9) + " ns/context token (table " +
                      std::to_string(d->table_heads) + "q/" + std::to_string(d->table_kv_heads) + "kv)",
                  d->error);
        coefs.push_back({name, "decode_attention_" + shape, "per_context_token", d->per_context_token_s * 1e9, "ns",
                         d->rows, d->error});
      }
    }
    out << "\n";
  }
  if (vm.count("out")) {
    const std::string path = vm["out"].as<std::string>();
    std::ofstream f(path);
    if (!f) throw InputError("--out: cannot write " + path);
    f << "# Written by `kvsim calibrate`; fit errors are |predicted - measured| / measured over the table rows.\n";
    f << "gpu,operator,coefficient,value,unit,rows,median_rel_err,p90_rel_err\n";
    for (const Coef& c : coefs)
      f << c.gpu << "," << c.op << "," << c.name << "," << num("%.6g", c.value) << "," << c.unit << "," << c.rows << ","
        << num("%.4f", c.err.median) << "," << num("%.4f", c.err.p90) << "\n";
    if (!f.flush()) throw InputError("--out: writing " + path + " failed (disk full?)");
    out << "wrote " << path << "\n";
  }
  return 0;
}

}  // namespace kvsim
