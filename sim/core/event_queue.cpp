#include "sim/core/event_queue.h"

#include "sim/core/check.h"

namespace kvsim {

void EventQueue::schedule(SimTime at, Phase phase, uint32_t tag, Handler fn) {
  KVSIM_CHECK(at >= now_, "event scheduled in the past: " << at.ns() << " < " << now_.ns());
  heap_.push(Entry{at, phase, seq_++, tag, std::move(fn)});
}

static inline uint64_t fold(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 1099511628211ULL;
  }
  return h;
}

bool EventQueue::run_one() {
  if (heap_.empty()) return false;
  // priority_queue::top is const; move the handler out through a copy of the entry.
  Entry e = std::move(const_cast<Entry&>(heap_.top()));
  heap_.pop();
  now_ = e.at;
  ++dispatched_;
  fingerprint_ = fold(fingerprint_, static_cast<uint64_t>(e.at.ns()));
  fingerprint_ = fold(fingerprint_, (static_cast<uint64_t>(e.phase) << 32) | e.tag);
  e.fn();
  return true;
}

void EventQueue::run_until(SimTime until) {
  while (!heap_.empty() && heap_.top().at <= until) run_one();
}

SimTime EventQueue::next_time() const { return heap_.empty() ? now_ : heap_.top().at; }

}  // namespace kvsim
