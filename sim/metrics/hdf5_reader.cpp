#include <cstdlib>

#include "sim/metrics/hdf5_handles.h"
#include "sim/metrics/hdf5_writer.h"

namespace kvsim {
namespace {

using h5::check_id;
using h5::check_rc;
using h5::Handle;

template <typename T>
std::vector<T> read_dataset(hid_t file, const std::string& name, hid_t mem_type, const std::string& path) {
  Handle ds(check_id(H5Dopen2(file, name.c_str(), H5P_DEFAULT), "open dataset " + name, path), H5Dclose);
  Handle space(check_id(H5Dget_space(ds.get()), "H5Dget_space", path), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  check_rc(n < 0 ? -1 : 0, "H5Sget_simple_extent_npoints", path);
  std::vector<T> out(static_cast<size_t>(n));
  if (n > 0) check_rc(H5Dread(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), "read " + name, path);
  return out;
}

Handle open_attribute(hid_t file, const std::string& object, const std::string& name, const std::string& path) {
  return Handle(check_id(H5Aopen_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                         "open attribute " + object + "@" + name, path),
                H5Aclose);
}

}  // namespace

RunFileReader::RunFileReader(const std::string& path) : path_(path) {
  h5::QuietErrors quiet;
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file_ < 0) throw OutputError("cannot open run file " + path);
}

RunFileReader::~RunFileReader() {
  if (file_ >= 0) H5Fclose(file_);
}

bool RunFileReader::exists(const std::string& object_path) const {
  h5::QuietErrors quiet;
  // Check each prefix: H5Lexists fails (rather than returning false) when a parent is missing.
  size_t pos = 1;
  while (pos <= object_path.size()) {
    const size_t next = object_path.find('/', pos);
    const std::string prefix = object_path.substr(0, next);
    if (H5Lexists(file_, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return true;
}

std::vector<double> RunFileReader::read_doubles(const std::string& dataset) const {
  h5::QuietErrors quiet;
  return read_dataset<double>(file_, dataset, H5T_NATIVE_DOUBLE, path_);
}

std::vector<int64_t> RunFileReader::read_ints(const std::string& dataset) const {
  h5::QuietErrors quiet;
  return read_dataset<int64_t>(file_, dataset, H5T_NATIVE_INT64, path_);
}

std::string RunFileReader::read_string_attribute(const std::string& object_path, const std::string& name) const {
  h5::QuietErrors quiet;
  Handle attr = open_attribute(file_, object_path, name, path_);
  Handle type(check_id(H5Aget_type(attr.get()), "H5Aget_type", path_), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING)
    throw OutputError(path_ + ": " + object_path + "@" + name + " is not a string");
  if (H5Tis_variable_str(type.get()) > 0) {
    Handle mem = h5::vlen_string_type(path_);
    char* p = nullptr;
    check_rc(H5Aread(attr.get(), mem.get(), &p), "read attribute " + name, path_);
    std::string out = p != nullptr ? p : "";
    H5free_memory(p);
    return out;
  }
  const size_t size = H5Tget_size(type.get());
  std::string out(size, '\0');
  check_rc(H5Aread(attr.get(), type.get(), out.data()), "read attribute " + name, path_);
  out.resize(out.find('\0') == std::string::npos ? size : out.find('\0'));
  return out;
}

int64_t RunFileReader::read_int_attribute(const std::string& object_path, const std::string& name) const {
  h5::QuietErrors quiet;
  Handle attr = open_attribute(file_, object_path, name, path_);
  int64_t v = 0;
  check_rc(H5Aread(attr.get(), H5T_NATIVE_INT64, &v), "read attribute " + name, path_);
  return v;
}

double RunFileReader::read_double_attribute(const std::string& object_path, const std::string& name) const {
  h5::QuietErrors quiet;
  Handle attr = open_attribute(file_, object_path, name, path_);
  double v = 0;
  check_rc(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &v), "read attribute " + name, path_);
  return v;
}

}  // namespace kvsim
