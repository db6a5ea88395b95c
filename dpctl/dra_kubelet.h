// `dpctl dra-kubelet`: the kubelet's DRA side (plugin watcher, DRA plugin
// manager, NodePrepareResources / NodeUnprepareResources) driven by
// commands read from a file descriptor (stdin), with its events sent to an
// EventSink.
#ifndef GDP_DPCTL_DRA_KUBELET_H_
#define GDP_DPCTL_DRA_KUBELET_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "dra_calls.h"
#include "dra_client.h"
#include "dra_plugin_manager.h"
#include "events.h"

namespace gdp::dpctl {

struct DraKubeletConfig {
  // The plugin registry directory (the kubelet's plugins_registry);
  // created when missing.
  std::string registry_dir;
  // Versions known, health, timeouts and retries of registration.
  DraManagerOptions manager;
  // Deadline of each prepare or unprepare call.
  absl::Duration call_timeout = kDraCallTimeout;
  // Prepared in one call once a driver is registered.
  std::vector<ClaimRef> prepare;
  // Exit after that call.
  bool exit_after_prepare = false;
};

// Exit codes of RunDraKubelet.
inline constexpr int kDraKubeletOk = 0;
inline constexpr int kDraKubeletPrepareFailed = 1;
inline constexpr int kDraKubeletStartFailed = 1;

// Runs the emulator until `stop_fd` becomes readable (main passes a
// signalfd for SIGINT/SIGTERM; -1 for none), the `quit` command, or, with
// exit_after_prepare, the end of the automatic prepare. Reads one command
// per line from `input_fd`:
//   prepare <driver> <ns>/<name>/<uid> [<ns>/<name>/<uid> ...]
//   unprepare <driver> <ns>/<name>/<uid> [...]
//   list
//   quit
// where <driver> "-" means the only registered driver. Blank lines are
// skipped; a bad command emits a command_error event. End of input does
// not stop the emulator. On the way out every thread is joined. Returns
// kDraKubeletOk, kDraKubeletPrepareFailed (with exit_after_prepare: the
// call failed, or a claim has an error or is missing from the answer), or
// kDraKubeletStartFailed (after writing "error: <reason>" to `err`).
// `events` and `err` must stay valid during the call.
int RunDraKubelet(const DraKubeletConfig& config, EventSink* events,
                  int input_fd, int stop_fd, std::ostream& err);

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_DRA_KUBELET_H_
