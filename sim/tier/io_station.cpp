#include "sim/tier/io_station.h"

#include "sim/core/check.h"

namespace kvsim {
namespace {
constexpr uint32_t kTagIoDone = 0x24;
}  // namespace

IoStation::IoStation(SimContext& ctx, int read_servers, int write_servers, Duration latency, double read_bandwidth,
                     double write_bandwidth)
    : ctx_(ctx), latency_(latency), read_bw_(read_bandwidth), write_bw_(write_bandwidth) {
  KVSIM_CHECK(read_servers > 0 && write_servers > 0, "an I/O station needs servers in both directions");
  KVSIM_CHECK(read_bandwidth > 0 && write_bandwidth > 0, "an I/O station needs bandwidth in both directions");
  for (int i = 0; i < read_servers; ++i) servers_.push_back(Server{Dir::kRead});
  for (int i = 0; i < write_servers; ++i) servers_.push_back(Server{Dir::kWrite});
}

Duration IoStation::service(Dir dir, int64_t bytes) const {
  const double bw = dir == Dir::kRead ? read_bw_ : write_bw_;
  return duration_from_seconds(latency_.seconds() + static_cast<double>(bytes) / bw);
}

int IoStation::busy() const {
  int n = 0;
  for (const Server& s : servers_) n += s.busy;
  return n;
}

void IoStation::submit(Dir dir, int64_t bytes, std::function<void(SimTime)> done) {
  const auto q = static_cast<size_t>(dir);
  // Own direction first (lowest index), then the other direction's idle servers if its queue is empty.
  for (int pass = 0; pass < 2; ++pass) {
    const bool own = pass == 0;
    if (!own && !queue_[1 - q].empty()) break;
    for (size_t i = 0; i < servers_.size(); ++i) {
      if (servers_[i].busy || (servers_[i].home == dir) != own) continue;
      start(i, Job{dir, bytes, std::move(done)});
      return;
    }
  }
  queue_[q].push_back(Job{dir, bytes, std::move(done)});
}

void IoStation::start(size_t server, Job job) {
  servers_[server].busy = true;
  if (mover_) {
    mover_(job.dir, job.bytes, [this, server, done = std::move(job.done)] {
      done(ctx_.now());
      on_done(server);
    });
    return;
  }
  const SimTime end = ctx_.now() + service(job.dir, job.bytes);
  ctx_.queue.schedule(end, Phase::kTransferDone, kTagIoDone, [this, server, end, done = std::move(job.done)] {
    done(end);
    on_done(server);
  });
}

void IoStation::on_done(size_t server) {
  servers_[server].busy = false;
  const auto own = static_cast<size_t>(servers_[server].home);
  for (size_t q : {own, 1 - own}) {
    if (queue_[q].empty()) continue;
    Job job = std::move(queue_[q].front());
    queue_[q].pop_front();
    start(server, std::move(job));
    return;
  }
}

}  // namespace kvsim
