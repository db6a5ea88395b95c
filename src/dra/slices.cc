#include "dra/slices.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace gdp::dra {

std::vector<Taint> TaintsFor(const Device& device,
                             const std::string& driver_name) {
  if (device.health == Health::kHealthy) return {};
  const std::string prefix = absl::StrCat(driver_name, "/");
  switch (device.unhealthy_cause.kind) {
    case HealthCause::Kind::kXid:
      return {{absl::StrCat(prefix, "xid"),
               absl::StrCat(device.unhealthy_cause.xid), "NoSchedule"}};
    case HealthCause::Kind::kLost:
      return {{absl::StrCat(prefix, "gpu-lost"), "", "NoSchedule"}};
    case HealthCause::Kind::kEcc:
      return {{absl::StrCat(prefix, "unhealthy"), "ecc", "NoSchedule"}};
    case HealthCause::Kind::kNvml:
      return {{absl::StrCat(prefix, "unhealthy"), "nvml", "NoSchedule"}};
    case HealthCause::Kind::kNvLink:
      return {{absl::StrCat(prefix, "unhealthy"), "nvlink", "NoSchedule"}};
    case HealthCause::Kind::kFlapping:
      return {{absl::StrCat(prefix, "unhealthy"), "flapping", "NoSchedule"}};
    case HealthCause::Kind::kNone:
      break;
  }
  // Unhealthy for a reason nobody classed: still never scheduled.
  return {{absl::StrCat(prefix, "unhealthy"), "", "NoSchedule"}};
}

std::vector<SliceDevice> SliceDevices(const std::vector<DraDevice>& inventory,
                                      const std::vector<Device>& health,
                                      const std::string& driver_name,
                                      bool withhold_unhealthy) {
  absl::flat_hash_map<std::string, const Device*> by_name;
  for (const Device& d : health) by_name.emplace(d.id, &d);
  std::vector<SliceDevice> out;
  out.reserve(inventory.size());
  for (const DraDevice& d : inventory) {
    SliceDevice s;
    s.name = d.name;
    s.attributes = d.attributes;
    s.capacity = d.capacity;
    s.allow_multiple_allocations = d.allow_multiple_allocations;
    s.request_policies = d.request_policies;
    if (auto it = by_name.find(d.name); it != by_name.end()) {
      s.taints = TaintsFor(*it->second, driver_name);
    }
    if (withhold_unhealthy && !s.taints.empty()) continue;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::vector<SliceDevice>> CutIntoSlices(
    std::vector<SliceDevice> devices, const SliceLimits& limits) {
  const bool tainted =
      std::any_of(devices.begin(), devices.end(),
                  [](const SliceDevice& d) { return !d.taints.empty(); });
  const size_t per_slice = std::max<size_t>(
      1, tainted ? limits.max_devices_with_taints : limits.max_devices);
  std::vector<std::vector<SliceDevice>> slices;
  for (size_t i = 0; i < devices.size(); i += per_slice) {
    const size_t end = std::min(devices.size(), i + per_slice);
    slices.emplace_back(std::make_move_iterator(devices.begin() + i),
                        std::make_move_iterator(devices.begin() + end));
  }
  if (slices.empty()) slices.emplace_back();
  return slices;
}

}  // namespace gdp::dra
