// Keeps a HealthTracker's state in the health state file (state_file.h)
// across restarts of the plugin: read once at start, written whenever the
// state changes, and read again when the operator says so (SIGHUP) to learn
// which GPUs were cleared with `gpu-device-plugin health-state clear`.
#ifndef GDP_HEALTH_STATE_STORE_H_
#define GDP_HEALTH_STATE_STORE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "health/health_state.h"
#include "health/tracker.h"

namespace gdp {

struct HealthStateOptions {
  // --state-dir: where health-state.json is kept; empty: no file at all.
  std::string dir;
  // This boot's ID (main reads /proc/sys/kernel/random/boot_id); empty:
  // unknown, and then no file is kept either (a reboot, which resets every
  // GPU, could not be told from a restart).
  std::string boot_id;
};

// Thread-safe. Lock order: the store's lock, then the tracker's; the store
// never calls a mutating tracker method, so Save may run inside the
// tracker's change callback.
class HealthStateStore {
 public:
  explicit HealthStateStore(HealthStateOptions options);
  HealthStateStore(const HealthStateStore&) = delete;
  HealthStateStore& operator=(const HealthStateStore&) = delete;

  // Whether a file is kept: a directory and a boot ID were given.
  bool enabled() const { return !path_.empty(); }
  // <dir>/health-state.json, or "" when not enabled.
  const std::string& path() const { return path_; }

  // Reads the file, once at start: the state to import. Empty when not
  // enabled (logged once, saying why), when there is no file, when the
  // file is from another boot (logged: dropped, a reboot resets every
  // GPU), and when it is bad (unreadable, empty, truncated, corrupt, of
  // another version): then it is logged, naming the file and what is
  // wrong, and renamed to <path>.corrupt; never an error.
  HealthState Load() ABSL_LOCKS_EXCLUDED(mu_);

  // Keeps the records of `loaded` (what Load returned) for GPUs not in
  // `present` (by UUID) as they are: every Save writes them beside the
  // tracker's state, unchanged, until Claim takes them or the operator
  // clears them (Cleared). So a GPU that start-up discovery left out (its
  // NVML calls hung) keeps its saved state until it is found again. They
  // come from a file within kMaxHealthStateBytes and are never added to.
  void Hold(const HealthState& loaded, const std::vector<GpuRef>& present)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The held records of the GPUs in `present` (by UUID), with this boot's
  // ID, for the tracker to Import; they are held no longer.
  HealthState Claim(const std::vector<GpuRef>& present)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Writes tracker.Export(now), with this boot's ID and the held records
  // of GPUs the export lacks (Hold), unless that text is what the file
  // holds already (as this store last wrote or read it); makes no file
  // for a state with no GPU. The directory is created if
  // missing. A failed write is logged once per distinct error and tried
  // again at the next Save; it never stops anything.
  void Save(const HealthTracker& tracker, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Reads the file again (on SIGHUP): the GPUs the file held when this
  // store last wrote or read it that it no longer holds, i.e. the ones
  // the operator cleared (with the index saved for them); held records
  // (Hold) of those GPUs are dropped. A missing file clears every GPU. Nothing
  // is cleared when the file is unchanged, and nothing (logged) when it cannot
  // be read, is bad (also moved aside; a file too large or not a regular file
  // unread) or is from another boot. Call Save afterwards to write the
  // tracker's state over whatever the file holds.
  std::vector<GpuRef> Cleared() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Logs that `path_` is bad (`why`) and renames it aside.
  void MoveAside(const std::string& why, const std::string& consequence)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const HealthStateOptions options_;
  const std::string path_;

  absl::Mutex mu_;
  // What the file holds as far as this store knows ("": no file) and the
  // state it holds.
  std::string on_disk_ ABSL_GUARDED_BY(mu_);
  HealthState on_disk_state_ ABSL_GUARDED_BY(mu_);
  // Saved records of GPUs the tracker was not given (Hold), by UUID.
  std::map<std::string, SavedGpu> held_ ABSL_GUARDED_BY(mu_);
  // The last write error logged ("" none since the last success).
  std::string last_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp

#endif  // GDP_HEALTH_STATE_STORE_H_
