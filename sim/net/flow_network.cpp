#include "sim/net/flow_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/core/check.h"

namespace kvsim {
namespace {

// Float error allowance on remaining bytes, relative to the flow's size (plus a thousandth of a byte).
constexpr double kDoneRelative = 1e-9;
constexpr double kDoneAbsolute = 1e-3;

bool is_done(double remaining, double bytes) { return remaining <= kDoneRelative * bytes + kDoneAbsolute; }

}  // namespace

FlowNetwork::FlowNetwork(SimContext& ctx, const Topology& topo, FlowOptions opts)
    : ctx_(ctx), topo_(topo), opts_(opts), links_(topo.num_links()) {
  if (opts_.per_flow_cap < 0 || !std::isfinite(opts_.per_flow_cap)) {
    throw std::invalid_argument("FlowNetwork: per_flow_cap must be >= 0");
  }
  if (opts_.per_descriptor < Duration::zero()) throw std::invalid_argument("FlowNetwork: per_descriptor must be >= 0");
  for (int l = 0; l < topo.num_links(); ++l) links_[l].capacity = topo.link(l).capacity;
}

int64_t FlowNetwork::start(int src_gpu, int dst_gpu, int64_t bytes, uint64_t flow_hash, DoneFn done, double rate_cap,
                           Duration extra_latency, int64_t descriptors) {
  if (src_gpu < 0 || src_gpu >= topo_.num_gpus() || dst_gpu < 0 || dst_gpu >= topo_.num_gpus()) {
    throw std::invalid_argument("FlowNetwork::start: GPU index out of range");
  }
  if (bytes < 0 || rate_cap < 0 || !std::isfinite(rate_cap) || extra_latency < Duration::zero() || descriptors < 0) {
    throw std::invalid_argument("FlowNetwork::start: negative bytes, rate cap, latency or descriptors");
  }
  auto path = topo_.route(src_gpu, dst_gpu, flow_hash);
  if (!path) {
    throw std::logic_error("FlowNetwork::start: no route from " + topo_.gpu_name(src_gpu) + " to " +
                           topo_.gpu_name(dst_gpu));
  }
  return start_on(std::move(*path), bytes, std::move(done), rate_cap,
                  extra_latency + opts_.per_descriptor * descriptors);
}

int64_t FlowNetwork::start_on(Topology::Path path, int64_t bytes, DoneFn done, double rate_cap, Duration extra_latency,
                              bool per_flow_cap) {
  if (bytes < 0 || rate_cap < 0 || !std::isfinite(rate_cap) || extra_latency < Duration::zero()) {
    throw std::invalid_argument("FlowNetwork::start_on: negative bytes, rate cap or latency");
  }
  for (int l : path.links)
    if (l < 0 || l >= topo_.num_links()) throw std::invalid_argument("FlowNetwork::start_on: link out of range");
  double bound = rate_cap > 0 ? rate_cap : std::numeric_limits<double>::infinity();
  if (per_flow_cap && opts_.per_flow_cap > 0) bound = std::min(bound, opts_.per_flow_cap);
  const int64_t id = next_id_++;
  ++stats_.flows_started;
  Flow& f = flows_[id];
  f.links = std::move(path.links);
  f.bytes = static_cast<double>(bytes);
  f.remaining = f.bytes;
  f.bound = bound;
  f.done = std::move(done);
  const SimTime at = ctx_.now() + path.latency + extra_latency;
  if (bytes == 0 || f.links.empty()) {
    ctx_.queue.schedule(at, Phase::kTransferDone, kTagFlowDone, [this, id] { finish(id); });
  } else {
    ctx_.queue.schedule(at, Phase::kTransferDone, kTagFlowBegin, [this, id] { on_begin(id); });
  }
  return id;
}

void FlowNetwork::on_begin(int64_t id) {
  Flow& f = flows_.at(id);
  f.moving = true;
  f.last = ctx_.now();
  for (int l : f.links) links_[l].flows.push_back(id);
  resolve(f.links);
}

void FlowNetwork::schedule_done(int64_t id, Flow& f) {
  KVSIM_CHECK(f.rate > 0, "flow " << id << " moves bytes at rate 0");
  const double ns = std::ceil(std::max(0.0, f.remaining) / f.rate * 1e9);
  KVSIM_CHECK(ns < 9e18, "flow " << id << " would end beyond the simulated clock");
  // A flow already done (one whose rate changes at the instant it ends, because another flow on its
  // links ended with it) ends now, with the flow that ended: two pulls of one size into one decode
  // instance reach the same step. Otherwise at least one nanosecond, so a flow is never rescheduled
  // at the same instant over and over.
  const SimTime at =
      ctx_.now() + Duration::ns(is_done(f.remaining, f.bytes) ? 0 : std::max<int64_t>(1, static_cast<int64_t>(ns)));
  const uint64_t version = ++f.version;
  ctx_.queue.schedule(at, Phase::kTransferDone, kTagFlowDone, [this, id, version] { on_done(id, version); });
}

void FlowNetwork::on_done(int64_t id, uint64_t version) {
  auto it = flows_.find(id);
  if (it == flows_.end() || it->second.version != version) return;  // outdated by a rate change
  Flow& f = it->second;
  f.remaining -= f.rate * (ctx_.now() - f.last).seconds();
  f.last = ctx_.now();
  if (!is_done(f.remaining, f.bytes)) {
    schedule_done(id, f);
    return;
  }
  // Remove the flow, re-solve what it shared, and take back the bytes the rounding up let it carry
  // past its size, so every link carries exactly the bytes of the flows over it.
  const double overshoot = -f.remaining;
  for (int l : f.links) {
    auto& v = links_[l].flows;
    v.erase(std::find(v.begin(), v.end(), id));
  }
  f.moving = false;
  resolve(f.links);
  for (int l : f.links) links_[l].bytes -= overshoot;
  finish(id);
}

void FlowNetwork::finish(int64_t id) {
  auto it = flows_.find(id);
  KVSIM_CHECK(it != flows_.end(), "flow " << id << " finished twice");
  DoneFn done = std::move(it->second.done);
  ++stats_.flows_done;
  stats_.bytes_done += it->second.bytes;
  flows_.erase(it);
  if (done) done();
}

void FlowNetwork::resolve(const std::vector<int>& seeds) {
  ++stats_.solves;
  const uint64_t epoch = ++epoch_;
  const SimTime now = ctx_.now();
  comp_links_.clear();
  comp_flows_.clear();
  for (int l : seeds) {
    if (links_[l].mark != epoch) {
      links_[l].mark = epoch;
      comp_links_.push_back(l);
    }
  }
  // Breadth-first over links -> flows -> links, in a fixed order.
  for (size_t i = 0; i < comp_links_.size(); ++i) {
    for (int64_t id : links_[comp_links_[i]].flows) {
      Flow& f = flows_.find(id)->second;
      if (f.mark == epoch) continue;
      f.mark = epoch;
      comp_flows_.push_back(id);
      for (int l : f.links) {
        if (links_[l].mark != epoch) {
          links_[l].mark = epoch;
          comp_links_.push_back(l);
        }
      }
    }
  }
  // Bring bytes up to date at the old rates.
  comp_capacity_.clear();
  for (size_t i = 0; i < comp_links_.size(); ++i) {
    LinkState& s = links_[comp_links_[i]];
    // A rate counts towards the peak once it has held for some time: flows that begin at one instant
    // are solved one after the other, and the partial solutions between them never carry a byte.
    if (now > s.last) s.peak = std::max(s.peak, s.rate);
    s.bytes += s.rate * (now - s.last).seconds();
    s.last = now;
    s.local = static_cast<int>(i);
    comp_capacity_.push_back(s.capacity);
  }
  solver_.reset(comp_capacity_);
  for (int64_t id : comp_flows_) {
    Flow& f = flows_.find(id)->second;
    f.remaining -= f.rate * (now - f.last).seconds();
    f.last = now;
    local_links_.clear();
    for (int l : f.links) local_links_.push_back(links_[l].local);
    f.local = solver_.add_flow(local_links_.data(), static_cast<int>(local_links_.size()), f.bound);
  }
  solver_.solve();
  stats_.solve_flow_visits += solver_.flow_visits();
  stats_.solve_link_visits += solver_.link_visits();
  for (int l : comp_links_) links_[l].rate = 0;
  for (int64_t id : comp_flows_) {
    Flow& f = flows_.find(id)->second;
    const double rate = solver_.rate(f.local);
    for (int l : f.links) links_[l].rate += rate;
    if (rate != f.rate) {
      f.rate = rate;
      schedule_done(id, f);
    }
  }
}

double FlowNetwork::link_peak_rate(int link) const {
  const LinkState& s = links_.at(link);
  return ctx_.now() > s.last ? std::max(s.peak, s.rate) : s.peak;
}

double FlowNetwork::link_rate(int link) const { return links_.at(link).rate; }

double FlowNetwork::link_bytes(int link) const {
  const LinkState& s = links_.at(link);
  return s.bytes + s.rate * (ctx_.now() - s.last).seconds();
}

double FlowNetwork::flow_rate(int64_t flow) const {
  auto it = flows_.find(flow);
  return it == flows_.end() || !it->second.moving ? 0.0 : it->second.rate;
}

}  // namespace kvsim
