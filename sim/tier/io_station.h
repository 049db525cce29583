#pragma once
// IoStation: the I/O of one tier below the host tier (rule 26): N read servers and N write servers, each
// serving one job at a time for base latency + bytes / bandwidth of the job's direction; a job never waits
// for bandwidth, only for a free server ("a disk or object store saturates on concurrency, not on divided
// bandwidth", BLIS sim/kvtransfer/station.go). vLLM's fs tier runs n_read_threads = n_write_threads = 16 in
// a dual-queue pool where "each thread group prefers its own queue but pulls from the other when its
// primary queue is empty" (vllm/v1/kv_offload/tiering/fs, thread_pool.py; kv_offloading_usage.md). So:
//  - a job arriving when a server of its direction is idle starts at once on the lowest-numbered one;
//    else on an idle server of the other direction if that direction's queue is empty; else it queues
//    (FIFO per direction);
//  - a server that ends a job takes the head of its own queue, else the head of the other queue.
// Completions are events (Phase::kTransferDone); the same inputs give the same order (servers by index,
// queues FIFO, ties by the event queue's insertion counter).
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "sim/core/sim_context.h"

namespace kvsim {

class IoStation {
 public:
  enum class Dir : uint8_t { kRead, kWrite };
  IoStation(SimContext& ctx, int read_servers, int write_servers, Duration latency, double read_bandwidth,
            double write_bandwidth);
  // With a mover, a server's job is moved by it (TierLinks: flows over the topology, which then own the
  // latency and the bandwidth) and ends when the mover calls back; without one it takes service().
  using Mover = std::function<void(Dir, int64_t bytes, std::function<void()> done)>;
  void set_mover(Mover mover) { mover_ = std::move(mover); }
  // Submits a job of `bytes` now; `done(end)` runs at its end.
  void submit(Dir dir, int64_t bytes, std::function<void(SimTime)> done);
  Duration service(Dir dir, int64_t bytes) const;
  int busy() const;

 private:
  struct Job {
    Dir dir;
    int64_t bytes;
    std::function<void(SimTime)> done;
  };
  struct Server {
    Dir home;
    bool busy = false;
  };
  void start(size_t server, Job job);
  void on_done(size_t server);

  SimContext& ctx_;
  Duration latency_;
  double read_bw_, write_bw_;
  std::vector<Server> servers_;  // read servers first, then write servers
  std::deque<Job> queue_[2];
  Mover mover_;
};

}  // namespace kvsim
