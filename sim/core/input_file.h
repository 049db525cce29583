#pragma once
// Bounded reads of user input. Every file kvsim reads (configs, scenarios, hardware files, CSVs,
// traces) goes through these, so a device such as /dev/zero, a FIFO that never ends or a file with
// no line breaks fails with an InputError naming the file instead of reading forever. (A FIFO nobody
// writes to blocks in open(), as it does for cat: process substitution such as <(zcat trace.gz) needs
// the blocking open.)
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

namespace kvsim {

// Whole-file inputs (configs, scenarios, hardware files, CSVs) stop at this size.
constexpr size_t kMaxInputFileBytes = size_t{64} << 20;  // 64 MiB
// One line of a trace stops at this size.
constexpr size_t kMaxTraceLineBytes = size_t{16} << 20;  // 16 MiB

// The file's contents. Throws InputError "<path>: cannot open <what>", "<path>: is a directory" or
// "<path>: larger than 64 MiB ..." (what: "file", "scenario file", ...).
std::string read_input_file(const std::string& path, const std::string& what = "file",
                            size_t max_bytes = kMaxInputFileBytes);

// Reads a file line by line ('\n' ends a line and is not stored; a final line without one counts).
// A line longer than max_line_bytes throws InputError "<path>:<line>: line longer than ...".
class LineReader {
 public:
  LineReader(const std::string& path, const std::string& what = "file", size_t max_line_bytes = kMaxTraceLineBytes);
  // False at the end of the file. `line` stays valid until the next call.
  bool next(std::string_view& line);
  int64_t line_number() const { return line_no_; }

 private:
  std::string path_;
  std::ifstream in_;
  size_t buf_size_;
  std::unique_ptr<char[]> buf_;  // not zeroed: pages are touched only as long lines need them
  int64_t line_no_ = 0;
};

}  // namespace kvsim
