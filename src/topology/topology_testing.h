// Topologies of known machines, random topologies and a brute-force
// reference for Choose, shared by the tests (test-only library).
#ifndef GDP_TOPOLOGY_TOPOLOGY_TESTING_H_
#define GDP_TOPOLOGY_TOPOLOGY_TESTING_H_

#include <random>
#include <vector>

#include "topology/topology.h"

namespace gdp {

// A topology of n unconnected GPUs; aborts when n is out of range.
Topology Make(int n);

// DGX-1 with V100 (hybrid cube-mesh), as in fake_nvml/machines/dgx1-v100:
// 6 NVLinks per GPU; pairs of GPUs behind one PCIe switch; 0-3 on NUMA 0,
// 4-7 on NUMA 1, one host bridge per socket.
Topology Dgx1();

// DGX-2: 16 V100 on one NVSwitch fabric (6 links each); PCIe switch per
// pair, switch trees per 4, NUMA node per 8.
Topology Dgx2();

// HGX H100: 8 H100 SXM on one NVSwitch fabric (18 links each), a PCIe
// switch per GPU, NUMA node per 4.
Topology HgxH100();

// 4 PCIe GPUs: two behind each of two switches, one switch per NUMA node.
Topology Pcie4();

// n GPUs with random links, PCIe levels, NUMA nodes and about 10% unusable,
// from few distinct values so that ties are common.
Topology RandomTopology(std::mt19937& rng, int n);

// The reference for Choose: every set of `size` usable GPUs of `avail`
// holding `must`, ranked by NVLinked pairs, then the rest's score, then
// its own score, then fewest NUMA nodes, then lexicographically. Empty
// when there is none. REQUIRES: at most 20 usable GPUs in avail.
std::vector<int> BruteForce(const Topology& t, const std::vector<int>& avail,
                            const std::vector<int>& must, int size);

}  // namespace gdp

#endif  // GDP_TOPOLOGY_TOPOLOGY_TESTING_H_
