// `kvsim sweep` end to end: the table is byte-identical however the points were spread (-j 1, -j 2,
// two shards + merge), a partial sweep resumes running only the missing points, a failing point is
// reported while the others complete, and bad sweep files exit 2 naming the point and key.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/sweep/sweep_test_util.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::run_kvsim;
using testing::SweepDir;

TEST(SweepCommand, TableIsByteIdenticalWhateverTheThreadsOrShards) {
  SweepDir d("identical");
  const std::string sweep = d.write("six.yaml", testing::kSixPoints);
  const auto j1 = run_kvsim("sweep " + sweep + " -j 1 --out " + d.path("j1"));
  ASSERT_EQ(j1.exit_code, 0) << j1.out;
  EXPECT_NE(j1.out.find("6 of 6 points (6 run, 0 skipped, 0 failed)"), std::string::npos) << j1.out;
  const auto j2 = run_kvsim("sweep " + sweep + " -j 2 --out " + d.path("j2"));
  ASSERT_EQ(j2.exit_code, 0) << j2.out;
  const auto s0 = run_kvsim("sweep " + sweep + " --shard 0/2 --out " + d.path("sh"));
  ASSERT_EQ(s0.exit_code, 0) << s0.out;
  EXPECT_NE(s0.out.find("3 of 6 points (shard 0/2)"), std::string::npos) << s0.out;
  EXPECT_FALSE(fs::exists(d.path("sh/table.csv")));
  ASSERT_EQ(run_kvsim("sweep " + sweep + " --shard 1/2 --out " + d.path("sh")).exit_code, 0);
  const auto m = run_kvsim("sweep merge " + d.path("sh"));
  ASSERT_EQ(m.exit_code, 0) << m.out;
  EXPECT_NE(m.out.find("6 points: 6 ok, 0 failed, 0 missing"), std::string::npos) << m.out;

  const std::string table = read_file(d.path("j1/table.csv"));
  EXPECT_EQ(testing::count_lines(table), 7);
  EXPECT_EQ(table.rfind("point,engine.block_size,repeat,seed,status,requests,", 0), 0u) << table;
  EXPECT_EQ(table.find("wall"), std::string::npos);
  EXPECT_EQ(read_file(d.path("j2/table.csv")), table);
  EXPECT_EQ(read_file(d.path("sh/table.csv")), table);
  EXPECT_EQ(read_file(d.path("j2/table.h5")), read_file(d.path("j1/table.h5")));
  EXPECT_EQ(read_file(d.path("sh/table.h5")), read_file(d.path("j1/table.h5")));
  EXPECT_EQ(testing::count_lines(read_file(d.path("j1/wall_times.csv"))), 7);
  // Coarser blocks match less of the shared 800-token prefix.
  EXPECT_NE(table.find("\n0,16,0,"), std::string::npos) << table;
}

TEST(SweepCommand, APartialSweepResumesRunningOnlyTheMissingPoints) {
  SweepDir d("resume");
  const std::string sweep = d.write("six.yaml", testing::kSixPoints);
  const std::string out = d.path("out");
  ASSERT_EQ(run_kvsim("sweep " + sweep + " -j 2 --out " + out).exit_code, 0);
  const std::string table = read_file(out + "/table.csv");
  // As a killed run leaves it: two results missing, a stray temporary file.
  fs::remove(out + "/points/p000001.json");
  fs::remove(out + "/points/p000004.json");
  testing::SweepDir::write_raw(out + "/points/p000004.json.tmp.123.abc", "{partial");
  const auto partial = run_kvsim("sweep merge " + out);
  EXPECT_EQ(partial.exit_code, 1);
  EXPECT_NE(partial.out.find("4 ok, 0 failed, 2 missing"), std::string::npos) << partial.out;
  EXPECT_NE(read_file(out + "/table.csv").find(",missing,"), std::string::npos);
  const auto resumed = run_kvsim("sweep " + sweep + " -j 2 --out " + out);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("(2 run, 4 skipped, 0 failed)"), std::string::npos) << resumed.out;
  EXPECT_EQ(read_file(out + "/table.csv"), table);
  // Another sweep into the same folder is refused.
  const auto other = run_kvsim(
      "sweep " + d.write("o.yaml", "name: o\nbase: base.yaml\naxes: {engine.block_size: [32]}\n") + " --out " + out);
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.out.find("holds another sweep"), std::string::npos) << other.out;
}

TEST(SweepCommand, AFailingPointIsReportedAndTheOthersComplete) {
  SweepDir d("failing");
  // Every point resolves, but variant gone's trace file is not there when its point runs.
  const std::string sweep = d.write("f.yaml",
                                    "name: f\nbase: base.yaml\naxes: {engine.block_size: [16]}\nvariants:\n  ok: []\n"
                                    "  gone: [\"workload={trace: {format: native, path: " +
                                        d.path("no_such_trace.jsonl") + "}}\"]\n");
  const auto r = run_kvsim("sweep " + sweep + " -j 2 --out " + d.path("out"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("point 1 (engine.block_size=16,variant=gone)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 points: 1 ok, 1 failed, 0 missing"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(d.path("out/points/p000000.json")));
  EXPECT_TRUE(fs::exists(d.path("out/points/p000001.failed.json")));
  const std::string table = read_file(d.path("out/table.csv"));
  EXPECT_NE(table.find(",failed,"), std::string::npos) << table;
}

TEST(SweepCommand, AnEmptyOutIsRefusedNotTheWorkingDirectory) {
  SweepDir d("empty_out");
  const auto r = run_kvsim("sweep " + d.write("e.yaml", "name: e\nbase: base.yaml\naxes: {engine.block_size: [16]}\n") +
                           " --out ''");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("sweep: --out: empty"), std::string::npos) << r.out;
}

TEST(SweepCommand, APointThatCannotResolveStopsTheSweepBeforeAnyRuns) {
  SweepDir d("unresolved");
  // 2 % of an H100 cannot hold Qwen3-8B's weights; a GPU the catalog does not know. Both are found when
  // the points are checked, before any runs: exit 2, one line naming the point, nothing written.
  const auto small = run_kvsim(
      "sweep " + d.write("m.yaml", "name: m\nbase: base.yaml\naxes: {engine.gpu_memory_utilization: [0.9, 0.02]}\n") +
      " --out " + d.path("out_m"));
  EXPECT_EQ(small.exit_code, 2) << small.out;
  EXPECT_NE(small.out.find("point 1 (engine.gpu_memory_utilization=0.02)"), std::string::npos) << small.out;
  EXPECT_NE(small.out.find("engine.gpu_memory_utilization: qwen3-8b does not fit on h100-sxm"), std::string::npos)
      << small.out;
  EXPECT_EQ(testing::count_lines(small.out), 1) << small.out;
  EXPECT_FALSE(fs::exists(d.path("out_m/points")));
  const auto gpu = run_kvsim("sweep " + d.write("g.yaml", "name: g\nbase: base.yaml\naxes: {gpu: [h100-sxm, h900]}\n") +
                             " --out " + d.path("out_g"));
  EXPECT_EQ(gpu.exit_code, 2) << gpu.out;
  EXPECT_NE(gpu.out.find("point 1 (gpu=h900)"), std::string::npos) << gpu.out;
  EXPECT_NE(gpu.out.find("gpu: unknown GPU 'h900'"), std::string::npos) << gpu.out;
  EXPECT_FALSE(fs::exists(d.path("out_g/points")));
}

TEST(SweepCommand, BadSweepFilesExitTwoNamingThePointAndKey) {
  SweepDir d("bad");
  const auto bad_value =
      run_kvsim("sweep " + d.write("a.yaml", "base: base.yaml\naxes: {engine.block_size: [16, -4]}\n"));
  EXPECT_EQ(bad_value.exit_code, 2);
  EXPECT_NE(bad_value.out.find("point 1 (engine.block_size=-4)"), std::string::npos) << bad_value.out;
  EXPECT_EQ(testing::count_lines(bad_value.out), 1) << bad_value.out;
  const auto bad_key = run_kvsim("sweep " + d.write("b.yaml", "base: base.yaml\naxes: {engine.nope: [1]}\n"));
  EXPECT_EQ(bad_key.exit_code, 2);
  EXPECT_NE(bad_key.out.find("engine.nope"), std::string::npos) << bad_key.out;
  const auto bad_file = run_kvsim("sweep " + d.write("c.yaml", "base: base.yaml\ncombine: mesh\n"));
  EXPECT_EQ(bad_file.exit_code, 2);
  EXPECT_NE(bad_file.out.find("c.yaml: combine"), std::string::npos) << bad_file.out;
  EXPECT_EQ(run_kvsim("sweep " + d.path("c.yaml") + " --shard 2/2").exit_code, 2);
  EXPECT_EQ(run_kvsim("sweep merge " + d.path("nowhere")).exit_code, 2);
  // Nothing ran: no folder was created for an invalid sweep.
  EXPECT_FALSE(fs::exists("runs/a"));
}

TEST(SweepCommand, HelpAndListDescribeTheSweep) {
  SweepDir d("help");
  const auto h = run_kvsim("sweep --help");
  EXPECT_EQ(h.exit_code, 0);
  for (const char* s : {"--jobs", "--shard", "--out", "merge DIR", "combine", "variants", "seeds", "mpirun"})
    EXPECT_NE(h.out.find(s), std::string::npos) << s;
  const auto l = run_kvsim("sweep " + d.write("six.yaml", testing::kSixPoints) + " --list");
  EXPECT_EQ(l.exit_code, 0);
  EXPECT_EQ(testing::count_lines(l.out), 6) << l.out;
  EXPECT_NE(l.out.find("5\tengine.block_size=256,repeat=1\tseed="), std::string::npos) << l.out;
}

}  // namespace
}  // namespace kvsim
