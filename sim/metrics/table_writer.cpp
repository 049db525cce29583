#include "sim/metrics/table_writer.h"

#include <hdf5.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace kvsim {
namespace {

// Owns one HDF5 identifier (this file keeps its own few lines rather than sharing hdf5_handles.h).
class Id {
 public:
  Id(hid_t id, herr_t (*closer)(hid_t), const std::string& what, const std::string& path) : id_(id), closer_(closer) {
    if (id_ < 0) throw std::runtime_error(path + ": HDF5: " + what + " failed");
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  ~Id() {
    if (id_ >= 0) closer_(id_);
  }
  hid_t get() const { return id_; }
  bool close() {
    const herr_t rc = closer_(id_);
    id_ = -1;
    return rc >= 0;
  }

 private:
  hid_t id_;
  herr_t (*closer_)(hid_t);
};

void check(herr_t rc, const std::string& what, const std::string& path) {
  if (rc < 0) throw std::runtime_error(path + ": HDF5: " + what + " failed");
}

void write_file(const std::string& path, const std::vector<TableColumn>& columns) {
  H5E_auto2_t old_func = nullptr;
  void* old_data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  struct Restore {
    H5E_auto2_t f;
    void* d;
    ~Restore() { H5Eset_auto2(H5E_DEFAULT, f, d); }
  } restore{old_func, old_data};

  // The root group's creation time is off too (a file creation property list is a group one).
  Id fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose, "H5Pcreate", path);
  check(H5Pset_obj_track_times(fcpl.get(), 0), "H5Pset_obj_track_times", path);
  Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT), H5Fclose, "create file", path);
  Id gcpl(H5Pcreate(H5P_GROUP_CREATE), H5Pclose, "H5Pcreate", path);
  check(H5Pset_obj_track_times(gcpl.get(), 0), "H5Pset_obj_track_times", path);
  Id group(H5Gcreate2(file.get(), "table", H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose, "create /table", path);
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate", path);
  check(H5Pset_obj_track_times(dcpl.get(), 0), "H5Pset_obj_track_times", path);

  std::string names;
  for (const TableColumn& c : columns) {
    names += (names.empty() ? "" : ",") + c.name;
    const hsize_t rows = c.text ? c.strings.size() : c.numbers.size();
    Id space(H5Screate_simple(1, &rows, nullptr), H5Sclose, "dataspace", path);
    if (c.text) {
      size_t width = 1;
      for (const std::string& s : c.strings) width = std::max(width, s.size());
      Id type(H5Tcopy(H5T_C_S1), H5Tclose, "string type", path);
      check(H5Tset_size(type.get(), width), "H5Tset_size", path);
      check(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), "H5Tset_strpad", path);
      std::string buf(width * rows, '\0');
      for (size_t i = 0; i < c.strings.size(); ++i)
        std::copy(c.strings[i].begin(), c.strings[i].end(), &buf[i * width]);
      Id ds(H5Dcreate2(group.get(), c.name.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
            H5Dclose, "create " + c.name, path);
      if (rows) check(H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()), c.name, path);
    } else {
      Id ds(H5Dcreate2(group.get(), c.name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
            H5Dclose, "create " + c.name, path);
      if (rows)
        check(H5Dwrite(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, c.numbers.data()), c.name, path);
    }
  }
  Id type(H5Tcopy(H5T_C_S1), H5Tclose, "string type", path);
  check(H5Tset_size(type.get(), std::max<size_t>(1, names.size())), "H5Tset_size", path);
  Id scalar(H5Screate(H5S_SCALAR), H5Sclose, "dataspace", path);
  Id attr(H5Acreate2(group.get(), "columns", type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
          "create attribute columns", path);
  names.resize(std::max<size_t>(1, names.size()), '\0');
  check(H5Awrite(attr.get(), type.get(), names.data()), "write attribute columns", path);
  attr.close();
  group.close();
  if (!file.close()) throw std::runtime_error(path + ": HDF5: closing the file failed");
}

}  // namespace

void write_table_hdf5(const std::string& path, const std::vector<TableColumn>& columns, const std::string& tmp_tag) {
  const std::string tmp = path + ".tmp." + tmp_tag;
  try {
    write_file(tmp, columns);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw std::runtime_error(path + ": cannot write: " + ec.message());
  }
}

}  // namespace kvsim
