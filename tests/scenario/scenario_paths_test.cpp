// Input paths inside a scenario resolve against the scenario file's folder, then its parent folders,
// then the current directory (scenario.h, load_scenario).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim/scenario/scenario.h"

namespace kvsim {
namespace {
namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string scenario_text(const std::string& model, const std::string& trace) {
  return "model: " + model + "\ngpu: h100-sxm\nworkload:\n  trace: {format: native, path: " + trace + "}\n";
}

TEST(ScenarioPaths, RelativeInputPathsResolveAgainstTheScenarioFolderThenItsParents) {
  const fs::path root = fs::temp_directory_path() / "kvsim-scenario-paths";
  fs::remove_all(root);
  write(root / "exp" / "run" / "local.json", "{}");
  write(root / "exp" / "traces" / "t.jsonl", "");
  write(root / "exp" / "run" / "a.yaml", scenario_text("local.json", "traces/t.jsonl"));
  const Scenario s = load_scenario((root / "exp" / "run" / "a.yaml").string());
  EXPECT_EQ(s.model, (root / "exp" / "run" / "local.json").string());  // beside the scenario
  ASSERT_TRUE(s.workload.trace);
  EXPECT_EQ(s.workload.trace->path, (root / "exp" / "traces" / "t.jsonl").string());  // a parent's

  // A path found nowhere stays as written (the current directory's), for the reader to name.
  write(root / "exp" / "run" / "b.yaml", scenario_text("no-such-model.json", "traces/t.jsonl"));
  EXPECT_EQ(load_scenario((root / "exp" / "run" / "b.yaml").string()).model, "no-such-model.json");
  // Absolute paths are untouched.
  write(root / "exp" / "run" / "c.yaml", scenario_text("/abs/m.json", "traces/t.jsonl"));
  EXPECT_EQ(load_scenario((root / "exp" / "run" / "c.yaml").string()).model, "/abs/m.json");
  fs::remove_all(root);
}

TEST(ScenarioPaths, ATopologyFileResolvesLikeTheOtherInputs) {
  // cluster.topology given as a file beside the scenario was read from the current directory only.
  const fs::path root = fs::temp_directory_path() / "kvsim-scenario-topology";
  fs::remove_all(root);
  write(root / "topo-chain.yaml", "kind: topology\n");
  write(root / "a.yaml", std::string("model: m.json\ngpu: h100-sxm\ncluster:\n  topology: topo-chain.yaml\n") +
                             "  pools: [{name: p, role: colocated, instances: 1}]\n" +
                             "workload:\n  synthetic: {kind: poisson, rate: 1, num_requests: 1}\n");
  EXPECT_EQ(load_scenario((root / "a.yaml").string()).cluster.topology, (root / "topo-chain.yaml").string());
  // A bare name stays a name (models/topologies/<name>.yaml).
  write(root / "b.yaml", std::string("model: m.json\ngpu: h100-sxm\ncluster:\n  topology: hgx-h100-1node\n") +
                             "  pools: [{name: p, role: colocated, instances: 1}]\n" +
                             "workload:\n  synthetic: {kind: poisson, rate: 1, num_requests: 1}\n");
  EXPECT_EQ(load_scenario((root / "b.yaml").string()).cluster.topology, "hgx-h100-1node");
  fs::remove_all(root);
}

TEST(ScenarioPaths, TheBundledQuickstartRunsFromAnotherWorkingDirectory) {
  // scenarios/quickstart.yaml names models/qwen3-8b.json and a trace under traces/, relative to the
  // repository root, which is a parent of the scenario's folder; the default hardware_dir too.
  const fs::path dir = fs::temp_directory_path() / "kvsim-other-cwd";
  fs::create_directories(dir);
  const std::string out = (dir / "s.json").string();
  const std::string cmd = "cd " + dir.string() + " && " + KVSIM_BINARY + " run " + KVSIM_SOURCE_DIR +
                          "/scenarios/quickstart.yaml --set workload.trace.limit=20 -q --summary-json " + out + " > " +
                          (dir / "log.txt").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream log(dir / "log.txt");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(fs::exists(out)) << text;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvsim
