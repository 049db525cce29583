// The bad-input corpus (tests/bad_input/cases.txt): every case exits 2 within a time bound with one
// line "kvsim: error: ..." that names the file, line or key. A hang (the livelock, /dev/zero) shows
// as timeout's exit code 124.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/app/cli_runner.h"

namespace kvsim {
namespace {

struct CorpusCase {
  std::string name;
  std::string args;
  std::vector<std::string> needles;
};

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  const size_t b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<CorpusCase> load_cases() {
  std::vector<CorpusCase> out;
  std::ifstream in(std::string(KVSIM_SOURCE_DIR) + "/tests/bad_input/cases.txt");
  for (std::string line; std::getline(in, line);) {
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    const size_t p1 = line.find(" | ");
    const size_t p2 = line.find(" | ", p1 + 3);
    if (p1 == std::string::npos || p2 == std::string::npos) {
      out.push_back({"malformed_case_line", "", {line}});
      continue;
    }
    CorpusCase c{trim(line.substr(0, p1)), trim(line.substr(p1 + 3, p2 - p1 - 3)), {}};
    std::stringstream needles(line.substr(p2 + 3));
    for (std::string n; std::getline(needles, n, ';');)
      if (!trim(n).empty()) c.needles.push_back(trim(n));
    out.push_back(c);
  }
  return out;
}

// gtest prints a case by its arguments (not its bytes).
void PrintTo(const CorpusCase& c, std::ostream* os) { *os << c.args; }

class BadInputCorpus : public ::testing::TestWithParam<CorpusCase> {};

constexpr int kTimeBoundSeconds = 30;

TEST_P(BadInputCorpus, ExitsTwoWithOneLineNamingTheInput) {
  const CorpusCase& c = GetParam();
  ASSERT_NE(c.name, "malformed_case_line") << c.needles.front();
  const auto r = testing::run_kvsim(c.args, kTimeBoundSeconds);
  EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out.substr(0, 2000);
  EXPECT_EQ(testing::count_lines(r.out), 1) << r.out.substr(0, 2000);
  EXPECT_EQ(r.out.rfind("kvsim: error: ", 0), 0u) << r.out.substr(0, 2000);
  EXPECT_LE(r.out.size(), 1200u) << "message too long";
  for (const auto& n : c.needles) EXPECT_NE(r.out.find(n), std::string::npos) << n << " not in: " << r.out;
}

TEST(BadInputCorpusSize, HasTheCases) { EXPECT_GE(load_cases().size(), 40u); }

INSTANTIATE_TEST_SUITE_P(Cases, BadInputCorpus, ::testing::ValuesIn(load_cases()),
                         [](const ::testing::TestParamInfo<CorpusCase>& i) { return i.param.name; });

}  // namespace
}  // namespace kvsim
