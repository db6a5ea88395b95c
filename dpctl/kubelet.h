// `dpctl kubelet`: the kubelet's device manager driven by commands read from
// a file descriptor (stdin), with its events sent to an EventSink.
#ifndef GDP_DPCTL_KUBELET_H_
#define GDP_DPCTL_KUBELET_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "events.h"

namespace gdp::dpctl {

// One --allocate RES=N[:POD].
struct AutoAllocation {
  std::string resource;
  int count = 0;
  std::string pod;  // empty: the next default name, pod-<n>
};

// Parses "RES=N" or "RES=N:POD" (N >= 1). InvalidArgument on bad input.
absl::StatusOr<AutoAllocation> ParseAutoAllocation(absl::string_view spec);

struct KubeletConfig {
  // The device-plugins directory (kubelet.sock is served there).
  std::string dir;
  // Run once each, as soon as the resource has enough healthy free devices.
  std::vector<AutoAllocation> allocations;
  // Exit once every allocation above has run.
  bool exit_after_allocate = false;
  absl::Duration dial_timeout = absl::Seconds(10);
  absl::Duration rpc_timeout = absl::Seconds(10);
};

// Exit codes of RunKubelet.
inline constexpr int kKubeletOk = 0;
inline constexpr int kKubeletAllocationFailed = 1;
inline constexpr int kKubeletStartFailed = 1;

// Runs the emulator until `stop_fd` becomes readable (main passes a
// signalfd for SIGINT/SIGTERM; -1 for none), the `quit` command, or, with
// exit_after_allocate, the end of the automatic allocations. Reads one
// command per line from `input_fd`:
//   allocate <resource> <count> [pod]
//   free <pod>
//   list
//   quit
// Blank lines are skipped; a bad command emits a command_error event. End of
// input does not stop the emulator. On the way out every thread is joined
// and kubelet.sock removed. Returns kKubeletOk, kKubeletAllocationFailed
// (an automatic allocation failed, with exit_after_allocate), or
// kKubeletStartFailed (after writing "error: <reason>" to `err`).
// `events` and `err` must stay valid during the call.
int RunKubelet(const KubeletConfig& config, EventSink* events, int input_fd,
               int stop_fd, std::ostream& err);

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_KUBELET_H_
