// The GPU interconnect of one node as plain data: NVLink counts, PCIe
// relations and NUMA nodes per GPU pair, and the score that ranks pairs.
// Built once at discovery (from NVML, elsewhere); knows nothing of NVML.
#ifndef GDP_TOPOLOGY_TOPOLOGY_H_
#define GDP_TOPOLOGY_TOPOLOGY_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace gdp {

// How two GPUs meet on PCIe: NVML's nvmlGpuTopologyLevel_t (the values are
// NVML's), from nearest to farthest.
enum class PcieLevel : int {
  kInternal = 0,     // same board (e.g. a dual-GPU card)
  kSingle = 10,      // behind one PCIe switch
  kMultiple = 20,    // behind several PCIe switches, no host bridge between
  kHostBridge = 30,  // meet at one host bridge
  kNode = 40,        // meet within one NUMA node (several host bridges)
  kSystem = 50,      // meet only across sockets (SMP interconnect)
};

// What one GPU pair shares.
struct PairLink {
  // NVLinks running directly between the two GPUs.
  int nvlinks = 0;
  // Bandwidth through an NVSwitch fabric both GPUs are on, in links: the
  // smaller of the two GPUs' link counts into that fabric; 0 when they are
  // not on one fabric.
  int nvswitch_links = 0;
  PcieLevel pcie = PcieLevel::kSystem;
};

// N GPUs (0 <= N <= kMaxGpus), indexed 0..N-1, with a PairLink for every
// pair, a NUMA node and a usable flag for each GPU. A new Topology has no
// NVLinks, PCIe relation kSystem, NUMA node -1 (unknown) and every GPU
// usable. A value type; const methods are safe to call concurrently.
class Topology {
 public:
  static constexpr int kMaxGpus = 64;

  // Score parts (see docs/topology.md): every NVLink connection outranks
  // every PCIe relation, because the largest PCIe bonus plus the NUMA bonus
  // is below kNvLinkScore.
  static constexpr int64_t kNvLinkScore = 100;  // per link, direct or switch
  static constexpr int64_t kSameNumaScore = 10;
  static int64_t PcieScore(PcieLevel level);  // 60 internal .. 0 system

  // An empty topology (no GPUs).
  Topology() = default;

  // A topology of `num_gpus` unconnected GPUs. Result on failure:
  // InvalidArgument when num_gpus is negative or above kMaxGpus.
  static absl::StatusOr<Topology> Create(int num_gpus);

  int num_gpus() const { return num_gpus_; }

  // Setters. Pair setters are symmetric (set (a, b) and (b, a) at once).
  // REQUIRES: 0 <= a, b, gpu < num_gpus(); a != b; count >= 0.
  void SetNvLinks(int a, int b, int count);
  void SetNvSwitchLinks(int a, int b, int count);
  void SetPcie(int a, int b, PcieLevel level);
  void SetNumaNode(int gpu, int numa_node);  // -1: unknown
  // An unusable GPU (lost, or its links could not be read) is never chosen.
  void SetUsable(int gpu, bool usable);

  // Getters. REQUIRES: indices in range, a != b.
  const PairLink& Link(int a, int b) const;
  int NumaNode(int gpu) const;
  bool Usable(int gpu) const;

  // The worth of putting GPUs a and b in one allocation:
  //   kNvLinkScore * (nvlinks + nvswitch_links)
  //   + PcieScore(pcie)
  //   + kSameNumaScore if both NUMA nodes are known and equal.
  // Symmetric, >= 0. REQUIRES: indices in range, a != b.
  int64_t PairScore(int a, int b) const;

  // True when a and b are joined by NVLink, directly or through a shared
  // NVSwitch fabric. REQUIRES: indices in range, a != b.
  bool NvLinked(int a, int b) const;

 private:
  int Index(int a, int b) const;

  int num_gpus_ = 0;
  std::vector<PairLink> links_;  // num_gpus_ * num_gpus_, row-major
  std::vector<int> numa_;
  std::vector<bool> usable_;
};

}  // namespace gdp

#endif  // GDP_TOPOLOGY_TOPOLOGY_H_
