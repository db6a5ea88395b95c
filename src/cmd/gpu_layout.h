// The layout of a node's GPUs: the part of a discovery (NodeGpus) that the
// resources, the CDI spec and the DRA devices are built from, so that a
// rediscovery can tell whether anything the kubelet sees must change.
//
// The layout is: the driver version; the GPUs by UUID, with each one's
// NVML index, device minor, PCI bus id, product name and MIG mode; and each
// MIG-enabled GPU's MIG devices by UUID, with each one's index, profile and
// GPU / compute instance IDs. Not part of it: memory sizes, NUMA nodes,
// PCIe roots, brand, architecture, compute capability, MIG capability, the
// CUDA version and the engine counts, which follow from the GPU (or MIG
// profile) and do not change while it stays; and the GPUs left out as
// unusable, which count only by not being in the layout (KeepUndescribed
// decides what stays served for them). With dynamic MIG, a MIG-enabled
// GPU's MIG profiles (GpuInfo::mig_profiles: what the DRA side publishes
// of it) are part of it too, and a GPU whose MIG devices the DRA side
// makes on demand (LayoutOptions) has them instead of its MIG devices.
#ifndef GDP_CMD_GPU_LAYOUT_H_
#define GDP_CMD_GPU_LAYOUT_H_

#include <set>
#include <string>
#include <vector>

#include "device/gpu.h"

namespace gdp {

// How LayoutChanges compares two layouts.
struct LayoutOptions {
  // The GPUs, by UUID, whose MIG devices the DRA side makes at claim
  // prepare and destroys at unprepare (NVIDIA's DynamicMIG:
  // MigMadeOnDemand). While such a GPU has MIG enabled and its MIG
  // profiles read (GpuInfo::mig_profiles non-empty) on both sides, its MIG
  // devices are not compared: the DRA side publishes its profile
  // placements, which stay the same whatever instances exist, so an
  // instance made or destroyed (at a prepare, or by anyone else) changes
  // nothing served. The rest of the GPU's layout still is compared (the GPU
  // appearing or going, its UUID, MIG mode, MIG profiles, index, minor, bus
  // id, name). Empty: every MIG-enabled GPU's MIG devices are compared.
  std::set<std::string> mig_on_demand;
};

// The options for a node whose DRA side serves `dra` (the GPUs it has:
// DeviceApiSplit::dra) with NVIDIA's DynamicMIG gate `dynamic_mig`
// (Config::DynamicMigOn()): mig_on_demand holds the GPUs of `dra` with MIG
// enabled and their MIG profiles read, which the DRA side publishes
// partitionable (dra::BuildInventory); none without the gate. Thread-safe
// (pure).
LayoutOptions MigMadeOnDemand(const NodeGpus& dra, bool dynamic_mig);

// What differs between the layouts of `before` and `after`, one line per
// change, naming the GPU (and MIG device) by UUID, e.g.
// "GPU GPU-1234 appeared", "GPU GPU-1234: MIG enabled",
// "GPU GPU-1234: MIG device MIG-5678 (1g.10gb) is gone",
// "GPU GPU-1234: MIG profiles changed". Empty when the layouts are the
// same. `options`: the GPUs whose MIG devices are not compared (above).
// Thread-safe (pure).
std::vector<std::string> LayoutChanges(const NodeGpus& before,
                                       const NodeGpus& after,
                                       const LayoutOptions& options = {});

// What to serve of a discovery, `found`, while `served` is served: the one
// rule for a reload and a rediscovery (docs/health.md, "A GPU NVML cannot
// describe"). A unit NVML still lists but cannot describe is left out of
// `found` (found.unusable holds its slot: GPU index, MIG index); the served
// unit in that slot stays, as it was
// served, so it stays listed (unhealthy, from the health monitor) under
// its ID until a discovery describes it again or NVML lists it no more.
// Precisely, `found` plus:
// - for each GPU slot left out, the served GPU that `found` lacks and that
//   was served at that index; each slot left over (the indices moved: a
//   GPU before it went or came) is taken by the first lacking GPU left
//   over, in index order, with its slot's index. Either way only a GPU
//   whose PCI bus ID sorts between those of the GPUs `found` describes
//   around the slot (NVML numbers GPUs in PCI bus order);
// - for each MIG slot left out on a GPU `found` has with MIG enabled as
//   served, the MIG device served at that MIG index that `found` lacks.
// Nothing else: a served unit `found` lacks with no slot left out for it is
// gone, and so is every one when nothing is left out. At most one unit is
// kept per slot. GPUs ordered by index, MIG devices by index; `unusable`
// as found. Thread-safe (pure).
NodeGpus KeepUndescribed(const NodeGpus& served, NodeGpus found);

}  // namespace gdp

#endif  // GDP_CMD_GPU_LAYOUT_H_
