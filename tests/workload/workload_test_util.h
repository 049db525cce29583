#pragma once
// Helpers for workload tests: fixture paths and draining a source.
#include <string>
#include <vector>

#include "sim/core/errors.h"
#include "sim/core/random.h"
#include "sim/workload/request.h"
#include "sim/workload/workload_config.h"

namespace kvsim::test {

inline std::string fixture(const std::string& name) {
  return std::string(KVSIM_SOURCE_DIR) + "/tests/workload/data/" + name;
}

inline WorkloadConfig trace_workload(const std::string& format, const std::string& file) {
  TraceConfig t;
  t.format = format;
  t.path = fixture(file);
  WorkloadConfig w;
  w.trace = t;
  return w;
}

inline std::vector<RequestSpec> drain(IRequestSource& src) {
  std::vector<RequestSpec> out;
  while (auto r = src.next()) out.push_back(std::move(*r));
  return out;
}

// Builds the source for `w` and reads it to the end; returns the InputError message ("" if none).
inline std::string source_error(const WorkloadConfig& w) {
  RandomStreams rng(1);
  try {
    auto src = make_request_source(w, rng);
    drain(*src);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

inline std::vector<int64_t> tokens_of(const RequestSpec& r) {
  std::vector<int64_t> t;
  for (const Segment& s : r.prompt) t.push_back(s.tokens);
  return t;
}

}  // namespace kvsim::test
