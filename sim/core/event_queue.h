#pragma once
// The event queue: a total order (time, phase, seq). Time is integer nanoseconds; phase orders events
// that fall at the same instant for a stated reason; seq is the insertion counter that breaks the
// remaining ties. No pointer ever takes part in ordering.
//
// Every dispatched event folds (time, phase, tag) into a running FNV-1a fingerprint, so two runs of
// the same scenario and seed can be compared with one number.
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "sim/core/time.h"

namespace kvsim {

// Phases, in the order they run at one instant:
enum class Phase : uint8_t {
  kArrival = 0,       // new requests join the waiting queue before anything at this instant reads it
  kTransferDone = 1,  // KV arriving from another instance is usable by a step scheduled now
  kStepDone = 2,      // a finished step frees blocks and emits tokens before the next step is planned
  kSchedule = 3,      // the scheduler plans the next step once everything above has landed
  kSample = 4,        // samplers observe the state after all changes at this instant
};

class EventQueue {
 public:
  using Handler = std::function<void()>;

  // Schedules `fn` at `at` (not before now()). `tag` is a small event-kind number that enters the
  // fingerprint; it does not affect ordering.
  void schedule(SimTime at, Phase phase, uint32_t tag, Handler fn);
  bool empty() const { return heap_.empty(); }
  // Pops and runs the next event; returns false when none is left.
  bool run_one();
  // Runs until the queue is empty or the next event lies after `until`.
  void run_until(SimTime until);
  SimTime now() const { return now_; }
  uint64_t events_dispatched() const { return dispatched_; }
  uint64_t fingerprint() const { return fingerprint_; }
  SimTime next_time() const;

 private:
  struct Entry {
    SimTime at;
    Phase phase;
    uint64_t seq;
    uint32_t tag;
    Handler fn;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.at != b.at) return a.at > b.at;
      if (a.phase != b.phase) return a.phase > b.phase;
      return a.seq > b.seq;
    }
  };
  std::priority_queue<Entry, std::vector<Entry>, Later> heap_;
  SimTime now_ = SimTime::zero();
  uint64_t seq_ = 0;
  uint64_t dispatched_ = 0;
  uint64_t fingerprint_ = 14695981039346656037ULL;
};

}  // namespace kvsim
