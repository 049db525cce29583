#include "sim/app/recompute_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/core/errors.h"
#include "sim/core/units.h"

namespace kvsim {
namespace {

double reload_seconds(const TierSpec& t, int64_t bytes) {
  return t.latency.seconds() + static_cast<double>(bytes) / t.read_bandwidth;
}

}  // namespace

void check_recompute_chunks(int64_t tokens, int64_t chunk, const std::string& what) {
  if (tokens / chunk > kMaxRecomputeChunks)
    throw InputError("--recompute: " + what + " " + std::to_string(tokens) + " in chunks of " + std::to_string(chunk) +
                     " (--recompute-chunk) is more than " + std::to_string(kMaxRecomputeChunks) +
                     " prefill steps to price");
}

RecomputeReport build_recompute_report(const ModelSpec& spec, const ILatencyModel& model, DType kv,
                                       const StateDtypes& dt, const Parallel& par, const std::vector<TierSpec>& tiers,
                                       const std::vector<int64_t>& contexts, int64_t max_context, int64_t chunk) {
  RecomputeReport r;
  r.tiers = tiers;
  r.chunk = chunk;
  auto bytes_at = [&](int64_t l) { return request_bytes(spec, l, kv, dt, Parallel{1, 1}); };
  // Every chunk is priced once: full[k] is the time of the first k whole chunks (each depends only on where
  // it starts), so a length costs one lookup and its partial last chunk; the crossover search asks for about
  // 60 lengths. Priced one by one, 2^40 tokens in chunks of 8,192 took 45 s.
  for (int64_t l : contexts) check_recompute_chunks(l, chunk, "--context");
  check_recompute_chunks(max_context, chunk, "the longest context (the config's max_position_embeddings)");
  std::vector<double> full{0.0};
  const auto prefill = [&](int64_t l) {
    const int64_t k = l / chunk, rest = l % chunk;
    while (std::ssize(full) <= k) {
      const int64_t start = (std::ssize(full) - 1) * chunk;
      full.push_back(full.back() + prefill_seconds(model, chunk, chunk, start));
    }
    return full[static_cast<size_t>(k)] + (rest > 0 ? prefill_seconds(model, rest, chunk, k * chunk) : 0.0);
  };
  for (int64_t l : contexts) {
    RecomputeRow row;
    row.context = l;
    row.bytes = bytes_at(l);
    row.recompute_s = prefill(l);
    for (const auto& t : tiers) row.reload_s.push_back(reload_seconds(t, row.bytes));
    r.rows.push_back(row);
  }
  (void)par;
  for (const auto& t : tiers) {
    RecomputeCrossover x;
    x.tier = t.name;
    auto diff = [&](int64_t l) { return reload_seconds(t, bytes_at(l)) - prefill(l); };
    // Scan a geometric grid from 16 tokens for the first sign change, then bisect.
    std::vector<int64_t> grid;
    for (int64_t l = 16; l < max_context; l *= 2) grid.push_back(l);
    grid.push_back(std::max<int64_t>(max_context, 16));
    const double d0 = diff(grid.front());
    const bool reload_first = d0 < 0;
    bool found = false;
    for (size_t i = 1; i < grid.size() && !found; ++i) {
      if ((diff(grid[i]) < 0) == reload_first) continue;
      int64_t lo = grid[i - 1], hi = grid[i];
      while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        ((diff(mid) < 0) == reload_first ? lo : hi) = mid;
      }
      x.context = hi;
      x.reload_wins_above = !reload_first;
      found = true;
    }
    if (!found) x.reload_always_faster = reload_first;
    r.crossovers.push_back(x);
  }
  return r;
}

void print_recompute_report(const RecomputeReport& r, const std::string& model_name, const std::string& gpu,
                            const std::string& latency_model, std::ostream& out) {
  out << "\nreload vs recompute: " << model_name << " on " << gpu << " (" << latency_model
      << " latency model, prefill in chunks of " << r.chunk << " tokens; reload = tier latency + request bytes / "
      << "tier read bandwidth)\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%10s %12s %14s", "context", "cache", "recompute_ms");
  out << buf;
  for (const auto& t : r.tiers) {
    std::snprintf(buf, sizeof buf, " %16s", (t.name + "_ms").c_str());
    out << buf;
  }
  out << "\n";
  for (const auto& row : r.rows) {
    std::snprintf(buf, sizeof buf, "%10lld %12s %14.2f", static_cast<long long>(row.context),
                  format_bytes(row.bytes).c_str(), row.recompute_s * 1e3);
    out << buf;
    for (double s : row.reload_s) {
      std::snprintf(buf, sizeof buf, " %16.2f", s * 1e3);
      out << buf;
    }
    out << "\n";
  }
  for (const auto& x : r.crossovers) {
    out << "crossover " << x.tier << ": ";
    if (x.context < 0)
      out << (x.reload_always_faster ? "none, reload is faster at every length"
                                     : "none, recompute is faster at every length");
    else
      out << x.context << " tokens (reload faster " << (x.reload_wins_above ? "above" : "below") << ")";
    out << "\n";
  }
}

}  // namespace kvsim
