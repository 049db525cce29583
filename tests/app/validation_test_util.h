#pragma once
// Shared by the validation-set tests: run one measured point with one request per client and no
// warm-up, and return the means over all requests.
#include "sim/app/simulation.h"
#include "sim/app/validate_command.h"
#include "sim/scenario/hardware_catalog.h"

namespace kvsim {

inline PointMeans simulate_one_request_per_client(const ValidationPoint& p) {
  ValidationProtocol protocol;
  protocol.requests_per_slot = 1;
  protocol.warmup_per_slot = 0;
  const SimulationResult r = run_simulation(validation_scenario(p, protocol, kDefaultHardwareDir, "calibrated"));
  return measured_means(*r.collector, 0);
}

}  // namespace kvsim
