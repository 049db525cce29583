#pragma once
// Constructors of the router policies (one file each in this folder); router_registry.cpp maps names
// to them.
#include <memory>

#include "sim/cluster/i_router.h"
#include "sim/cluster/router_settings.h"
#include "sim/core/random.h"

namespace kvsim {

std::unique_ptr<IRouter> make_round_robin_router();
std::unique_ptr<IRouter> make_random_router(RandomStream& stream);
std::unique_ptr<IRouter> make_least_loaded_router();
std::unique_ptr<IRouter> make_vllm_dp_router();
std::unique_ptr<IRouter> make_session_affinity_router(const RouterSettings& s, int num_instances);
std::unique_ptr<IRouter> make_llm_d_router(const RouterSettings& s, const IClusterView& view, RandomStream& ties);
std::unique_ptr<IRouter> make_dynamo_router(const RouterSettings& s, const IClusterView& view, RandomStream& ties);
std::unique_ptr<IRouter> make_sglang_router(const RouterSettings& s, const IClusterView& view);

// Least loaded by report (waiting + running), ties by lowest instance id: least_loaded's rule, and the
// fallback of session_affinity.
int least_loaded_instance(std::span<const int> candidates, const IClusterView& view);

}  // namespace kvsim
