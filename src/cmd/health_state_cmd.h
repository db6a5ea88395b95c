// The health state file from main: this boot's ID (which main reads and
// hands down), and the `health-state show` and `health-state clear`
// subcommands an operator runs (docs/health.md, "Health that survives
// restarts").
#ifndef GDP_CMD_HEALTH_STATE_CMD_H_
#define GDP_CMD_HEALTH_STATE_CMD_H_

#include <iosfwd>
#include <string>

#include "cmd/flags.h"
#include "util/boot_id.h"

namespace gdp {

// `gpu-device-plugin health-state show|clear` on the file in
// flags.state_dir; `boot_id` is this boot's ("" unknown).
// show: prints the file readably to `out` (each GPU with its units' state,
// reason, times and recent failures; whether it is from this boot).
// clear: drops the saved state of every GPU, or of each of
// flags.clear_gpus, rewriting the file atomically; prints each GPU dropped
// (and each named GPU that had none), then, with flags.signal_pid, sends
// it SIGHUP so that the running plugin applies it.
// A missing file is no error (nothing to show or clear). Errors go to
// `err`, naming the file and what is wrong.
// Returns the exit status: 0, 1 when the file cannot be read or parsed,
// written, or the signal cannot be sent, 2 for an empty --state-dir.
// REQUIRES: flags.command is kHealthStateShow or kHealthStateClear.
int RunHealthState(const ParsedFlags& flags, const std::string& boot_id,
                   std::ostream& out, std::ostream& err);

}  // namespace gdp

#endif  // GDP_CMD_HEALTH_STATE_CMD_H_
