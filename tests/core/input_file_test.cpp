// Bounded input reads (input_file.h): whole files stop at a size, trace lines at a length, and a
// device that never ends (/dev/zero) fails with the file named instead of reading forever.
#include "sim/core/input_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sim/core/errors.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

class InputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kvsim_input_file_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(InputFile, WholeFileLimitOnBothSides) {
  const std::string p = write("ten.txt", "0123456789");
  EXPECT_EQ(read_input_file(p, "file", 10), "0123456789");
  EXPECT_NE(error_of([&] { read_input_file(p, "file", 9); }).find("ten.txt: larger than"), std::string::npos);
}

TEST_F(InputFile, DevZeroAndDirectoriesFailWithTheFileNamed) {
  EXPECT_NE(error_of([] { read_input_file("/dev/zero", "scenario file"); }).find("/dev/zero: larger than 64 MiB"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_input_file(dir_.string()); }).find("is a directory"), std::string::npos);
  EXPECT_NE(
      error_of([&] { read_input_file((dir_ / "missing").string(), "trace file"); }).find("cannot open trace file"),
      std::string::npos);
}

TEST_F(InputFile, LinesAreSplitAndNumbered) {
  LineReader r(write("lines.txt", "a\n\nbc\r\nlast"));
  std::string_view line;
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "a");
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "");
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "bc\r");  // the caller strips '\r'
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "last");
  EXPECT_EQ(r.line_number(), 4);
  EXPECT_FALSE(r.next(line));
}

TEST_F(InputFile, LineLimitOnBothSides) {
  const std::string p = write("long.txt", "12345\n123456\n");
  LineReader r(p, "trace file", 5);
  std::string_view line;
  ASSERT_TRUE(r.next(line));
  EXPECT_EQ(line, "12345");
  EXPECT_NE(error_of([&] { r.next(line); }).find("long.txt:2: line longer than"), std::string::npos);
  LineReader z("/dev/zero", "trace file", 1 << 20);
  EXPECT_NE(error_of([&] { z.next(line); }).find("/dev/zero:1: line longer than"), std::string::npos);
}

}  // namespace
}  // namespace kvsim
