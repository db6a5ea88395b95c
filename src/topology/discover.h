// Reads the node's GPU topology through NVML into a Topology, once per
// discovery (never per request).
#ifndef GDP_TOPOLOGY_DISCOVER_H_
#define GDP_TOPOLOGY_DISCOVER_H_

#include "device/gpu.h"
#include "nvml/nvml.h"
#include "topology/node_topology.h"
#include "topology/topology.h"

namespace gdp {

// The topology of `node.gpus`, indexed by position in node.gpus (not by
// NVML index): for each pair the active NVLinks between them (the fewer of
// the two directions' counts), the NVSwitch fabric (every GPU with active
// links to NVSwitches shares one fabric per node; a pair gets the fewer of
// its two GPUs' switch link counts), and the PCIe common ancestor; each
// GPU's NUMA node from discovery. A GPU whose handle or links cannot be
// read is marked unusable (logged), so choices leave it out; a pair whose
// PCIe relation cannot be read stays SYSTEM. Without NVML's topology entry
// points every pair is SYSTEM with no links.
Topology DiscoverTopology(const Nvml& nvml, const NodeGpus& node);

// DiscoverTopology with each position's GPU UUID (the first
// Topology::kMaxGpus GPUs of node.gpus).
NodeTopology DiscoverNodeTopology(const Nvml& nvml, const NodeGpus& node);

}  // namespace gdp

#endif  // GDP_TOPOLOGY_DISCOVER_H_
