#include "sim/app/commands.h"

#include <functional>
#include <map>

#include "sim/app/calibrate_command.h"
#include "sim/app/run_command.h"
#include "sim/app/size_command.h"
#include "sim/app/step_command.h"
#include "sim/app/sweep_command.h"
#include "sim/app/validate_command.h"
#include "sim/core/errors.h"

namespace kvsim {

int dispatch_command(const std::string& name, const std::vector<std::string>& args, std::ostream& out) {
  using Fn = std::function<int(const std::vector<std::string>&, std::ostream&)>;
  static const std::map<std::string, Fn> kCommands = {
      {"bench", run_bench_command},       {"calibrate", run_calibrate_command}, {"run", run_run_command},
      {"size", run_size_command},         {"step", run_step_command},           {"sweep", run_sweep_command},
      {"validate", run_validate_command},
  };
  auto it = kCommands.find(name);
  if (it == kCommands.end()) {
    std::string known;
    for (const auto& [k, v] : kCommands) known += (known.empty() ? "" : ", ") + k;
    throw InputError("unknown command '" + name + "' (known: " + known + ")");
  }
  return it->second(args, out);
}

}  // namespace kvsim
