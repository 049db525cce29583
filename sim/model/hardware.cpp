#include "sim/model/hardware.h"

#include "sim/core/errors.h"

namespace kvsim {
namespace {

// Throws InputError "unknown <what> '<name>' (known: a, b, c)"; std::map keeps the list sorted.
template <typename Map>
const typename Map::mapped_type& find_or_throw(const Map& map, const std::string& what, const std::string& name) {
  auto it = map.find(name);
  if (it != map.end()) return it->second;
  std::string known;
  for (const auto& [key, value] : map) known += (known.empty() ? "" : ", ") + key;
  if (known.empty()) known = "none";
  throw InputError("unknown " + what + " " + quote_for_message(name) + " (known: " + known + ")");
}

}  // namespace

const GpuSpec& HardwareCatalog::gpu(const std::string& name) const { return find_or_throw(gpus, "GPU", name); }

const LinkSpec& HardwareCatalog::link(const std::string& name) const { return find_or_throw(links, "link", name); }

const TierSpec& HardwareCatalog::tier(const std::string& name) const { return find_or_throw(tiers, "tier", name); }

}  // namespace kvsim
