#pragma once
// Synthetic request generators. Each draws from its own named streams (listed per factory), builds
// requests one at a time in arrival order and numbers them 0, 1, 2, ...; the config must have
// passed validate_workload_config(). Sources keep references into `rng`, which must outlive them.
#include <memory>

#include "sim/core/random.h"
#include "sim/workload/request.h"
#include "sim/workload/workload_config.h"

namespace kvsim {

// Inter-arrival gaps: exponential (poisson) or gamma with mean 1/rate and coefficient of variation
// cv (shape 1/cv^2, scale cv^2/rate). The first arrival is one gap after time 0.
class ArrivalProcess {
 public:
  ArrivalProcess(bool gamma, double rate, double cv, RandomStream& rng);
  // Advances to the next arrival and returns it.
  SimTime next();

 private:
  bool gamma_;
  double rate_;
  double shape_;
  double scale_;
  RandomStream& rng_;
  SimTime now_;
};

// kind poisson | gamma: one unique prompt per request. Streams: workload/arrivals,
// workload/input_tokens, workload/output_tokens.
std::unique_ptr<IRequestSource> make_open_loop_source(const SyntheticConfig& config, RandomStreams& rng);
// kind shared_prefix. Streams: workload/arrivals (open loop), workload/output_tokens, workload/order.
std::unique_ptr<IRequestSource> make_shared_prefix_source(const SyntheticConfig& config, RandomStreams& rng);
// kind multi_turn. Streams: workload/arrivals (session starts), workload/think_time,
// workload/user_tokens, workload/output_tokens.
std::unique_ptr<IRequestSource> make_multi_turn_source(const SyntheticConfig& config, RandomStreams& rng);

}  // namespace kvsim
