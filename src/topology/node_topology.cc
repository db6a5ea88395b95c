#include "topology/node_topology.h"

#include <cassert>
#include <utility>

namespace gdp {

NodeTopology::NodeTopology(Topology topology,
                           std::vector<std::string> gpu_uuids)
    : topology_(std::move(topology)), uuids_(std::move(gpu_uuids)) {
  assert(static_cast<int>(uuids_.size()) == topology_.num_gpus());
  for (size_t i = 0; i < uuids_.size(); ++i) {
    position_.emplace(uuids_[i], static_cast<int>(i));
  }
}

int NodeTopology::Find(const std::string& uuid) const {
  auto it = position_.find(uuid);
  return it == position_.end() ? -1 : it->second;
}

int NodeTopology::UsableCount() const {
  int usable = 0;
  for (int i = 0; i < topology_.num_gpus(); ++i) {
    usable += topology_.Usable(i) ? 1 : 0;
  }
  return usable;
}

}  // namespace gdp
