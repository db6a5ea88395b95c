// Prepares and unprepares claims for the kubelet (NodePrepareResources,
// NodeUnprepareResources), in our own terms: reads the claim, checks that
// its devices are ours and healthy, writes the claim's CDI spec, records it
// in the checkpoint, and answers the devices with their CDI IDs. No
// protobuf here (dra_service.cc is the gRPC edge) and no JSON (the claim
// comes through a ClaimReader).
#ifndef GDP_DRA_PREPARER_H_
#define GDP_DRA_PREPARER_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cdi/driver_files.h"
#include "cdi/memory_limit.h"
#include "cdi/spec.h"
#include "device/device_set.h"
#include "device/mig_caps.h"
#include "dra/checkpoint.h"
#include "dra/claim.h"
#include "dra/dynamic_mig.h"
#include "util/call_budget.h"

namespace gdp::dra {

// Where claims come from: the API server in the daemon, a table in tests.
class ClaimReader {
 public:
  virtual ~ClaimReader() = default;
  // The claim `ref` names, read now (by namespace and name), giving up at
  // `deadline` or as soon as `caller` is cancelled. Result on failure: its
  // status, naming the claim (NotFound, Unavailable, DeadlineExceeded,
  // Cancelled, ...).
  virtual absl::StatusOr<AllocatedClaim> Read(const ClaimRef& ref,
                                              absl::Time deadline,
                                              CallBudget& caller) = 0;
};

// What claim specs are built from, fixed between reloads (found once, not
// per claim).
struct ClaimSpecBase {
  cdi::CdiSpecOptions cdi;  // kind ClaimCdiKind(driver); host roots
  cdi::DriverFiles files;
  std::vector<std::string> control_nodes;
  std::string mps_root;  // empty: MPS sharing is refused
  // Shares (results with a shareID): how their memory limits are applied
  // (nullopt: a share with a memory limit is refused), and the `shares`
  // capacity each GPU publishes (--consumable-shares=<N>; 0: none).
  std::optional<cdi::MemoryLimitHook> memory_limit_hook;
  uint64_t share_count = 0;
  // The dynamic MIG devices (profile placements, made at prepare), by
  // device name; empty without NVIDIA's DynamicMIG gate.
  std::map<std::string, MigPlacement> dynamic_mig;
};

struct PreparerOptions {
  std::string driver_name;
  std::string pool;  // this node's pool: the node name
  std::string cdi_dir;
  std::string checkpoint_path;
  std::string boot_id;  // this boot's; recorded with the checkpoint
  // Where /proc is: a made MIG device's capability minors are read from
  // <proc_root>/driver/nvidia-caps/mig-minors, their major from
  // <proc_root>/devices.
  std::string proc_root = "/proc";
  // Tests only: runs at each step of making or destroying a claim's MIG
  // instances (dynamic_mig.h), on the thread doing it, e.g. to kill the
  // process there. Empty in the daemon.
  std::function<void(MigStep)> on_mig_step = nullptr;
};

// The most a claim's error may take: a call may carry many claims, and the
// kubelet refuses a gRPC answer over 4 MiB, so one claim (a 5 MB name, a
// long message from the API server) must not take the others' answers.
inline constexpr size_t kMaxClaimErrorBytes = 2048;

// The answer for one claim: its devices, or why it failed (at most
// kMaxClaimErrorBytes).
struct PrepareResult {
  std::vector<PreparedDevice> devices;
  std::string error;  // empty on success
};

// Thread-safe. Calls for different claims may run at once; a claim's
// preparation is recorded once.
class Preparer {
 public:
  // `reader` must outlive the preparer; `devices` (our DRA devices, by
  // name = Device::id, with health) too, and it may be replaced through
  // SetSources. `mig` (may be null: a dynamic MIG device then fails its
  // claim) makes and destroys dynamic MIG devices' instances and must
  // outlive the preparer.
  Preparer(PreparerOptions options, ClaimReader& reader,
           MigMaker* mig = nullptr);

  // What devices and spec base claims are prepared with from now on (at
  // start, and after a reload).
  void SetSources(const DeviceSet* devices,
                  std::shared_ptr<const ClaimSpecBase> base)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Loads the checkpoint and writes the CDI spec of every claim in it again
  // (after a reboot they are gone; otherwise nothing changes on disk). A
  // claim whose devices are no longer there is dropped, logged. A
  // checkpoint that cannot be read is moved aside to "<path>.bad-<unix
  // time>" and the preparer starts empty. REQUIRES: SetSources was called.
  // Dynamic MIG: first reconciles the MIG instances NVML reports with the
  // checkpoint, logging one line for each instance: a prepared claim's
  // instance is adopted (made again when it is gone, as after a reboot:
  // its claim is dropped, logged, when that fails); the instances of a
  // claim whose prepare or unprepare was cut short (a crash) are destroyed
  // and the claim dropped (the kubelet asks again; kept, to retry, when a
  // destroy fails); an instance no claim recorded is left alone and
  // named (not made by this driver). After a reboot (another boot ID) no
  // instance found is adopted or destroyed: the reboot destroyed ours, so
  // a prepared claim's are made again (its claim dropped when its
  // placement is taken) and a claim cut short is dropped.
  // Result: OK, or the checkpoint's error (already logged, nothing lost:
  // the file was kept aside), so callers can report it.
  absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);

  // Prepares one claim: a claim in the checkpoint answers from it (its
  // spec rewritten if it went missing) without reading the API server;
  // else the claim is read (giving up at `deadline`, or when `caller` is
  // cancelled), checked (its UID, that it is allocated, that every result
  // of our driver names a device of our pool that exists and is healthy,
  // its configuration) and its spec and checkpoint entry written. A result
  // with a shareID is a share: its own CDI device (ClaimCdiDeviceName with
  // the share ID) with the hard limit of the `memory` it consumed (none for
  // 0 or absent), answered with its share ID. A device is given either
  // whole or as shares, never both at once (a result of the other kind, in
  // this claim or another prepared one, fails the claim, naming both;
  // results with adminAccess are not counted). Nothing
  // is written once `caller` has gone (cancelled or past its deadline:
  // the kubelet never learns of it, so it would never unprepare it), nor
  // for a claim unprepared while it was read. A claim that fails gets its
  // own error, naming the claim and what was wrong. Calls for different
  // claims may run at once.
  // A dynamic MIG device (base.dynamic_mig) is made: the claim is recorded
  // as being prepared with its placements (refused when another claim's
  // overlaps one), then each GPU instance and its compute instance are
  // made through the MigMaker (a placement occupied by an instance this
  // claim did not make fails the claim; nothing is destroyed but what it
  // made), the MIG device's capability nodes read from mig-minors, the
  // spec written and the claim recorded prepared. On any failure the
  // instances it made are destroyed and the record removed. A claim left
  // recorded as being prepared (its instances could not be destroyed) is
  // undone first when it comes again.
  PrepareResult Prepare(const ClaimRef& ref, absl::Time deadline,
                        CallBudget& caller) ABSL_LOCKS_EXCLUDED(mu_);

  // Prepare() for each claim in turn (by UID; a UID named twice is
  // prepared once), with no deadline.
  std::map<std::string, PrepareResult> Prepare(
      const std::vector<ClaimRef>& claims) ABSL_LOCKS_EXCLUDED(mu_);

  // Removes each claim's spec and checkpoint entry; an unknown claim is
  // success (its spec file is removed if one is there), and one being
  // read for a Prepare meanwhile is not prepared by it. The value is the
  // claim's error ("" on success), by UID. Never waits for a claim read.
  // A claim with dynamic MIG devices is recorded as being unprepared, its
  // instances destroyed, then its record removed; a destroy that fails
  // (FailedPrecondition while processes still run on it) is the claim's
  // error, and the kubelet's next call goes on from there.
  std::map<std::string, std::string> Unprepare(
      const std::vector<ClaimRef>& claims) ABSL_LOCKS_EXCLUDED(mu_);

  // How many claims are prepared now (not counting claims being prepared
  // or unprepared).
  size_t prepared() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Prepares one claim not in the checkpoint.
  PrepareResult PrepareNew(const ClaimRef& ref, absl::Time deadline,
                           CallBudget& caller) ABSL_LOCKS_EXCLUDED(mu_);
  // The error of a claim one of whose MIG placements overlaps a GPU instance
  // of `instances` (GPU UUID -> what NVML listed) that no claim in the
  // checkpoint holds, naming it; "" when none does.
  std::string OccupiedLocked(
      const PreparedClaim& claim,
      const std::map<std::string, std::vector<MigGpuInstance>>& instances) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes the MIG instances of `claim` (recorded as being prepared) and
  // records it prepared; on failure undoes what it made. Result: the
  // claim's error, "" on success.
  std::string MakeAndRecord(PreparedClaim& claim) ABSL_LOCKS_EXCLUDED(mu_);
  // Destroys the MIG instances of claim `uid`, as recorded in `claim`, and
  // removes its record. On failure the record stays (as it was) and the
  // error is returned. REQUIRES: the caller put `uid` in destroying_ (under
  // mu_, after checking it was not there); it is taken out here.
  absl::Status DestroyAndForget(const std::string& uid,
                                const PreparedClaim& claim)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The dynamic MIG part of Start; true when the checkpoint changed.
  // `rebooted`: the checkpoint is of an earlier boot, whose instances the
  // reboot destroyed, so none found is adopted or destroyed (whoever made
  // it since is not this driver).
  bool ReconcileMigLocked(bool rebooted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The capability nodes of a made MIG device, its GPU instance's and its
  // compute instance's, by number (nvidia-caps' major from
  // <proc_root>/devices, minors from mig-minors, read again when it lacks
  // them): the host may have no such node, which only nvidia-modprobe makes.
  absl::StatusOr<std::vector<cdi::CdiDevice::CharNode>> MigCapNodesLocked(
      const MigRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Step(MigStep step) const;
  // Builds and writes the spec of `claim` from the current sources.
  absl::Status WriteSpec(const PreparedClaim& claim)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the checkpoint. `durable` false for a record of an intent (a
  // claim being prepared or unprepared): it must survive a crash of the
  // process, and a power loss makes it moot (a reboot destroys every MIG
  // instance), so it is not fsynced, which keeps two fsyncs off a dynamic
  // MIG prepare.
  absl::Status SaveLocked(bool durable = true)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Why `claim` cannot be prepared beside the prepared claims: a device
  // given whole in one and as a share in another (or in `claim` itself);
  // "" when none is.
  std::string WholeAndShared(const PreparedClaim& claim) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PreparerOptions options_;
  ClaimReader& reader_;
  MigMaker* const mig_;
  mutable absl::Mutex mu_;
  const DeviceSet* devices_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::shared_ptr<const ClaimSpecBase> base_ ABSL_GUARDED_BY(mu_);
  Checkpoint checkpoint_ ABSL_GUARDED_BY(mu_);
  std::optional<MigCaps> caps_ ABSL_GUARDED_BY(mu_);
  std::optional<unsigned> caps_major_ ABSL_GUARDED_BY(mu_);
  // Claims being read for a Prepare, by UID: how many reads, and whether
  // an Unprepare came meanwhile.
  struct Reading {
    int reads = 0;
    bool unprepared = false;
  };
  std::map<std::string, Reading> reading_ ABSL_GUARDED_BY(mu_);
  // Claims whose MIG instances a call is destroying, by UID: another call
  // for one of them meanwhile is refused, since instances are found by
  // placement and a destroy that came late would take the instance a
  // prepare made there since.
  std::set<std::string> destroying_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp::dra

#endif  // GDP_DRA_PREPARER_H_
