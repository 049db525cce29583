// `kvsim run` end to end: determinism, outputs, and bad input (exit code 2, nothing half-written).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/app/simulation.h"
#include "sim/model/config_reader.h"
#include "sim/model/json.h"
#include "sim/scenario/scenario.h"
#include "tests/app/cli_runner.h"

namespace kvsim {
namespace {

using testing::run_kvsim;
namespace fs = std::filesystem;

std::string tmp(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("kvsim_run_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The summary without its one wall-clock field.
std::string without_wall_time(std::string json) {
  const auto p = json.find("\"wall_s\"");
  if (p == std::string::npos) return json;
  const auto e = json.find_first_of(",\n}", p);
  return json.erase(p, e - p);
}

const char* kSmall = "scenarios/quickstart.yaml --set workload.trace.limit=200 -q";

TEST(RunDeterminism, SameScenarioAndSeedGiveIdenticalSummaries) {
  const std::string a = tmp("a.json"), b = tmp("b.json");
  ASSERT_EQ(run_kvsim(std::string("run ") + kSmall + " --summary-json " + a + " --out " + tmp("a.h5")).exit_code, 0);
  ASSERT_EQ(run_kvsim(std::string("run ") + kSmall + " --summary-json " + b + " --out " + tmp("b.h5")).exit_code, 0);
  const std::string ja = slurp(a), jb = slurp(b);
  ASSERT_FALSE(ja.empty());
  EXPECT_EQ(without_wall_time(ja), without_wall_time(jb));
  const JsonValue da = parse_json(ja, a), db = parse_json(jb, b);
  EXPECT_EQ(da.find("sim")->find("fingerprint")->str(), db.find("sim")->find("fingerprint")->str());
  EXPECT_EQ(da.find("requests")->find("count")->integer(), 200);
}

TEST(RunDeterminism, AnotherSeedChangesSyntheticRuns) {
  const std::string s =
      "run scenarios/bench-poisson-1m.yaml -q --set workload.synthetic.rate=20 "
      "--set workload.synthetic.num_requests=50 --summary-json ";
  ASSERT_EQ(run_kvsim(s + tmp("s1.json")).exit_code, 0);
  ASSERT_EQ(run_kvsim(s + tmp("s2.json") + " --set seed=99").exit_code, 0);
  const JsonValue a = parse_json(slurp(tmp("s1.json")), "a"), b = parse_json(slurp(tmp("s2.json")), "b");
  EXPECT_NE(a.find("sim")->find("fingerprint")->str(), b.find("sim")->find("fingerprint")->str());
}

TEST(RunOutputs, SummaryHasEveryRequiredField) {
  const std::string p = tmp("fields.json");
  auto r = run_kvsim(std::string("run ") + kSmall + " --summary-json " + p + " --out " + tmp("fields.h5"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const JsonValue d = parse_json(slurp(p), p);
  for (const char* k : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "queue_ms"})
    for (const char* q : {"mean", "p50", "p90", "p99"}) EXPECT_NE(d.find(k)->find(q), nullptr) << k << "." << q;
  for (const char* k : {"requests_per_s", "output_tokens_per_s"}) EXPECT_NE(d.find("throughput")->find(k), nullptr);
  for (const char* k :
       {"prompt_tokens", "hit_tokens", "token_hit_rate", "queries", "hits", "hit_rate", "preempted_queries",
        "preempted_hits", "queries_blocks", "hits_blocks", "block_hit_rate", "hit_requests"})
    EXPECT_NE(d.find("prefix_cache")->find(k), nullptr) << k;
  EXPECT_NE(d.find("concurrency")->find("peak"), nullptr);
  EXPECT_NE(d.find("concurrency")->find("mean"), nullptr);
  EXPECT_NE(d.find("preemptions"), nullptr);
  EXPECT_NE(d.find("kv_blocks")->find("total"), nullptr);
  EXPECT_NE(d.find("kv_blocks")->find("peak_used"), nullptr);
  EXPECT_NE(d.find("sim")->find("events"), nullptr);
  EXPECT_NE(d.find("sim")->find("wall_s"), nullptr);
}

TEST(RunBadInput, UnknownScenarioKey) {
  auto r = run_kvsim("run scenarios/quickstart.yaml -q --set engine.block_szie=16");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("scenarios/quickstart.yaml: engine.block_szie: unknown key"), std::string::npos) << r.out;
}

TEST(RunBadInput, WrongUnit) {
  auto r = run_kvsim("run scenarios/quickstart.yaml -q --set engine.activation_reserve=4GB/s");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("engine.activation_reserve"), std::string::npos) << r.out;
}

TEST(RunBadInput, ModelThatDoesNotFitLeavesNoFile) {
  // DeepSeek-V3 weighs 1.22 TiB in BF16: nothing is left for the cache on one 80 GB H100.
  const std::string h5 = tmp("nofit.h5");
  fs::remove(h5);
  auto r = run_kvsim("run scenarios/quickstart.yaml -q --set model=models/deepseek-v3.json --out " + h5);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("does not fit"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(h5));
  EXPECT_FALSE(fs::exists(h5 + ".tmp"));
}

TEST(RunBadInput, MalformedTraceLineNamesTheLine) {
  const std::string trace = tmp("bad.jsonl");
  std::ofstream(trace) << R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]})"
                          "\n"
                       << R"({"timestamp": 10, "input_length": oops})"
                          "\n"
                       << R"({"timestamp": 20, "input_length": 100, "output_length": 5, "hash_ids": [3]})"
                          "\n";
  const std::string h5 = tmp("badtrace.h5");
  fs::remove(h5);
  auto r = run_kvsim("run scenarios/quickstart.yaml -q --out " + h5 + " --set workload.trace.path=" + trace);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find(trace + ":2"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(h5));
  // --skip-bad-lines counts and skips it; the two good requests run.
  const std::string js = tmp("skip.json");
  auto ok = run_kvsim("run scenarios/quickstart.yaml --skip-bad-lines --out " + tmp("skip.h5") + " --summary-json " +
                      js + " --set workload.trace.path=" + trace);
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("skipped      1 malformed trace lines (not requests)"), std::string::npos) << ok.out;
  EXPECT_EQ(parse_json(slurp(js), js).find("requests")->find("count")->integer(), 2);
  // The count reaches the summary JSON, and a quiet run's stderr.
  EXPECT_EQ(parse_json(slurp(js), js).find("requests")->find("skipped_trace_lines")->integer(), 1);
  auto quiet = run_kvsim("run scenarios/quickstart.yaml -q --skip-bad-lines --set workload.trace.path=" + trace);
  EXPECT_EQ(quiet.exit_code, 0) << quiet.out;
  EXPECT_NE(quiet.out.find("kvsim: skipped 1 malformed trace lines"), std::string::npos) << quiet.out;
}

TEST(RunBadInput, AnOutputNamingAnInputOrASpecialFileIsRefused) {
  // A copy of the quickstart scenario; --summary-json on it would have replaced it with the summary.
  const std::string scen = tmp("victim.yaml");
  fs::copy_file("scenarios/quickstart.yaml", scen, fs::copy_options::overwrite_existing);
  const std::string before = slurp(scen);
  auto r = run_kvsim("run " + scen + " -q --set workload.trace.limit=10 --summary-json " + scen);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find(scen + ": is the scenario (--summary-json (output.summary_json) would overwrite it)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(slurp(scen), before);
  // A symbolic link (and likewise a device or FIFO) would be replaced by a plain file: refused, the
  // link and its target left as they were.
  const std::string target = tmp("target.csv"), link = tmp("link.csv");
  std::ofstream(target) << "kept\n";
  fs::remove(link);
  fs::create_symlink(target, link);
  auto l = run_kvsim("run scenarios/quickstart.yaml -q --set workload.trace.limit=10 --csv " + link);
  EXPECT_EQ(l.exit_code, 2);
  EXPECT_NE(l.out.find(link + ": not a plain file"), std::string::npos) << l.out;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target), "kept\n");
}

TEST(RunHelp, DocumentsOptions) {
  auto r = run_kvsim("run --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* o : {"--set", "--out", "--summary-json", "--skip-bad-lines"})
    EXPECT_NE(r.out.find(o), std::string::npos);
  auto top = run_kvsim("--help");
  EXPECT_EQ(top.exit_code, 0);
  for (const char* c : {"size", "run", "bench"}) EXPECT_NE(top.out.find(c), std::string::npos);
}

// SGLang starts with a KV pool smaller than the context and clips requests to it (tp_worker.py:
// max_req_len = min(context_len - 1, max_total_num_tokens - 1); max_new_tokens clipped to max_req_len -
// input). Pool: 33 blocks of 16, one of them the null block, 512 tokens; context 512: max_req_len 511, so
// a 467-token prompt asking for 45 tokens gets 511 - 467 = 44. (kvsim refused this configuration before.)
TEST(SglangContext, APoolBelowTheContextClipsRequestsAsSglangDoes) {
  const std::string dir = ::testing::TempDir();
  const std::string yaml = dir + "sglang_pool.yaml", csv = dir + "sglang_pool.csv";
  std::ofstream(yaml) << "model: " << KVSIM_SOURCE_DIR
                      << "/models/qwen3-8b.json\ngpu: h100-sxm\nhardware_dir: " << KVSIM_SOURCE_DIR
                      << "/models/hardware\nengine: {max_model_len: 512, block_size: 16, num_gpu_blocks: 33, "
                         "enable_prefix_caching: false, scheduler: sglang}\nworkload:\n  synthetic: {kind: poisson, "
                         "rate: 1, num_requests: 2, input_tokens: 467, output_tokens: 45}\n";
  // Every reader of the resolved engine sees the clipped context (validate's max_model_len check too).
  const Scenario s = load_scenario(yaml);
  EXPECT_EQ(resolve_engine_config(s, read_model_config(s.model)).max_model_len, 511);
  const auto r = run_kvsim("run " + yaml + " -q --csv " + csv);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);  // header: ...,prompt_tokens,output_tokens,requested_output_tokens,...
  int rows = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    ASSERT_GE(f.size(), 8u) << line;
    EXPECT_EQ(f[5], "467");
    EXPECT_EQ(f[6], "44");
    ++rows;
  }
  EXPECT_EQ(rows, 2);
}

}  // namespace
}  // namespace kvsim
