// The health state file: the JSON edge of HealthState (health_state.h),
// kept on the host at <state dir>/health-state.json so that a plugin
// restart (a crash, a DaemonSet rollout) does not advertise a broken GPU
// as healthy again. Our own format, versioned; written atomically.
//
//   {"kind": "gpu-device-plugin/health-state", "version": 1,
//    "bootID": "...",
//    "gpus": [{"uuid": "GPU-...", "index": 2, "units": [
//      {"gpuInstance": 1, "computeInstance": 0,   (absent: the whole GPU)
//       "state": "needs-reset" | "recoverable" | "lost" | "healthy",
//       "reason": "...", "cause": "xid", "xid": 48,
//       "since": "<RFC 3339>",                     (all three: unhealthy)
//       "quietPeriod": "2m", "probeAt": "<RFC 3339>",
//       "probeError": "...",                       (these: recoverable)
//       "failures": ["<RFC 3339>", ...]}]}]}
#ifndef GDP_HEALTH_STATE_FILE_H_
#define GDP_HEALTH_STATE_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "health/health_state.h"

namespace gdp {

// The format this build writes, and the newest it reads.
inline constexpr int kHealthStateVersion = 1;

// The most the file may hold: a few hundred bytes per unit, a few units per
// GPU, at most a few dozen GPUs make some KiB. A larger file is damage,
// refused unread (it is re-read on every SIGHUP), and a state that would
// pass it is not written.
inline constexpr size_t kMaxHealthStateBytes = 1 << 20;

// The file's name in its directory.
inline constexpr char kHealthStateFileName[] = "health-state.json";

// <dir>/health-state.json.
std::string HealthStatePath(const std::string& dir);

// The file's text (indented JSON, GPUs by UUID, units by (gi, ci), ending
// in a newline). Equal states give equal text.
std::string SerializeHealthState(const HealthState& state);

// Reads a state file's text; `path` names it in messages.
// Result on failure: DataLoss "<path>: ..." for text that is not a state
// file of ours (empty, truncated or not JSON, nested deeper than 100
// levels, wrong kind, a missing, mistyped or unknown value: named by its
// place, e.g.
// "gpus[0].units[1].state: unknown state 'broken'"); FailedPrecondition
// "<path>: format version N is not one this gpu-device-plugin reads (1)"
// for another version.
absl::StatusOr<HealthState> ParseHealthState(absl::string_view text,
                                             const std::string& path);

// Reads the file at `path`: its text, unparsed (not following a symlink;
// never blocking on a FIFO).
// Result on failure: NotFound when there is no file; DataLoss "<path> is
// larger than 1048576 bytes" or "<path> is not a regular file (...)",
// unread; else the errno's status naming the path.
absl::StatusOr<std::string> ReadHealthStateText(const std::string& path);

// Reads and parses the file at `path`. Result on failure: as
// ReadHealthStateText, then as ParseHealthState.
absl::StatusOr<HealthState> ReadHealthState(const std::string& path);

// Writes `text` to `path` atomically (temporary file in the same directory,
// fsync, rename, fsync of the directory; mode 0644; the directory is
// created 0700 if missing). Result on failure: ResourceExhausted for text
// over kMaxHealthStateBytes (nothing written); the errno's status naming
// what failed.
absl::Status WriteHealthStateText(const std::string& path,
                                  absl::string_view text);

// Renames a bad file at `path` to <path>.corrupt (replacing an older one)
// so that it can be inspected. Returns the new path.
// Result on failure: the errno's status naming both paths.
absl::StatusOr<std::string> MoveHealthStateAside(const std::string& path);

}  // namespace gdp

#endif  // GDP_HEALTH_STATE_FILE_H_
