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
// unusable, which count only by not being in the layout.
#ifndef GDP_CMD_GPU_LAYOUT_H_
#define GDP_CMD_GPU_LAYOUT_H_

#include <string>
#include <vector>

#include "device/gpu.h"

namespace gdp {

// What differs between the layouts of `before` and `after`, one line per
// change, naming the GPU (and MIG device) by UUID, e.g.
// "GPU GPU-1234 appeared", "GPU GPU-1234: MIG enabled",
// "GPU GPU-1234: MIG device MIG-5678 (1g.10gb) is gone". Empty when the
// layouts are the same. Thread-safe (pure).
std::vector<std::string> LayoutChanges(const NodeGpus& before,
                                       const NodeGpus& after);

// What a rediscovery serves: `found`, and, when `found` left out a GPU or
// MIG device NVML could not describe (found.unusable not empty), also every
// GPU of `served` that `found` lacks, and every MIG device of `served` that
// `found` lacks on a GPU whose MIG mode did not change; GPUs ordered by
// index, MIG devices by index. So a GPU fallen off the bus, hung or
// failing stays listed (unhealthy, from the health monitor) under its ID,
// as docs/health.md wants; it leaves the list at the first rediscovery
// that leaves nothing out, or on a reload. While anything is left out, a
// device that really went away stays listed too. Thread-safe (pure).
NodeGpus KeepUndescribed(const NodeGpus& served, NodeGpus found);

}  // namespace gdp

#endif  // GDP_CMD_GPU_LAYOUT_H_
