// The health of the node's physical GPUs and MIG instances: a state machine
// fed by the monitor (events, probe results, NVML failures) and read by
// whoever advertises devices. Time is passed in, so tests drive it.
//
// State is keyed by physical unit (GPU UUID, and a GPU / compute instance
// within it), never by advertised device ID: every replica of a GPU and
// every resource's device for it get the same answer, and the state
// survives resources being rebuilt (config reload, kubelet restart).
#ifndef GDP_HEALTH_TRACKER_H_
#define GDP_HEALTH_TRACKER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "device/device.h"
#include "health/health_state.h"
#include "health/xid_policy.h"
#include "nvml/nvml.h"

namespace gdp {

// A GPU as health code names it: UUID (the key) and NVML index (for logs).
struct GpuRef {
  std::string uuid;
  unsigned index = 0;
};

// The GPUs of a discovery, as GpuRefs.
std::vector<GpuRef> GpuRefs(const NodeGpus& node);

// A health event from NVML about one GPU.
struct HealthEvent {
  enum class Kind { kXid, kSingleBitEcc, kDoubleBitEcc };
  Kind kind = Kind::kXid;
  uint64_t xid = 0;  // kXid only
  // The MIG GPU / compute instance it names; kNvmlAllInstances: none in
  // particular. Either may be kNvmlAllInstances alone (all compute
  // instances of a GPU instance, or that compute instance ID in every GPU
  // instance), as in NVIDIA's plugin.
  unsigned gi = kNvmlAllInstances;
  unsigned ci = kNvmlAllInstances;
};

struct HealthTrackerOptions {
  // How long a unit with a recoverable failure stays unhealthy before it is
  // probed, the first time in a flap window.
  absl::Duration quiet_period = absl::Seconds(60);
  // Each further failure of the same unit within `flap_window` doubles the
  // quiet period, up to this.
  absl::Duration max_quiet_period = absl::Hours(1);
  absl::Duration flap_window = absl::Minutes(10);
  // How soon a failed probe is tried again.
  absl::Duration probe_interval = absl::Seconds(10);
};

// What a probe of a unit found.
enum class ProbeResult {
  kPass,  // NVML answers for it
  kFail,  // NVML answered with an error (other than the two below)
  kLost,  // the GPU is lost (NVML_ERROR_GPU_IS_LOST) or no longer found
  kGone,  // the GPU works but the MIG instance no longer exists
};

// A unit whose recoverable failure is due for a probe.
struct ProbeTarget {
  GpuRef gpu;
  unsigned gi = kNvmlAllInstances;  // kNvmlAllInstances: the whole GPU
  unsigned ci = kNvmlAllInstances;
};

// How `now` shows that a GPU was reset since `before` (two reads of its
// Nvml::ResetMarkers), or "" when it does not: NVML's recovery action went
// from one that a reset (or more) completes (GPU_RESET, NODE_REBOOT,
// DRAIN_AND_RESET, BUS_RESET, SYSTEM_REBOOT) to NONE, or a volatile ECC
// count went down (they count from the driver's load of the GPU, and a
// reset loads it anew). Never while NVML asks for an action (`now` has one
// other than NONE); DRAIN_P2P or RECOVER_IMEX_DOMAIN going to NONE is no
// reset, nor is anything NVML cannot say (nullopt on either side).
std::string ResetEvidence(const NvmlResetMarkers& before,
                          const NvmlResetMarkers& now);

// A device's health as the tracker sees it.
struct DeviceHealth {
  Health health = Health::kHealthy;
  std::string reason;  // empty while healthy
  HealthCause cause;   // kNone while healthy
};

// Thread-safe. The change callback runs on the thread whose call made the
// change, after the tracker's lock is released.
//
// Units: an event naming no instance is about the whole GPU; one naming a
// GPU and/or compute instance is about that instance (a unit of its own).
// A device is unhealthy when NVML failed as a whole, or when any unhealthy
// unit of its GPU covers it: a whole-GPU device (not MIG) is covered by
// every unit of its GPU, a MIG device (gi, ci) by the whole-GPU unit and by
// the units whose instance IDs match its own (kNvmlAllInstances matches
// any).
//
// States of a unit: healthy; recoverable (probed once its quiet period has
// passed without a new critical event, healthy when the probe passes);
// needs-reset (healthy only after a reset); lost (whole GPU only: NVML says
// the GPU is lost, or XID 79 says it fell off the bus; a reset when it
// answers again). A reset clears every unit of the GPU; if the GPU failed
// more than once within the flap window it is then held (recoverable) for
// its quiet period first.
class HealthTracker {
 public:
  explicit HealthTracker(XidPolicy policy, HealthTrackerOptions options = {});
  HealthTracker(const HealthTracker&) = delete;
  HealthTracker& operator=(const HealthTracker&) = delete;

  const XidPolicy& policy() const { return policy_; }
  const HealthTrackerOptions& options() const { return options_; }

  // Calls `on_change` after every change of any device's health or reason
  // (replacing an earlier callback; nullptr: none). Callbacks are run one
  // at a time under an internal lock: `on_change` may read the tracker
  // (HealthOf, generation, ...) but must not call SetOnChange or a mutating
  // method, and nobody may call a mutating method while holding a lock
  // `on_change` takes. Call before events flow; after SetOnChange(nullptr)
  // returns, the old callback is not running.
  void SetOnChange(std::function<void()> on_change) ABSL_LOCKS_EXCLUDED(mu_);

  // Counts changes of any device's health or reason, and of what Export
  // keeps; starts at 0.
  uint64_t generation() const ABSL_LOCKS_EXCLUDED(mu_);

  // An NVML health event about `gpu`, classed by the policy.
  void OnEvent(const GpuRef& gpu, const HealthEvent& event, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // NVML says `gpu` is lost (or no longer finds it): `why` says how.
  void OnGpuLost(const GpuRef& gpu, const std::string& why, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // `gpu` answers NVML. If it was lost, that is a reset; if it was hung,
  // it is no longer.
  void OnGpuAnswers(const GpuRef& gpu, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // An NVML call about `gpu` did not return by its deadline (`why`, e.g.
  // "NVML nvmlDeviceGetMemoryInfo did not return in 10s"): every device of
  // the GPU is unhealthy with that reason (cause kNvml) until OnGpuAnswers,
  // whatever state its units are in. Not a failure of a unit: no flap
  // history, no quiet period. Logged when it begins.
  void OnGpuHung(const GpuRef& gpu, const std::string& why, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // NVML reports a condition of `gpu` as a whole that a reset cures, or
  // that lasts until the GPU is replaced (row remapping pending or failed,
  // retired pages pending, an NVLink that went inactive; health/signals.h):
  // the whole GPU needs a reset, with reason "<what>; unhealthy <until>"
  // and `cause`. As a needs-reset XID: kept in the state file, and cleared
  // by a reset (OnReset, OnGpuAnswers after lost) or OnCleared. A GPU
  // already needing a reset keeps its reason.
  void OnNeedsReset(const GpuRef& gpu, const std::string& what,
                    const std::string& until, HealthCause cause, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // What NVML says of `gpu` now that a GPU reset changes (the recovery
  // action and volatile ECC counts, Nvml::ResetMarkers), read by the
  // monitor after an event that needs a reset and at every sweep while a
  // unit of the GPU needs one. The first read after a unit came to need a
  // reset is kept (and exported, so that a restarted plugin compares with
  // it); a later read that shows a reset since (ResetEvidence) clears every
  // unit of the GPU as OnReset does, else it is kept instead. Reads of a
  // GPU none of whose units needs a reset are ignored.
  void OnResetMarkers(const GpuRef& gpu, const NvmlResetMarkers& read,
                      absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // Whether a unit of GPU `uuid` needs a reset (OnResetMarkers wants reads).
  bool AwaitsReset(const std::string& uuid) const ABSL_LOCKS_EXCLUDED(mu_);

  // `gpu` was reset by other means (e.g. discovery saw it vanish and come
  // back): every unit of it is cleared as described above.
  void OnReset(const GpuRef& gpu, const std::string& how, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // NVML failed as a whole (`why` names the call): every device is
  // unhealthy until OnNvmlWorks. Logged once per failure.
  void OnNvmlFailure(const std::string& why, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  void OnNvmlWorks(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  bool nvml_failed() const ABSL_LOCKS_EXCLUDED(mu_);
  // Why NVML counts as failed (the reason OnNvmlFailure got), or "" while
  // it works.
  std::string nvml_failure() const ABSL_LOCKS_EXCLUDED(mu_);

  // The recoverable units whose probe is due at `now`, and the earliest
  // time one will be (absl::InfiniteFuture() if none).
  std::vector<ProbeTarget> DueProbes(absl::Time now) const
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Time NextProbe() const ABSL_LOCKS_EXCLUDED(mu_);

  // The result of probing `target` (from DueProbes). `detail` says what
  // failed (for kFail / kLost).
  void OnProbe(const ProbeTarget& target, ProbeResult result,
               const std::string& detail, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // A sweep found MIG instance `target` (a GPU and compute instance)
  // failing NVML calls (`detail`) while its GPU answers: if the unit is
  // healthy it becomes recoverable (cause kNvml), probed after its quiet
  // period as any recoverable failure; a unit already unhealthy is left as
  // it is (so a sweep does not restart its quiet period).
  void OnMigProbeFailed(const ProbeTarget& target, const std::string& detail,
                        absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // What `device` should advertise. Replicas share their unit's answer.
  DeviceHealth HealthOf(const Device& device) const ABSL_LOCKS_EXCLUDED(mu_);

  // The state to keep across a restart (health/tracker_state.cc): every
  // GPU with an unhealthy unit or a failure within the flap window before
  // `now`, with those units (and only those). boot_id is left empty. The
  // NVML failure as a whole is not kept (the monitor finds it again).
  HealthState Export(absl::Time now) const ABSL_LOCKS_EXCLUDED(mu_);

  // Applies `saved` (from Export of an earlier run in the same boot) to the
  // GPUs in `present` (matched by UUID; the saved index is replaced by the
  // present one), replacing what the tracker knows of them; saved GPUs not
  // present are dropped. Failures older than the flap window before `now`
  // are dropped. A restored unhealthy unit keeps its reason, with
  // "; restored from the state file after a plugin restart" appended once,
  // and its wall-clock times (a recoverable unit whose probe time has
  // passed is due at once). A lost GPU that is present answers NVML again,
  // so it is reset as OnGpuAnswers would (held if it flapped). Each
  // restored unit is logged. Returns how many GPUs got state from `saved`.
  size_t Import(const HealthState& saved, const std::vector<GpuRef>& present,
                absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // The operator cleared the saved state of `gpu` (`how` says so): every
  // unit of it is healthy and its failures are forgotten, as if it had
  // never failed. Logged if it was unhealthy; nothing if unknown.
  void OnCleared(const GpuRef& gpu, const std::string& how, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class State { kHealthy, kRecoverable, kNeedsReset, kLost };
  using Scope = std::pair<unsigned, unsigned>;  // (gi, ci)
  struct Unit {
    State state = State::kHealthy;
    std::string reason;       // while unhealthy: what happened and why
    HealthCause cause;        // while unhealthy: its kind
    std::string probe_error;  // kRecoverable: what the last probe found
    absl::Time since;         // while unhealthy: when it went so
    absl::Time probe_at;      // kRecoverable: next probe
    absl::Duration quiet;     // kRecoverable: the quiet period in force
    std::vector<absl::Time> failures;  // went unhealthy, within the window
  };
  struct Gpu {
    unsigned index = 0;
    std::string hung;  // while an NVML call about it hangs: why
    std::map<Scope, Unit> units;
    // While a unit needs a reset: the last read of its reset markers
    // (OnResetMarkers), none before the first read after it came to.
    std::optional<NvmlResetMarkers> reset_base;
  };

  // Whether a unit of `g` needs a reset.
  static bool NeedsReset(const Gpu& g);

  // Records a transition of `unit` to unhealthy at `now`; returns how many
  // failures it has had within the flap window, this one included.
  size_t CountFailure(Unit& unit, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The quiet period after the n-th failure within the window.
  absl::Duration QuietFor(size_t n) const;
  // Makes `unit` of `gpu` unhealthy in `state` with `reason`; logs. For
  // kNeedsReset, `until` replaces "until the GPU is reset" in the reason.
  void Fail(const GpuRef& gpu, Gpu& g, Scope scope, State state,
            const std::string& what, HealthCause cause, absl::Time now,
            const std::string& until = "") ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ResetLocked(const GpuRef& gpu, Gpu& g, const std::string& how,
                   absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Gpu& GpuFor(const GpuRef& gpu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Bumps the generation; the callback runs when the outermost call ends.
  void Changed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs the callback if the generation moved past `before`.
  void NotifyIfChanged(uint64_t before) ABSL_LOCKS_EXCLUDED(mu_);

  const XidPolicy policy_;
  const HealthTrackerOptions options_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Gpu> gpus_ ABSL_GUARDED_BY(mu_);
  bool nvml_failed_ ABSL_GUARDED_BY(mu_) = false;
  std::string nvml_reason_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;

  // Held while the callback runs; taken before mu_, never while holding it.
  absl::Mutex cb_mu_;
  std::function<void()> on_change_ ABSL_GUARDED_BY(cb_mu_);
};

}  // namespace gdp

#endif  // GDP_HEALTH_TRACKER_H_
