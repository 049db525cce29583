// `mpirun -n 2 kvsim sweep` gives the same table, byte for byte, as one local thread. As root,
// Open MPI needs --allow-run-as-root, and --oversubscribe for more ranks than cores
// (reference/cluster-offload.md §E.3). Skipped in a build without MPI.
#include <gtest/gtest.h>

#include "tests/sweep/sweep_test_util.h"

namespace kvsim {
namespace {

using testing::read_file;
using testing::run_kvsim;
using testing::SweepDir;

TEST(SweepMpi, TwoRanksGiveTheTableOfOneThread) {
#ifndef KVSIM_MPIEXEC
  GTEST_SKIP() << "built without MPI";
#else
  SweepDir d("mpi");
  const std::string sweep = d.write("six.yaml", testing::kSixPoints);
  ASSERT_EQ(run_kvsim("sweep " + sweep + " -j 1 --out " + d.path("j1")).exit_code, 0);
  const std::string cmd = std::string("cd ") + KVSIM_SOURCE_DIR + " && " + KVSIM_MPIEXEC +
                          " --allow-run-as-root --oversubscribe -n 2 " + KVSIM_BINARY + " sweep " + sweep + " --out " +
                          d.path("mpi") + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("6 points on 2 ranks (6 run, 0 skipped, 0 failed)"), std::string::npos) << out;
  EXPECT_EQ(read_file(d.path("mpi/table.csv")), read_file(d.path("j1/table.csv")));
  EXPECT_EQ(read_file(d.path("mpi/table.h5")), read_file(d.path("j1/table.h5")));
#endif
}

}  // namespace
}  // namespace kvsim
