#include "health/apply.h"

#include <utility>
#include <vector>

namespace gdp {

bool ApplyHealth(const HealthTracker& tracker, DeviceSet& set) {
  std::shared_ptr<const DeviceList> list = set.Get();
  std::vector<Device> next = list->devices;
  bool changed = false;
  for (Device& d : next) {
    DeviceHealth h = tracker.HealthOf(d);
    if (d.health == h.health && d.unhealthy_reason == h.reason &&
        d.unhealthy_cause == h.cause) {
      continue;
    }
    d.health = h.health;
    d.unhealthy_reason = std::move(h.reason);
    d.unhealthy_cause = h.cause;
    changed = true;
  }
  if (changed) set.Replace(std::move(next));
  return changed;
}

}  // namespace gdp
