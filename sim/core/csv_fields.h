#pragma once
// The fields of one CSV line (RFC 4180): a field may be double-quoted, a comma inside quotes belongs to
// it and "" inside quotes is one quote; a carriage return outside quotes is dropped. Blanks may stand
// around a quoted field; a quote inside an unquoted field, or text after a closing quote, is an error
// (a stray quote in 48"0"8 was read as 4808). Shared by the latency tables (sim/perf/csv_file.h) and
// the Azure trace reader.
#include <string>
#include <string_view>
#include <vector>

namespace kvsim {

// Fills `out` with the unquoted fields. Returns "" or what is wrong ("unterminated quoted field", "a
// quote inside an unquoted field", "text after a closing quote"); out then holds nothing useful.
std::string split_csv_fields(std::string_view line, std::vector<std::string>& out);

}  // namespace kvsim
