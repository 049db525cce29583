#include "sim/app/step_command.h"

#include <algorithm>
#include <boost/program_options.hpp>

#include "sim/app/commands.h"
#include "sim/app/simulation.h"
#include "sim/app/step_report.h"
#include "sim/core/errors.h"
#include "sim/scenario/scenario.h"

namespace po = boost::program_options;

namespace kvsim {
namespace {

// The most requests (decodes, prefill chunks) one priced step may hold: far above any engine's batch (vLLM's
// max_num_seqs 1,024), low enough that the shape is built in moments and no count overflows.
constexpr int64_t kMaxStepRequests = 1 << 20;

int64_t non_negative(const po::variables_map& vm, const char* key) {
  const int64_t v = vm[key].as<int64_t>();
  if (v < 0) throw InputError(std::string("step: --") + key + " must be >= 0 (got " + std::to_string(v) + ")");
  return v;
}

void at_most_requests(int64_t v, const char* key) {
  if (v > kMaxStepRequests)
    throw InputError(std::string("step: --") + key + " must be <= " + std::to_string(kMaxStepRequests) + " (got " +
                     std::to_string(v) + ")");
}

}  // namespace

int run_step_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "kvsim step SCENARIO.yaml [options]\n\nPrice one engine step with the latency model the scenario's pool runs "
      "with, split by operator (calibrated model) or pipeline stage (PP). The batch: --decode requests, each with "
      "--context tokens cached, plus --prefills chunks of --prefill tokens after --prefill-cached computed ones. "
      "Repeat --decode for one line per batch size (a TPOT-against-batch curve). Times are per step of one "
      "instance (one GPU of its TP group); the per-step overhead is the engine's (models/latency/overhead.csv). "
      "Not in the step: a hybrid model's prefix-cache state copies (a run adds them where a step crosses a block)",
      kHelpLineLength, kHelpLineLength / 2);
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("set", po::value<std::vector<std::string>>()->composing(),
     "override a scenario key: --set engine.tensor_parallel_size=4 (repeatable)")
    ("pool", po::value<std::string>(), "the cluster pool whose engine prices the step (default: the first)")
    ("decode", po::value<std::vector<int64_t>>()->composing(),
     "decode requests in the step; repeat for several lines (default 0 with --prefill, else required)")
    ("context", po::value<int64_t>()->default_value(0),
     "tokens each decode request has in its cache before the step (required with --decode > 0)")
    ("prefill", po::value<int64_t>()->default_value(0), "tokens of each prefill chunk in the step")
    ("prefills", po::value<int64_t>()->default_value(1), "prefill chunks of --prefill tokens each")
    ("prefill-cached", po::value<int64_t>()->default_value(0),
     "tokens computed before each chunk (a later chunk of a long prompt, or a prefix-cache hit)")
    ("scenario", po::value<std::string>(), "scenario YAML file (positional)");
  // clang-format on
  po::positional_options_description pos;
  pos.add("scenario", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string("step: ") + e.what());
  }
  if (vm.count("help")) {
    out << desc << "\n";
    return 0;
  }
  if (!vm.count("scenario"))
    throw InputError("step: no scenario given (try: kvsim step scenarios/quickstart.yaml --decode 32 --context 2048)");
  StepRequest base;
  base.context = non_negative(vm, "context");
  base.prefill_tokens = non_negative(vm, "prefill");
  base.prefills = base.prefill_tokens > 0 ? non_negative(vm, "prefills") : 0;
  base.prefill_cached = non_negative(vm, "prefill-cached");
  at_most_requests(base.prefills, "prefills");
  if (base.prefill_tokens > 0 && base.prefills == 0) throw InputError("step: --prefills must be >= 1 with --prefill");
  if (base.prefill_tokens == 0 && !vm["prefills"].defaulted())
    throw InputError("step: --prefills needs --prefill (the tokens of each chunk)");
  if (base.prefill_tokens == 0 && base.prefill_cached > 0)
    throw InputError("step: --prefill-cached needs --prefill (the tokens of each chunk)");
  std::vector<int64_t> decodes = vm.count("decode") ? vm["decode"].as<std::vector<int64_t>>() : std::vector<int64_t>{};
  if (decodes.empty()) {
    if (base.prefill_tokens == 0)
      throw InputError("step: an empty step; give --decode N --context L, --prefill T, or both");
    decodes.push_back(0);
  }
  for (int64_t d : decodes) {
    if (d < 0) throw InputError("step: --decode must be >= 0 (got " + std::to_string(d) + ")");
    at_most_requests(d, "decode");
    if (d > 0 && base.context < 1)
      throw InputError("step: --decode needs --context >= 1 (the tokens each decode request has cached)");
    if (d == 0 && base.prefill_tokens == 0) throw InputError("step: --decode 0 without --prefill is an empty step");
  }

  const std::vector<std::string> overrides =
      vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  const Scenario s = load_scenario(vm["scenario"].as<std::string>(), overrides);
  size_t pool = 0;
  if (vm.count("pool")) {
    const std::string name = vm["pool"].as<std::string>();
    std::string known;
    for (pool = 0; pool < s.cluster.pools.size() && s.cluster.pools[pool].name != name; ++pool)
      known += (known.empty() ? "" : ", ") + s.cluster.pools[pool].name;
    if (pool == s.cluster.pools.size()) throw InputError("step: --pool: no pool '" + name + "' (known: " + known + ")");
  }
  const PoolModel m = build_pool_model(s, pool);
  const PoolSettings& p = s.cluster.pools[pool];
  // What a run can schedule: a prompt below max_model_len (EngineInstance::submit refuses prompt >=
  // max_model_len) and computed + scheduled <= max_model_len - 1 (the scheduler's cap), so a decode reads at
  // most max_model_len - 2 cached tokens.
  const bool any_decode = std::any_of(decodes.begin(), decodes.end(), [](int64_t d) { return d > 0; });
  if (any_decode && base.context > m.engine.max_model_len - 2)
    throw InputError("step: --context " + std::to_string(base.context) + " is more than a decode can have cached " +
                     "under the engine's max_model_len " + std::to_string(m.engine.max_model_len) + " (at most " +
                     std::to_string(m.engine.max_model_len - 2) + ")");
  if (base.prefill_cached > m.engine.max_model_len - 1 ||
      base.prefill_tokens > m.engine.max_model_len - 1 - base.prefill_cached)  // no overflow of the sum
    throw InputError("step: --prefill-cached " + std::to_string(base.prefill_cached) + " + --prefill " +
                     std::to_string(base.prefill_tokens) +
                     " tokens is more than a prompt can have under the engine's max_model_len " +
                     std::to_string(m.engine.max_model_len) + " (at most " +
                     std::to_string(m.engine.max_model_len - 1) + ")");
  out << "step: " << m.model.name << " on " << m.gpu << ", TP " << p.engine.tensor_parallel_size << ", "
      << p.engine.kind << ", latency model " << m.latency->name() << " (pool " << p.name << ")\n";
  // A run never schedules these; the tool prices them all the same (what a larger setting would cost).
  for (int64_t d : decodes) {
    if (d + base.prefills > m.engine.max_num_seqs)
      out << "note: " << d + base.prefills << " requests exceed the engine's max_num_seqs " << m.engine.max_num_seqs
          << "; priced anyway\n";
    if (d + base.prefills * base.prefill_tokens > m.engine.max_num_batched_tokens)
      out << "note: " << d + base.prefills * base.prefill_tokens
          << " tokens exceed the engine's max_num_batched_tokens " << m.engine.max_num_batched_tokens
          << "; priced anyway\n";
  }
  std::vector<StepRequest> lines;
  for (int64_t d : decodes) {
    StepRequest q = base;
    q.decodes = d;
    lines.push_back(q);
  }
  print_step_table(m, lines, out);
  return 0;
}

}  // namespace kvsim
