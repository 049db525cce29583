#pragma once
// Internal to sim/metrics/*.cpp: RAII for HDF5 identifiers and an error-printing guard. Includes
// hdf5.h, so it must never be included from a public header.
#include <hdf5.h>

#include <string>

#include "sim/metrics/hdf5_writer.h"

namespace kvsim::h5 {

static_assert(sizeof(hid_t) == sizeof(int64_t), "hid_t is stored as int64_t in RunFileReader");

// Owns one identifier and closes it with the matching H5?close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      closer_ = o.closer_;
      o.id_ = -1;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now and reports whether closing succeeded (a file close flushes).
  bool close() {
    if (id_ < 0) return true;
    const herr_t rc = closer_(id_);
    id_ = -1;
    return rc >= 0;
  }

 private:
  void reset() {
    if (id_ >= 0) closer_(id_);
    id_ = -1;
  }
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// Silences HDF5's automatic error-stack printing while alive (we report errors ourselves) and
// restores the previous handler afterwards.
class QuietErrors {
 public:
  QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// Throws OutputError("<what>: <path>") when id < 0.
inline hid_t check_id(hid_t id, const std::string& what, const std::string& path) {
  if (id < 0) throw OutputError("HDF5: " + what + " failed for " + path);
  return id;
}
inline void check_rc(herr_t rc, const std::string& what, const std::string& path) {
  if (rc < 0) throw OutputError("HDF5: " + what + " failed for " + path);
}

// A variable-length UTF-8 string type (caller owns the handle).
inline Handle vlen_string_type(const std::string& path) {
  Handle t(check_id(H5Tcopy(H5T_C_S1), "H5Tcopy", path), H5Tclose);
  check_rc(H5Tset_size(t.get(), H5T_VARIABLE), "H5Tset_size", path);
  check_rc(H5Tset_cset(t.get(), H5T_CSET_UTF8), "H5Tset_cset", path);
  return t;
}

}  // namespace kvsim::h5
