#include "sim/metrics/hdf5_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace kvsim {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("kvsim_hdf5_test_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir;
}

// In time order, as a simulation emits them: request 43 arrives at 0 and is rejected at once; 42 arrives
// at 100 ms, a step runs 100-150 ms, 42 finishes at 350 ms.
RunCollector sample_collector() {
  RunCollector c;
  RequestRecord u;
  u.id = RequestId(43);
  u.arrival = SimTime::zero();  // arrived at t = 0: "never scheduled" must not read as 0 s
  u.prompt_tokens = 10;
  c.on_arrival(u.id, u.arrival);
  c.on_request_done(u);  // unfinished, never scheduled
  RequestRecord r;
  r.id = RequestId(42);
  r.arrival = SimTime::zero() + Duration::ms(100);
  r.first_scheduled = r.arrival + Duration::ms(2);
  r.first_token = r.arrival + Duration::ms(50);
  r.finish = r.arrival + Duration::ms(250);
  r.prompt_tokens = 1000;
  r.output_tokens = 5;
  r.cached_tokens = 512;
  r.cause = MissCause::kEvicted;
  r.saved_state_positions = {512, 768};
  r.finished = true;
  c.on_arrival(r.id, r.arrival);
  StepRecord s;
  s.start = SimTime::zero() + Duration::ms(100);
  s.end = SimTime::zero() + Duration::ms(150);
  s.num_prefill_tokens = 488;
  s.running = 1;
  s.kv_blocks_used = 63;
  c.on_step(s);
  c.on_request_done(r);
  return c;
}

RunMeta sample_meta() {
  RunMeta m;
  m.scenario_yaml = "engine:\n  block_size: 16\n";
  m.seed = 7;
  m.events = 99;
  m.fingerprint = 0xfeedbeef01234567ULL;
  return m;
}

}  // namespace

TEST(Hdf5Writer, DatasetsAndMetaReadBack) {
  const fs::path dir = fresh_dir("readback");
  const std::string path = (dir / "nested" / "run.h5").string();  // parent dirs are created
  const RunCollector c = sample_collector();
  const RunSummary s = c.summarize({.events = 99, .wall_s = 0.1, .fingerprint = 0xfeedbeef01234567ULL});
  write_run_file(path, c, s, sample_meta());
  ASSERT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  RunFileReader rd(path);
  EXPECT_EQ(rd.read_ints("/requests/id"), (std::vector<int64_t>{43, 42}));  // on_request_done order
  const auto arrival = rd.read_doubles("/requests/arrival_s");
  EXPECT_DOUBLE_EQ(arrival[1], 0.1);
  const auto finish = rd.read_doubles("/requests/finish_s");
  EXPECT_DOUBLE_EQ(finish[1], 0.35);
  EXPECT_TRUE(std::isnan(finish[0]));                                          // unfinished
  EXPECT_TRUE(std::isnan(rd.read_doubles("/requests/first_scheduled_s")[0]));  // never scheduled
  EXPECT_EQ(rd.read_ints("/requests/cached_tokens"), (std::vector<int64_t>{0, 512}));
  EXPECT_EQ(rd.read_ints("/requests/miss_cause")[1], static_cast<int64_t>(MissCause::kEvicted));
  EXPECT_EQ(rd.read_string_attribute("/requests/miss_cause", "names"),
            "none,never_seen,evicted,partial_block,different_image,no_saved_state,state_evicted,evicted_all_tiers");
  EXPECT_EQ(rd.read_ints("/requests/finished"), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(rd.read_ints("/requests/saved_state_positions"), (std::vector<int64_t>{512, 768}));
  EXPECT_EQ(rd.read_ints("/requests/saved_state_offsets"), (std::vector<int64_t>{0, 0, 2}));
  EXPECT_EQ(rd.read_ints("/steps/num_prefill_tokens"), (std::vector<int64_t>{488}));
  EXPECT_EQ(rd.read_ints("/timeseries/kv_blocks_used"), (std::vector<int64_t>{63}));
  // At the step end (150 ms) only 42 (100-350 ms) is in flight: 43 was turned away at t = 0.
  EXPECT_EQ(rd.read_ints("/timeseries/concurrency"), (std::vector<int64_t>{1}));
  EXPECT_EQ(rd.read_string_attribute("/requests/arrival_s", "units"), "s");

  EXPECT_EQ(rd.read_string_attribute("/meta", "fingerprint"), "feedbeef01234567");
  EXPECT_EQ(rd.read_string_attribute("/meta", "scenario"), "engine:\n  block_size: 16\n");
  EXPECT_EQ(rd.read_int_attribute("/meta", "seed"), 7);
  EXPECT_EQ(rd.read_int_attribute("/meta", "events"), 99);
  EXPECT_EQ(rd.read_string_attribute("/meta", "version"), KVSIM_VERSION);
  EXPECT_EQ(rd.read_int_attribute("/meta", "complete"), 1);
  EXPECT_EQ(rd.read_string_attribute("/summary", "json"), summary_to_json(s, {.include_wall_time = false}));
  EXPECT_DOUBLE_EQ(rd.read_double_attribute("/summary", "ttft_p50_ms"), 50.0);
  EXPECT_TRUE(rd.exists("/steps/end_s"));
  // /transfers is always there, empty without disaggregation.
  EXPECT_TRUE(rd.exists("/transfers/bytes"));
  EXPECT_TRUE(rd.read_ints("/transfers/bytes").empty());
  EXPECT_FALSE(rd.exists("/nope"));
  EXPECT_THROW(rd.read_doubles("/requests/nope"), OutputError);
  fs::remove_all(dir);
}

TEST(Hdf5Writer, EmptyRunStillWritesEveryGroup) {
  const fs::path dir = fresh_dir("empty");
  const std::string path = (dir / "run.h5").string();
  RunCollector c;
  write_run_file(path, c, c.summarize({}), RunMeta{});
  RunFileReader rd(path);
  EXPECT_TRUE(rd.read_ints("/requests/id").empty());
  EXPECT_TRUE(rd.read_doubles("/timeseries/time_s").empty());
  EXPECT_EQ(rd.read_ints("/requests/saved_state_offsets"), (std::vector<int64_t>{0}));
  fs::remove_all(dir);
}

TEST(Hdf5Writer, RewritingReplacesTheOldFile) {
  const fs::path dir = fresh_dir("rewrite");
  const std::string path = (dir / "run.h5").string();
  RunCollector empty;
  write_run_file(path, empty, empty.summarize({}), RunMeta{});
  const RunCollector c = sample_collector();
  write_run_file(path, c, c.summarize({}), sample_meta());
  EXPECT_EQ(RunFileReader(path).read_ints("/requests/id").size(), 2u);
  fs::remove_all(dir);
}

// The parent "directory" is a regular file: creating the directory fails; nothing is left behind.
TEST(Hdf5Writer, UnwritablePathFailsClearlyAndLeavesNoFile) {
  const fs::path dir = fresh_dir("unwritable");
  fs::create_directories(dir);
  const fs::path blocker = dir / "not_a_dir";
  std::ofstream(blocker) << "x";
  const std::string path = (blocker / "run.h5").string();
  RunCollector c;
  try {
    write_run_file(path, c, c.summarize({}), RunMeta{});
    FAIL() << "expected OutputError";
  } catch (const OutputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  fs::remove_all(dir);
}

// The target is an existing non-empty directory: the temporary file is written, the rename fails,
// and the temporary is removed, so neither a run file nor a .tmp file remains.
TEST(Hdf5Writer, TempFileIsRenamedOnlyOnSuccess) {
  const fs::path dir = fresh_dir("rename");
  const fs::path target = dir / "run.h5";
  fs::create_directories(target);
  std::ofstream(target / "keep") << "x";
  RunCollector c;
  EXPECT_THROW(write_run_file(target.string(), c, c.summarize({}), RunMeta{}), OutputError);
  EXPECT_TRUE(fs::is_directory(target));
  EXPECT_FALSE(fs::exists(target.string() + ".tmp"));
  fs::remove_all(dir);
}

TEST(Hdf5Writer, ReaderRejectsMissingFile) { EXPECT_THROW(RunFileReader("/nonexistent/kvsim/run.h5"), OutputError); }

}  // namespace kvsim

namespace kvsim {

// Object modification times are not recorded, so identical inputs give byte-identical files.
TEST(Hdf5Writer, IdenticalRunsGiveIdenticalFiles) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kvsim_hdf5_test_identical_" + std::to_string(getpid()));
  fs::remove_all(dir);
  const RunCollector c = sample_collector();
  const RunSummary s = c.summarize({.events = 99, .wall_s = 0.0, .fingerprint = 1});
  write_run_file((dir / "a.h5").string(), c, s, sample_meta());
  write_run_file((dir / "b.h5").string(), c, s, sample_meta());
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string a = slurp(dir / "a.h5");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, slurp(dir / "b.h5"));
  fs::remove_all(dir);
}

}  // namespace kvsim
