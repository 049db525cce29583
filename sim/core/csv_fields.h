#pragma once
// The fields of one CSV line (RFC 4180): a field may be double-quoted, a comma inside quotes belongs to
// it and "" inside quotes is one quote; a carriage return outside quotes is dropped. Shared by the
// latency tables (sim/perf/csv_file.h) and the Azure trace reader.
#include <string>
#include <string_view>
#include <vector>

namespace kvsim {

// Fills `out` with the unquoted fields; false when a quote is left open (out then holds nothing useful).
bool split_csv_fields(std::string_view line, std::vector<std::string>& out);

}  // namespace kvsim
