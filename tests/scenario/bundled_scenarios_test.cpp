// Every bundled scenario and sweep file under scenarios/ loads: the READMEs point users at them, so a key
// renamed or a base file moved must fail here, not in a user's first run. A file with `base:` and
// `variants:` or `axes:` is a sweep (sim/scenario/sweep_file.h); its plan must expand to at least one point.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/scenario/scenario.h"
#include "sim/scenario/sweep_file.h"
#include "sim/sweep/sweep_plan.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

TEST(BundledScenarios, EveryScenarioAndSweepFileLoads) {
  int scenarios = 0, sweeps = 0;
  for (const auto& e : fs::recursive_directory_iterator("scenarios")) {
    if (!e.is_regular_file() || e.path().extension() != ".yaml") continue;
    const std::string path = e.path().string();
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const std::string yaml = text.str();
    const bool sweep = yaml.find("\nbase:") != std::string::npos || yaml.rfind("base:", 0) == 0;
    try {
      if (sweep) {
        const SweepPlan plan = plan_sweep(load_sweep_file(path));
        EXPECT_FALSE(plan.points.empty()) << path;
        ++sweeps;
      } else {
        load_scenario(path);
        ++scenarios;
      }
    } catch (const std::exception& ex) {
      ADD_FAILURE() << path << ": " << ex.what();
    }
  }
  EXPECT_GE(scenarios, 20);
  EXPECT_GE(sweeps, 3);
}

}  // namespace
}  // namespace kvsim
