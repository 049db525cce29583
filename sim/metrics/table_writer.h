#pragma once
// Writes a small column table (a sweep's merged table) to an HDF5 file: one 1-D dataset per column
// under /table, numbers as float64 (NaN for a missing value), text as fixed-length strings; the
// attribute "columns" of /table lists the column names in order, comma-separated. Object creation
// times are not stored, so identical tables give byte-identical files. The file is written to
// "<path>.tmp.<tag>" and renamed; failures throw std::runtime_error naming the path.
#include <string>
#include <vector>

namespace kvsim {

struct TableColumn {
  std::string name;  // no '/' (HDF5 path separator) and no ','
  bool text = false;
  std::vector<double> numbers;       // when !text
  std::vector<std::string> strings;  // when text
};

void write_table_hdf5(const std::string& path, const std::vector<TableColumn>& columns, const std::string& tmp_tag);

}  // namespace kvsim
