// Everything that lives from the first successful init to the last
// shutdown: the machine, the device handles of this init generation, the
// injected faults and the event sets. A Session is not thread-safe by
// itself; it is reached only through CurrentSession() (lifecycle.h) with
// state_mutex held.
#ifndef GDP_FAKE_NVML_SESSION_H_
#define GDP_FAKE_NVML_SESSION_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "fake_nvml/event_set.h"
#include "fake_nvml/machine.h"
#include "fake_nvml/mig_state.h"
#include "fake_nvml/state_mutex.h"
#include "nvml/nvml_api.h"

namespace gdp::fake_nvml {

class Session {
 public:
  // Takes the machine (at most kMaxGpus GPUs) and draws a new handle
  // generation: handles of earlier sessions are not valid in this one.
  explicit Session(Machine machine);
  // Closes every event set, waking their waiters.
  ~Session() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Machine& machine() const { return machine_; }
  // The machine as MIG operations change it (only the MIG modes, GPU and
  // compute instances and MIG devices of its GPUs change).
  Machine& mutable_machine() { return machine_; }
  unsigned gpu_count() const { return machine_.gpus.size(); }

  // The handle of GPU `index` (< gpu_count()); stable for the session.
  nvmlDevice_t Handle(unsigned index) const;

  // The GPU index of `handle`, or nullopt when this session did not issue
  // it (null, garbage, or from an earlier session). Never dereferences it.
  std::optional<unsigned> IndexOf(nvmlDevice_t handle) const;

  // The GPU `handle` belongs to: the GPU of a GPU handle or of a MIG device
  // handle of this session, nullopt for any other value (null, garbage,
  // earlier sessions). Never dereferences it.
  std::optional<unsigned> GpuOf(nvmlDevice_t handle) const;

  // A MIG device, GPU instance or compute instance: its GPU and its
  // position in that GPU's mig_devices (MIG devices, compute instances) or
  // gpu_instances (GPU instances) now. Handles name instances by their
  // IDs, so a handle stays with its instance while others come and go, and
  // resolves to nothing once it is destroyed.
  struct InstanceRef {
    unsigned gpu = 0;
    unsigned pos = 0;
  };

  // The handle of MIG device `mig` of GPU `gpu` (both in range); stable for
  // the session. The same kind of value as a GPU handle, never equal to one.
  nvmlDevice_t MigHandle(unsigned gpu, unsigned mig) const;
  // The MIG device behind `handle`, or nullopt when it is not a MIG device
  // handle of this session. Never dereferences it.
  std::optional<InstanceRef> MigOf(nvmlDevice_t handle) const;

  // GPU instance `pos` of GPU `gpu`, and back.
  nvmlGpuInstance_t GpuInstanceHandle(unsigned gpu, unsigned pos) const;
  std::optional<InstanceRef> GpuInstanceOf(nvmlGpuInstance_t handle) const;

  // The compute instance of MIG device `mig` of GPU `gpu`, and back.
  nvmlComputeInstance_t ComputeInstanceHandle(unsigned gpu, unsigned mig) const;
  std::optional<InstanceRef> ComputeInstanceOf(
      nvmlComputeInstance_t handle) const;

  // Where the MIG layout shared by every process lives (mig_state.h):
  // from $FAKE_NVML_MIG_STATE or $FAKE_NVML_CONTROL at init; nullopt when
  // neither was set (MIG changes stay in this process).
  const std::optional<std::string>& mig_state_path() const {
    return mig_state_path_;
  }
  void set_mig_state_path(std::optional<std::string> path) {
    mig_state_path_ = std::move(path);
  }
  // Re-reads the shared MIG state file when another process (or this one)
  // replaced it since the last read; a bad file is reported on stderr once
  // per change and the layout stays as it was.
  void SyncMig();
  // Applies `op` to the machine: under the shared file's lock when there
  // is one (mig_state.h UpdateMigState), else directly. Returns `op`'s
  // answer; UNKNOWN (reported on stderr) when the file fails.
  nvmlReturn_t UpdateMig(absl::FunctionRef<nvmlReturn_t(Machine&)> op);

  // Whether GPU `index` has fallen off the bus (fault "lose").
  bool lost(unsigned index) const { return lost_[index]; }
  void set_lost(unsigned index, bool lost) { lost_[index] = lost; }

  // The code every call returns while a "fail" fault is active.
  std::optional<nvmlReturn_t> failure() const { return failure_; }
  // Sets or clears the "fail" fault and wakes event waiters so that they
  // report it.
  void set_failure(std::optional<nvmlReturn_t> code)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

  // The code every call about MIG device `mig` of GPU `gpu` returns while a
  // "fail-mig" fault is active, and setting and clearing those faults.
  std::optional<nvmlReturn_t> mig_failure(unsigned gpu, unsigned mig) const;
  void set_mig_failure(unsigned gpu, unsigned mig, nvmlReturn_t code);
  void clear_mig_failures() { mig_failures_.clear(); }

  // The code every NVLink call about GPU `gpu` returns while a
  // "fail-nvlink" fault is active, and setting and clearing those faults.
  std::optional<nvmlReturn_t> nvlink_failure(unsigned gpu) const;
  void set_nvlink_failure(unsigned gpu, nvmlReturn_t code) {
    nvlink_failures_[gpu] = code;
  }
  void clear_nvlink_failures() { nvlink_failures_.clear(); }

  // GPU `gpu`'s health signals as they are now: the machine file's, as
  // control commands (remap-pending, pcie, nvlink, ecc, xid, reset, ...)
  // changed them.
  struct Signals {
    std::optional<RemappedRows> remapped_rows;  // Ampere and later only
    bool retired_pages_pending = false;
    PcieLink pcie;
    unsigned long long throttle_reasons = 0;
    std::vector<bool> nvlink_active;  // one per link of the machine file
    // nvmlDeviceGetFieldValues: the recovery action the driver asks for
    // (visible only where the driver has the field, ReportsRecoveryAction)
    // and the volatile ECC error counts since the GPU was last reset.
    nvmlDeviceGpuRecoveryAction_t recovery_action =
        NVML_GPU_RECOVERY_ACTION_NONE;
    unsigned long long volatile_sbe = 0;
    unsigned long long volatile_dbe = 0;
  };
  Signals& signals(unsigned gpu) { return signals_[gpu]; }
  const Signals& signals(unsigned gpu) const { return signals_[gpu]; }

  // Hang faults: whether calls taking a handle of GPU `index` block ("hang
  // <gpu>"), whether every call blocks ("hang-all"), and ending both kinds.
  // Blocked calls wait on state_mutex with a condition (ApiCall), which
  // absl re-evaluates whenever state_mutex is released, so changing these
  // needs no explicit wake-up.
  bool hung(unsigned index) const { return hung_[index]; }
  void set_hung(unsigned index) { hung_[index] = true; }
  bool hang_all() const { return hang_all_; }
  void set_hang_all() { hang_all_ = true; }
  void clear_hangs();

  // Creates an empty event set and returns its handle.
  nvmlEventSet_t CreateEventSet();

  // The event set behind `handle`, or null if this session did not create
  // it or it was freed.
  std::shared_ptr<EventSet> FindEventSet(nvmlEventSet_t handle) const;

  // Frees `handle`; false if FindEventSet would return null.
  bool FreeEventSet(nvmlEventSet_t handle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

  // Wakes every event set's waiters, so they re-check the GPUs' state.
  void WakeEventSets() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

  // Queues an event of `type` on GPU `gpu` in every set recording it.
  void Deliver(unsigned gpu, unsigned long long type, unsigned long long data,
               unsigned gpu_instance, unsigned compute_instance)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

  // Where per-cgroup memory limits are kept (memory_limits.h): from
  // $FAKE_NVML_MEMORY_LIMITS or $FAKE_NVML_CONTROL at init; nullopt when
  // neither was set.
  const std::optional<std::string>& memory_limits_path() const {
    return memory_limits_path_;
  }
  void set_memory_limits_path(std::optional<std::string> path) {
    memory_limits_path_ = std::move(path);
  }
  // The effective UID privileged calls see: $FAKE_NVML_EUID at init, else
  // geteuid().
  unsigned euid() const { return euid_; }
  void set_euid(unsigned euid) { euid_ = euid; }

 private:
  Machine machine_;
  std::optional<std::string> mig_state_path_;
  MigStateStamp mig_state_stamp_;
  const unsigned generation_;
  std::vector<bool> lost_;
  std::optional<nvmlReturn_t> failure_;
  absl::flat_hash_map<std::pair<unsigned, unsigned>, nvmlReturn_t>
      mig_failures_;
  absl::flat_hash_map<unsigned, nvmlReturn_t> nvlink_failures_;
  std::vector<bool> hung_;
  bool hang_all_ = false;
  std::vector<Signals> signals_;  // by GPU index
  // Keyed by the handle given out, which is the set's own address. Shared
  // so a waiter keeps its set alive across a concurrent free or shutdown.
  absl::flat_hash_map<nvmlEventSet_t, std::shared_ptr<EventSet>> event_sets_;
  std::optional<std::string> memory_limits_path_;
  unsigned euid_ = 0;
};

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_SESSION_H_
