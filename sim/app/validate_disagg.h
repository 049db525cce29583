#pragma once
// Disaggregated points of `kvsim validate`: the optional columns prefill_workers, prefill_tp,
// decode_workers, decode_tp and topology, and the cluster: section a point with them runs under.
//
// A row is disaggregated when any of the five is non-empty; it then needs prefill_workers and
// decode_workers, and prefill_tp / decode_tp default to the row's tp. The point runs as a prefill pool
// and a decode pool of those sizes under the decider `always` (every request prefilled remotely, its
// cache pulled by the decode instance over the topology), both pools with the row's engine settings.
//  - topology empty: the GPU must be h100-sxm or h200 (HGX H100 and H200 share NVLink4 and 400 Gb/s
//    NDR NICs), and each side gets its own nodes of the smallest built-in leaf/spine fabric that holds
//    them (hgx-h100-2node-ib-ndr, hgx-4node-ib-ndr, hgx-h100-16node-ib-ndr): prefill instances packed from node 0,
//    decode instances from the first node after them, so the pull crosses the IB fabric as in the
//    measured multi-node P/D setups (Mooncake's vLLM P/D table, latency-model.md section 4.1).
//  - topology given (a name in <hardware_dir>/../topologies or a .yaml path): prefill then decode
//    instances packed node by node in its GPU order, as the simulator packs pools without a placement
//    (hgx-h100-1node: both sides on one node, the pull over NVLink).
// Placement is checked when the points are read: a point that does not fit is an error naming the
// file, line and column.
#include <optional>
#include <string>
#include <vector>

#include "sim/perf/csv_file.h"
#include "sim/scenario/hardware_catalog.h"

namespace kvsim {

struct DisaggregatedPoint {
  int prefill_workers = 1, prefill_tp = 1;
  int decode_workers = 1, decode_tp = 1;
  std::string topology;  // as resolved: the name given, or the built-in default
  bool default_topology = false;
  // Topology GPU names of each rank of each instance, instance by instance (what the pools' placement lists).
  std::vector<std::string> prefill_gpus, decode_gpus;
};

// The disaggregated columns of row `row` (nullopt: none given, a colocated point). `tp` is the row's tp
// column. Throws InputError "<file>:<line>: column '<name>': ..." for a bad value or a point that does
// not fit its topology.
std::optional<DisaggregatedPoint> read_disaggregated_columns(const CsvFile& f, size_t row, const std::string& gpu,
                                                             int tp, const HardwareCatalog& hw,
                                                             const std::string& hardware_dir);

// The scenario's cluster: section (YAML, two-space indented under "cluster:").
std::string disaggregated_cluster_yaml(const DisaggregatedPoint& d);

// A YAML single-quoted scalar of `text` (for the generated point scenarios: paths with backslashes or quotes).
std::string yaml_quoted(const std::string& text);

}  // namespace kvsim
