#pragma once
// SimContext: what every component of one simulation shares, passed by reference instead of globals,
// so two simulations can run side by side in one process.
#include <cstdint>

#include "sim/core/event_queue.h"
#include "sim/core/random.h"

namespace kvsim {

struct SimContext {
  explicit SimContext(uint64_t seed, uint64_t run = 0) : rng(seed, run) {}
  EventQueue queue;
  RandomStreams rng;
  SimTime now() const { return queue.now(); }
};

}  // namespace kvsim
