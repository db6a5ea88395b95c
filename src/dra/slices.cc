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
    s.consumes_counters = d.consumes_counters;
    s.shared_counters = d.shared_counters;
    if (auto it = by_name.find(d.name); it != by_name.end()) {
      s.taints = TaintsFor(*it->second, driver_name);
    }
    out.push_back(std::move(s));
  }
  if (withhold_unhealthy) WithholdTainted(&out);
  return out;
}

void WithholdTainted(std::vector<SliceDevice>* devices) {
  std::vector<CounterSet> orphans;
  std::vector<SliceDevice> kept;
  for (SliceDevice& d : *devices) {
    if (d.taints.empty()) {
      kept.push_back(std::move(d));
    } else if (d.shared_counters.has_value()) {
      orphans.push_back(*std::move(d.shared_counters));
    }
  }
  for (CounterSet& set : orphans) {
    for (SliceDevice& d : kept) {
      const bool consumes =
          std::any_of(d.consumes_counters.begin(), d.consumes_counters.end(),
                      [&](const CounterConsumption& c) {
                        return c.counter_set == set.name;
                      });
      if (consumes && !d.shared_counters.has_value()) {
        d.shared_counters = std::move(set);
        break;
      }
    }
  }
  *devices = std::move(kept);
}

std::vector<SliceContent> CutIntoSlices(std::vector<SliceDevice> devices,
                                        const SliceLimits& limits) {
  std::vector<SliceContent> slices;
  const size_t sets_per_slice = std::max<size_t>(1, limits.max_counter_sets);
  for (SliceDevice& d : devices) {
    if (!d.shared_counters.has_value()) continue;
    if (slices.empty() || slices.back().counter_sets.size() == sets_per_slice) {
      slices.emplace_back();
    }
    slices.back().counter_sets.push_back(*std::move(d.shared_counters));
    d.shared_counters.reset();
  }
  const bool advanced =
      std::any_of(devices.begin(), devices.end(), [](const SliceDevice& d) {
        return !d.taints.empty() || !d.consumes_counters.empty();
      });
  const size_t per_slice = std::max<size_t>(
      1, advanced ? limits.max_devices_with_taints : limits.max_devices);
  // Runs of devices consuming the same counter set (one GPU's), each
  // other device a run of its own.
  auto group = [](const SliceDevice& d) -> const std::string* {
    return d.consumes_counters.empty() ? nullptr
                                       : &d.consumes_counters[0].counter_set;
  };
  const size_t first_device_slice = slices.size();
  for (size_t i = 0; i < devices.size();) {
    size_t end = i + 1;
    if (const std::string* g = group(devices[i]); g != nullptr) {
      while (end < devices.size() && group(devices[end]) != nullptr &&
             *group(devices[end]) == *g) {
        ++end;
      }
    }
    // A run starts a slice of its own unless it fits in the open one.
    if (slices.size() == first_device_slice ||
        slices.back().devices.size() + (end - i) > per_slice) {
      slices.emplace_back();
    }
    for (; i < end; ++i) {
      if (slices.back().devices.size() == per_slice) slices.emplace_back();
      slices.back().devices.push_back(std::move(devices[i]));
    }
  }
  if (slices.empty()) slices.emplace_back();
  return slices;
}

}  // namespace gdp::dra
