#include "topology/topology.h"

#include <cassert>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gdp {

int64_t Topology::PcieScore(PcieLevel level) {
  switch (level) {
    case PcieLevel::kInternal:
      return 60;
    case PcieLevel::kSingle:
      return 50;
    case PcieLevel::kMultiple:
      return 40;
    case PcieLevel::kHostBridge:
      return 30;
    case PcieLevel::kNode:
      return 20;
    case PcieLevel::kSystem:
      return 0;
  }
  return 0;
}

absl::StatusOr<Topology> Topology::Create(int num_gpus) {
  if (num_gpus < 0 || num_gpus > kMaxGpus) {
    return absl::InvalidArgumentError(absl::StrCat(
        "topology of ", num_gpus, " GPUs: must be 0 to ", kMaxGpus));
  }
  Topology t;
  t.num_gpus_ = num_gpus;
  t.links_.assign(static_cast<size_t>(num_gpus) * num_gpus, PairLink{});
  t.numa_.assign(num_gpus, -1);
  t.usable_.assign(num_gpus, true);
  return t;
}

int Topology::Index(int a, int b) const {
  assert(a >= 0 && a < num_gpus_ && b >= 0 && b < num_gpus_ && a != b);
  return a * num_gpus_ + b;
}

void Topology::SetNvLinks(int a, int b, int count) {
  links_[Index(a, b)].nvlinks = count;
  links_[Index(b, a)].nvlinks = count;
}

void Topology::SetNvSwitchLinks(int a, int b, int count) {
  links_[Index(a, b)].nvswitch_links = count;
  links_[Index(b, a)].nvswitch_links = count;
}

void Topology::SetPcie(int a, int b, PcieLevel level) {
  links_[Index(a, b)].pcie = level;
  links_[Index(b, a)].pcie = level;
}

void Topology::SetNumaNode(int gpu, int numa_node) {
  assert(gpu >= 0 && gpu < num_gpus_);
  numa_[gpu] = numa_node;
}

void Topology::SetUsable(int gpu, bool usable) {
  assert(gpu >= 0 && gpu < num_gpus_);
  usable_[gpu] = usable;
}

const PairLink& Topology::Link(int a, int b) const {
  return links_[Index(a, b)];
}

int Topology::NumaNode(int gpu) const {
  assert(gpu >= 0 && gpu < num_gpus_);
  return numa_[gpu];
}

bool Topology::Usable(int gpu) const {
  assert(gpu >= 0 && gpu < num_gpus_);
  return usable_[gpu];
}

bool Topology::NvLinked(int a, int b) const {
  const PairLink& l = Link(a, b);
  return l.nvlinks + l.nvswitch_links > 0;
}

int64_t Topology::PairScore(int a, int b) const {
  const PairLink& l = Link(a, b);
  int64_t score =
      kNvLinkScore * (l.nvlinks + l.nvswitch_links) + PcieScore(l.pcie);
  if (numa_[a] >= 0 && numa_[a] == numa_[b]) score += kSameNumaScore;
  return score;
}

}  // namespace gdp
