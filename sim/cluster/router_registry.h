#pragma once
// The router registry: policy names, the options each accepts, and make_router().
#include <map>
#include <memory>
#include <set>
#include <string>

#include "sim/cluster/i_router.h"
#include "sim/cluster/router_settings.h"
#include "sim/core/random.h"

namespace kvsim {

// Every policy with the options that belong to it (besides policy, report_interval, routing_latency,
// which every policy takes). The scenario layer validates cluster.router against it.
const std::map<std::string, std::set<std::string>>& router_policy_options();
// "dynamo, least_loaded, llm_d, ..." for error messages.
std::string router_policy_names();

// Builds the policy. Random ties and draws come from the stream "router/<policy>". Throws InputError
// "<key>: unknown router 'x' (known: ...)" for an unknown name.
std::unique_ptr<IRouter> make_router(const RouterSettings& s, const IClusterView& view, RandomStreams& rng,
                                     const std::string& key);

}  // namespace kvsim
