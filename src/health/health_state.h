// The part of the health tracker's state that is kept across restarts of
// the plugin (in the state file, health/state_file.h): the units that are
// unhealthy and the recent failures of each unit. Plain data; the tracker
// exports and imports it (HealthTracker::Export / Import).
#ifndef GDP_HEALTH_HEALTH_STATE_H_
#define GDP_HEALTH_HEALTH_STATE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "device/device.h"
#include "nvml/nvml.h"

namespace gdp {

// A unit's state as kept: what HealthTracker's state machine calls
// healthy, recoverable, needs-reset and lost.
enum class SavedUnitState { kHealthy, kRecoverable, kNeedsReset, kLost };

// One unit of a GPU: the whole GPU (gi and ci kNvmlAllInstances) or a MIG
// GPU / compute instance. kHealthy units are kept only for their failures.
struct SavedUnit {
  unsigned gi = kNvmlAllInstances;
  unsigned ci = kNvmlAllInstances;
  SavedUnitState state = SavedUnitState::kHealthy;
  std::string reason;  // while unhealthy: what happened and why
  HealthCause cause;   // while unhealthy: its kind
  absl::Time since;    // while unhealthy: when it went so (wall clock)
  // kRecoverable: the quiet period in force, when the next probe is due
  // (wall clock), and what the last probe found ("" none failed).
  absl::Duration quiet;
  absl::Time probe_at;
  std::string probe_error;
  // When it went unhealthy within the flap window, oldest first.
  std::vector<absl::Time> failures;
  bool operator==(const SavedUnit&) const = default;
};

struct SavedGpu {
  unsigned index = 0;            // NVML index when saved (for messages)
  std::vector<SavedUnit> units;  // ordered by (gi, ci)
  // While a unit needs a reset: what NVML said last of the GPU that a reset
  // changes (HealthTracker::OnResetMarkers), for a restarted plugin to see
  // whether the GPU was reset meanwhile; nullopt when not read yet.
  std::optional<NvmlResetMarkers> reset_markers = std::nullopt;
  bool operator==(const SavedGpu&) const = default;
};

struct HealthState {
  // The boot the state belongs to (/proc/sys/kernel/random/boot_id); a
  // reboot resets every GPU, so state of another boot is dropped.
  std::string boot_id;
  std::map<std::string, SavedGpu> gpus;  // by GPU UUID
  bool operator==(const HealthState&) const = default;
};

// "healthy", "recoverable", "needs-reset", "lost": how files and messages
// name a state.
const char* SavedUnitStateName(SavedUnitState state);

}  // namespace gdp

#endif  // GDP_HEALTH_HEALTH_STATE_H_
