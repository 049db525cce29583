#pragma once
// CsvFile: a small comma-separated table with a header row, for the latency tables and the
// validation points. Fields may be double-quoted ("a, b"); no field spans lines; '#' lines and blank
// lines are skipped. Errors are InputErrors naming the file, the line and the column.
#include <optional>
#include <string>
#include <vector>

namespace kvsim {

struct CsvFile {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;  // 1-based line number of each row

  std::optional<int> find_column(const std::string& name) const;
  // Throws InputError "<path>:<header line>: missing column '<name>'".
  int column(const std::string& name) const;
  // The field as a number; throws "<path>:<line>: column '<name>': not a number ('<text>')".
  double number(size_t row, int col) const;
  const std::string& text(size_t row, int col) const { return rows[row][col]; }
  std::string where(size_t row, int col) const;  // "<path>:<line>: column '<name>'"

 private:
  int header_line_ = 1;
  friend CsvFile parse_csv_text(const std::string& text, const std::string& source);
};

CsvFile parse_csv_text(const std::string& text, const std::string& source);
// Throws InputError when the file cannot be read.
CsvFile read_csv_file(const std::string& path);

}  // namespace kvsim
