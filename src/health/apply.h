// Pushes the tracker's view of health into a resource's devices.
#ifndef GDP_HEALTH_APPLY_H_
#define GDP_HEALTH_APPLY_H_

#include "device/device_set.h"
#include "health/tracker.h"

namespace gdp {

// Sets the health and reason of every device of `set` to what `tracker`
// says for it, publishing one new list (so ListAndWatch sends one update)
// if anything changed. Returns whether it did.
// REQUIRES: no other thread changes `set` meanwhile (after a resource is
// built, health is the only writer of its DeviceSet; callers serialize the
// health pushes of all resources).
bool ApplyHealth(const HealthTracker& tracker, DeviceSet& set);

}  // namespace gdp

#endif  // GDP_HEALTH_APPLY_H_
