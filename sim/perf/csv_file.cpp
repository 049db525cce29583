#include "sim/perf/csv_file.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

#include "sim/core/csv_fields.h"
#include "sim/core/errors.h"
#include "sim/core/input_file.h"
#include "sim/core/units.h"

namespace kvsim {
namespace {

std::vector<std::string> split_line(const std::string& line, const std::string& source, int lineno) {
  std::vector<std::string> out;
  if (const std::string why = split_csv_fields(line, out); !why.empty())
    throw InputError(source + ":" + std::to_string(lineno) + ": " + why);
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::optional<int> CsvFile::find_column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return std::nullopt;
}

int CsvFile::column(const std::string& name) const {
  auto c = find_column(name);
  if (!c) throw InputError(path + ":" + std::to_string(header_line_) + ": missing column '" + name + "'");
  return *c;
}

std::string CsvFile::where(size_t row, int col) const {
  return path + ":" + std::to_string(lines[row]) + ": column '" + header[col] + "'";
}

double CsvFile::number(size_t row, int col) const {
  const std::string s = trim(rows[row][col]);
  if (s.empty()) throw InputError(where(row, col) + ": empty, expected a number");
  if (!decimal_text(s)) throw InputError(where(row, col) + ": not a number ('" + s + "')");
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v))
    throw InputError(where(row, col) + ": not a number ('" + s + "')");
  return v;
}

CsvFile parse_csv_text(const std::string& text_in, const std::string& source) {
  std::string_view text = text_in;
  if (text.starts_with("\xFF\xFE") || text.starts_with("\xFE\xFF"))
    throw InputError(source + ": UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8");
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte-order mark
  // A carriage return not followed by a line feed (old Mac line ends) would join every line into one,
  // and a NUL byte cuts messages short: both refused with the line they are on.
  for (size_t i = 0; i < text.size(); ++i) {
    const bool bare_cr = text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n');
    if (!bare_cr && text[i] != '\0') continue;
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(i), '\n');
    throw InputError(source + ":" + std::to_string(line) +
                     (bare_cr ? ": a carriage return without a line feed (old Mac line ends?); save the file with "
                                "LF or CRLF line ends"
                              : ": a NUL byte (not a text file?)"));
  }
  CsvFile f;
  f.path = source;
  std::istringstream in{std::string(text)};
  std::string line;
  int lineno = 0;
  bool have_header = false;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    auto fields = split_line(line, source, lineno);
    for (auto& x : fields) x = trim(x);
    if (!have_header) {
      // A column named twice: the first would win and the second be ignored.
      for (size_t i = 0; i < fields.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if (!fields[i].empty() && fields[i] == fields[j])
            throw InputError(source + ":" + std::to_string(lineno) + ": column '" + fields[i] +
                             "' appears twice in the header");
      f.header = fields;
      f.header_line_ = lineno;
      have_header = true;
      continue;
    }
    if (fields.size() != f.header.size())
      throw InputError(source + ":" + std::to_string(lineno) + ": expected " + std::to_string(f.header.size()) +
                       " fields, got " + std::to_string(fields.size()));
    f.rows.push_back(std::move(fields));
    f.lines.push_back(lineno);
  }
  if (!have_header) throw InputError(source + ": empty file, expected a header row");
  return f;
}

CsvFile read_csv_file(const std::string& path) { return parse_csv_text(read_input_file(path, "file"), path); }

}  // namespace kvsim
