#include "sim/perf/nccl_allreduce.h"

#include <algorithm>
#include <limits>

namespace kvsim {
namespace {

enum Algo { kTree = 0, kRing = 1 };
enum Proto { kLL = 0, kLL128 = 1, kSimple = 2 };

// ncclTunerConstantsDefaults (src/graph/tuning.cc), microseconds: baseLatencies and hwLatencies
// [NVLINK / PCI / NET][Tree / Ring][LL / LL128 / Simple].
constexpr double kBase[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
constexpr double kNvlink[2][3] = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}};
constexpr double kPci[2][3] = {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}};
constexpr double kNet[2][3] = {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}};
// getNetOverhead: 1 us on Intel and non-x86 hosts (2 on AMD).
constexpr double kNetOverheadUs = 1.0;

// NCCL's log2i: floor(log2(n)).
int log2i(int n) {
  int l = 0;
  while (n >>= 1) ++l;
  return l;
}

double latency_us(const NcclAllReduceLayout& l, Algo a, Proto p) {
  const int n = std::max(1, l.ranks);
  const int nodes = std::clamp(l.nodes, 1, n);
  const int per_node = n / nodes;
  const double intra = (l.nvlink_intra ? kNvlink : kPci)[a][p];
  // With one rank per node the latencies are fully exposed: NCCL uses Tree's network latency.
  const double inter = per_node == 1 ? kNet[kTree][p] : kNet[a][p];
  double lat = kBase[a][p];
  if (a == kRing) {
    const double overhead = nodes > 1 ? kNetOverheadUs * (p == kSimple ? 3.0 : 1.0) : 0.0;
    const int steps = 2 * (n - 1);
    const int inter_steps = nodes == 1 ? 0 : 2 * (nodes - 1);
    lat += (steps - inter_steps) * std::max(intra, overhead) + inter_steps * inter;
    // ncclTopoGetAlgoTime: the plateau effect of ring (compute capability >= 8.0).
    if (p == kSimple && nodes > 1) lat *= 1.4;
  } else {
    lat += 2.0 * ((per_node - 1) * intra + log2i(nodes) * inter);
  }
  return lat;
}

// NCCL's bandwidth refinements per algorithm and protocol (ncclTopoTuneModel), for all-reduce.
double bandwidth_factor(Algo a, Proto p) {
  if (a == kRing) return p == kLL ? 0.5 : p == kLL128 ? 0.92 : 1.0;
  const double tree = 0.92;
  return p == kLL ? tree / 3.8 : p == kLL128 ? tree * 120.0 / 128.0 : tree;
}

}  // namespace

double nccl_allreduce_seconds(const NcclAllReduceLayout& l, double bytes) {
  const int n = std::max(1, l.ranks);
  const double traffic = bytes > 0 && l.bus_bandwidth > 0 ? 2.0 * (n - 1) / n * bytes / l.bus_bandwidth : 0.0;
  double best = std::numeric_limits<double>::infinity();
  for (const Algo a : {kTree, kRing})
    for (const Proto p : {kLL, kLL128, kSimple})
      best = std::min(best, latency_us(l, a, p) * 1e-6 + traffic / bandwidth_factor(a, p));
  return best;
}

}  // namespace kvsim
