// Command line and environment of gpu-device-plugin, with NVIDIA's flag and
// variable names: one option per row of the settings table
// (config/settings.h), plus the subcommands and --state-dir. The only place
// that reads the environment.
#ifndef GDP_CMD_FLAGS_H_
#define GDP_CMD_FLAGS_H_

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/load.h"

namespace gdp {

// kServe: the device plugin (and the labels with --labels); kDiscover: print
// the GPUs; kLabels: only the node labels; kHealthStateShow / Clear: print
// or clear the health state file (`health-state show|clear`); kNvmlReport:
// print what the driver answers, read only (`nvml-report`).
enum class Command {
  kServe,
  kDiscover,
  kLabels,
  kHealthStateShow,
  kHealthStateClear,
  kNvmlReport
};

struct ParsedFlags {
  // Flags, environment and config file, validated (LoadConfig). Absent:
  // exit with exit_code.
  std::optional<Config> config;
  Command command = Command::kServe;
  int exit_code = 0;
  // What a reload needs: LoadConfig(flag_config, explicit_settings) reads
  // the config file again and applies it under the flags. flag_config holds
  // the flags and environment over the defaults, without the file;
  // explicit_settings the settings a flag or variable gave. Set whenever
  // the command line parsed, even if the config was refused.
  Config flag_config;
  ExplicitSettings explicit_settings;
  // --state-dir (STATE_DIR): where the health state file is kept across
  // restarts; empty: not kept.
  std::string state_dir = "/var/lib/gpu-device-plugin";
  // `health-state clear --gpu UUID ...`: the GPUs to clear; empty: all.
  std::vector<std::string> clear_gpus;
  // `health-state clear --signal-pid PID`: the process to send SIGHUP to
  // once the file is written; 0: none.
  int signal_pid = 0;
  // nvml-report --cgroup: the cgroup whose memory limits are read.
  std::string report_cgroup;
};

// Parses argv and the environment (a flag beats its environment variable,
// which beats the config file, which beats the default), then loads and
// validates the configuration with LoadConfig. Prints --help/--version text
// to stdout and errors to stderr, naming the flag, or the config file, line
// and field; then config is absent and exit_code is 0 for help/version, 2
// for a usage error, a bad value or a bad or unreadable config file.
// An environment variable set to the empty string counts as not set.
ParsedFlags ParseFlags(int argc, const char* const* argv);

}  // namespace gdp

#endif  // GDP_CMD_FLAGS_H_
