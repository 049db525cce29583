// analysis/compare.py renders a sweep folder into plots and a one-page HTML report; headless
// Chromium loads the report and every plot in it loads. Skipped without python3 + matplotlib or
// without chromium (Debian's `chromium`).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "tests/sweep/sweep_test_util.h"

namespace kvsim {
namespace {

using testing::read_file;
using testing::run_kvsim;
using testing::SweepDir;

std::string capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

std::string first_available(std::initializer_list<const char*> candidates, const std::string& probe_args) {
  for (const char* c : candidates)
    if (std::system((std::string(c) + " " + probe_args + " >/dev/null 2>&1").c_str()) == 0) return c;
  return "";
}

TEST(CompareReport, HeadlessChromiumLoadsEveryPlotOfTheReport) {
  const std::string python = first_available({"python3", "/usr/bin/python3"}, "-c 'import matplotlib'");
  if (python.empty()) GTEST_SKIP() << "no python3 with matplotlib";
  const std::string chromium = first_available({"chromium", "chromium-browser", "google-chrome"}, "--version");
  if (chromium.empty()) GTEST_SKIP() << "no chromium";
  SweepDir d("compare");
  const std::string sweep = d.write("v.yaml",
                                    "name: v\nbase: base.yaml\naxes: {engine.block_size: [16, 64, 256]}\n"
                                    "variants:\n  cached: []\n  uncached: [engine.enable_prefix_caching=false]\n");
  ASSERT_EQ(run_kvsim("sweep " + sweep + " -j 2 --out " + d.path("out")).exit_code, 0);
  const std::string report = capture("cd " KVSIM_SOURCE_DIR " && " + python + " analysis/compare.py " + d.path("out"));
  ASSERT_NE(report.find("report: "), std::string::npos) << report;
  EXPECT_NE(report.find("(8 plots, 6 points)"), std::string::npos) << report;
  ASSERT_TRUE(std::filesystem::exists(d.path("out/report/token_hit_rate_vs_engine.block_size.png")));
  const std::string html = read_file(d.path("out/report/report.html"));
  EXPECT_NE(html.find("<td>uncached</td>"), std::string::npos);  // the table is on the page

  const std::string dom = capture(chromium +
                                  " --headless --no-sandbox --disable-gpu --virtual-time-budget=10000 --dump-dom "
                                  "file://" +
                                  d.path("out/report/report.html"));
  EXPECT_NE(dom.find("data-images-loaded=\"8/8\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("8 of 8 plots loaded"), std::string::npos);
  // A missing plot is caught by the same check.
  std::filesystem::remove(d.path("out/report/tpot_ms.p50_vs_engine.block_size.png"));
  const std::string broken = capture(chromium +
                                     " --headless --no-sandbox --disable-gpu --virtual-time-budget=10000 --dump-dom "
                                     "file://" +
                                     d.path("out/report/report.html"));
  EXPECT_NE(broken.find("data-images-loaded=\"7/8\""), std::string::npos) << broken.substr(0, 2000);
}

TEST(CompareReport, AThirdVariedAxisSplitsTheLinesInsteadOfBeingAveraged) {
  const std::string python = first_available({"python3", "/usr/bin/python3"}, "-c 'import matplotlib'");
  if (python.empty()) GTEST_SKIP() << "no python3 with matplotlib";
  // x = block size, by = variant; paged_block_cost varies too: two lines per variant, not one averaging
  // the two settings as if they were repeats.
  SweepDir d("compare3");
  const std::string sweep = d.write("t.yaml",
                                    "name: t\nbase: base.yaml\naxes: {engine.block_size: [16, 64], "
                                    "engine.paged_block_cost: [true, false]}\nseeds: 2\n"
                                    "variants:\n  cached: []\n  uncached: [engine.enable_prefix_caching=false]\n");
  ASSERT_EQ(run_kvsim("sweep " + sweep + " -j 2 --out " + d.path("out")).exit_code, 0);
  const std::string report =
      capture("cd " KVSIM_SOURCE_DIR " && " + python + " analysis/compare.py " + d.path("out") + " --y ttft_ms.p50");
  ASSERT_NE(report.find("(1 plots, 16 points)"), std::string::npos) << report;
  const std::string html = read_file(d.path("out/report/report.html"));
  EXPECT_NE(html.find("lines: variant=cached, engine.paged_block_cost=true; variant=cached, "
                      "engine.paged_block_cost=false; variant=uncached, engine.paged_block_cost=true; "
                      "variant=uncached, engine.paged_block_cost=false</figcaption>"),
            std::string::npos)
      << html.substr(0, 3000);
}

}  // namespace
}  // namespace kvsim
