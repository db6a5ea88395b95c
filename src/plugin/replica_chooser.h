// GetPreferredAllocation for replicas: places one request's replicas on
// physical units (GPUs or MIG devices) by the shared allocation policy,
// choosing the GPUs by topology first when it knows them. The policies are
// described on PreferredAllocation (plugin/preferred.h).
#ifndef GDP_PLUGIN_REPLICA_CHOOSER_H_
#define GDP_PLUGIN_REPLICA_CHOOSER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "device/device.h"
#include "topology/node_topology.h"

namespace gdp {

// One request. Not thread-safe; use once.
class ReplicaChooser {
 public:
  using IdSet = absl::flat_hash_set<std::string>;

  // `avail` holds the available IDs and `must` those of `must_include`;
  // `topology` may be null (then no topology is used). All must outlive
  // the chooser. REQUIRES: the IDs are in `list`; must within avail.
  ReplicaChooser(const DeviceList& list, const IdSet& avail,
                 const std::vector<std::string>& must_include,
                 const IdSet& must, const NodeTopology* topology);

  // `need` more devices by each policy. Result: indexes into list.devices.
  // REQUIRES: need <= available devices not in must_include.
  std::vector<size_t> Distributed(int need);
  std::vector<size_t> Packed(int need);

 private:
  // One physical unit (GPU or MIG device) and its replicas.
  struct Unit {
    size_t first = 0;  // list index of its first device: the tie-break order
    int numa_node = -1;
    int position = -1;         // in the topology; -1: not a known whole GPU
    int total = 0;             // its devices in the list
    int in_answer = 0;         // must-include and chosen devices
    bool preferred = false;    // chosen by topology (distributed)
    std::vector<size_t> free;  // available, not must-include; list order
    size_t next = 0;           // free[next..] are not chosen yet

    int Free() const { return static_cast<int>(free.size() - next); }
    int Load() const { return total - Free(); }
  };

  // True when every unit with free or must-include devices is a whole GPU
  // in the topology.
  bool TopologyCovers() const;
  // Distributed: marks the units topology prefers for `need` devices.
  void PreferByTopology(int need);
  // Packed: the fewest further units for `need` devices, by topology;
  // false when there are too many ways to weigh (then the greedy rule).
  bool PackByTopology(int need, int units);
  void PackGreedy(int need, int units);
  std::vector<Unit*> Ordered(const std::function<bool(const Unit&)>& keep);
  static int FewestUnits(const std::vector<Unit*>& units, const Unit* skip,
                         int need);
  void Take(Unit& u, int n);
  void AddToNode(int numa_node);
  int Affinity(const Unit& u) const;

  const NodeTopology* topology_;
  std::vector<Unit> units_;
  absl::flat_hash_map<int, int> on_node_;  // NUMA node -> answer devices
  std::vector<size_t> chosen_;
};

}  // namespace gdp

#endif  // GDP_PLUGIN_REPLICA_CHOOSER_H_
