// A node's Topology with the UUID of the GPU at each position, and a holder
// that lets the daemon replace it (on rediscovery) while plugins read it.
#ifndef GDP_TOPOLOGY_NODE_TOPOLOGY_H_
#define GDP_TOPOLOGY_NODE_TOPOLOGY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "topology/topology.h"

namespace gdp {

// Immutable once made; safe to read from any thread.
class NodeTopology {
 public:
  // REQUIRES: gpu_uuids.size() == topology.num_gpus(); no UUID repeated.
  NodeTopology(Topology topology, std::vector<std::string> gpu_uuids);

  const Topology& topology() const { return topology_; }
  const std::vector<std::string>& gpu_uuids() const { return uuids_; }

  // The position of the GPU with `uuid`, or -1 when it is not in the
  // topology.
  int Find(const std::string& uuid) const;

  // How many GPUs are usable (Topology::Usable).
  int UsableCount() const;
  bool AnyUnusable() const { return UsableCount() < topology_.num_gpus(); }

 private:
  Topology topology_;
  std::vector<std::string> uuids_;
  absl::flat_hash_map<std::string, int> position_;
};

// Holds the current NodeTopology. Thread-safe. A reader keeps the
// snapshot it got alive while it uses it; Set never waits for readers.
class SharedTopology {
 public:
  // The current topology, or nullptr before the first Set.
  std::shared_ptr<const NodeTopology> Get() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return current_;
  }

  void Set(std::shared_ptr<const NodeTopology> t) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    current_ = std::move(t);
  }

 private:
  mutable absl::Mutex mu_;
  std::shared_ptr<const NodeTopology> current_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp

#endif  // GDP_TOPOLOGY_NODE_TOPOLOGY_H_
