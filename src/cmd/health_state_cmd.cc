#include "cmd/health_state_cmd.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ostream>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "health/health_state.h"
#include "health/state_file.h"

namespace gdp {
namespace {

std::string TimeText(absl::Time t) {
  return absl::FormatTime(absl::RFC3339_sec, t, absl::UTCTimeZone());
}

std::string ScopeText(const SavedUnit& u) {
  if (u.gi == kNvmlAllInstances && u.ci == kNvmlAllInstances) {
    return "whole GPU";
  }
  std::vector<std::string> parts;
  if (u.gi != kNvmlAllInstances) {
    parts.push_back(absl::StrCat("GPU instance ", u.gi));
  }
  if (u.ci != kNvmlAllInstances) {
    parts.push_back(absl::StrCat("compute instance ", u.ci));
  }
  return absl::StrJoin(parts, " ");
}

// "needs-reset since ...: <reason>" or "2 recent failure(s)": one line
// about what `gpu`'s saved state says, for clear's report.
std::string Summary(const SavedGpu& gpu) {
  for (const SavedUnit& u : gpu.units) {
    if (u.state != SavedUnitState::kHealthy) {
      return absl::StrCat(ScopeText(u), " ", SavedUnitStateName(u.state), ": ",
                          u.reason);
    }
  }
  size_t failures = 0;
  for (const SavedUnit& u : gpu.units) failures += u.failures.size();
  return absl::StrCat(failures, " recent failure(s), healthy");
}

void Show(const std::string& path, const HealthState& state,
          const std::string& boot_id, std::ostream& out) {
  out << "Health state file " << path << " (format " << kHealthStateVersion
      << ")\n";
  out << "Boot ID " << state.boot_id;
  if (boot_id.empty()) {
    out << " (this boot's ID is unknown)\n";
  } else if (state.boot_id == boot_id) {
    out << " (this boot)\n";
  } else {
    out << " (another boot: the plugin drops this state when it starts)\n";
  }
  if (state.gpus.empty()) {
    out << "No GPU has saved state.\n";
    return;
  }
  for (const auto& [uuid, gpu] : state.gpus) {
    out << "GPU " << gpu.index << " " << uuid << ":\n";
    for (const SavedUnit& u : gpu.units) {
      out << "  " << ScopeText(u) << ": " << SavedUnitStateName(u.state);
      if (u.state != SavedUnitState::kHealthy) {
        out << " since " << TimeText(u.since);
      }
      if (u.state == SavedUnitState::kRecoverable) {
        out << ", quiet period " << absl::FormatDuration(u.quiet)
            << ", next probe " << TimeText(u.probe_at);
      }
      out << "\n";
      if (!u.reason.empty()) out << "    " << u.reason << "\n";
      if (!u.probe_error.empty()) {
        out << "    last probe failed: " << u.probe_error << "\n";
      }
      if (!u.failures.empty()) {
        std::vector<std::string> times;
        for (absl::Time t : u.failures) times.push_back(TimeText(t));
        out << "    recent failures: " << absl::StrJoin(times, ", ") << "\n";
      }
    }
  }
}

int Clear(const ParsedFlags& flags, const std::string& path, HealthState state,
          std::ostream& out, std::ostream& err) {
  std::vector<std::string> drop;
  if (flags.clear_gpus.empty()) {
    for (const auto& [uuid, gpu] : state.gpus) drop.push_back(uuid);
  } else {
    for (const std::string& uuid : flags.clear_gpus) {
      if (state.gpus.contains(uuid)) {
        if (std::find(drop.begin(), drop.end(), uuid) == drop.end()) {
          drop.push_back(uuid);
        }
      } else {
        out << uuid << ": no saved state\n";
      }
    }
  }
  if (drop.empty()) {
    out << "Nothing to clear in " << path << "\n";
    return 0;
  }
  for (const std::string& uuid : drop) {
    const SavedGpu& gpu = state.gpus.at(uuid);
    out << "Dropped GPU " << gpu.index << " " << uuid << " (" << Summary(gpu)
        << ")\n";
    state.gpus.erase(uuid);
  }
  if (absl::Status s = WriteHealthStateText(path, SerializeHealthState(state));
      !s.ok()) {
    err << "gpu-device-plugin: " << s.message() << "\n";
    return 1;
  }
  out << "Wrote " << path << "\n";
  if (flags.signal_pid > 0) {
    if (kill(flags.signal_pid, SIGHUP) != 0) {
      err << "gpu-device-plugin: cannot send SIGHUP to process "
          << flags.signal_pid << ": " << std::strerror(errno) << "\n";
      return 1;
    }
    out << "Sent SIGHUP to process " << flags.signal_pid
        << ": the plugin marks those GPUs healthy again\n";
  } else {
    out << "Send SIGHUP to the running plugin (or restart it) so that it "
           "marks those GPUs healthy again\n";
  }
  return 0;
}

}  // namespace

int RunHealthState(const ParsedFlags& flags, const std::string& boot_id,
                   std::ostream& out, std::ostream& err) {
  if (flags.state_dir.empty()) {
    err << "gpu-device-plugin: --state-dir is empty: no health state file is "
           "kept\n";
    return 2;
  }
  const std::string path = HealthStatePath(flags.state_dir);
  absl::StatusOr<HealthState> state = ReadHealthState(path);
  if (absl::IsNotFound(state.status())) {
    out << "No health state file at " << path << ": no GPU has saved state\n";
    return 0;
  }
  if (!state.ok()) {
    err << "gpu-device-plugin: " << state.status().message()
        << " (the plugin moves a bad file aside to " << path
        << ".corrupt when it starts; removing it clears every GPU)\n";
    return 1;
  }
  if (flags.command == Command::kHealthStateShow) {
    Show(path, *state, boot_id, out);
    return 0;
  }
  return Clear(flags, path, *std::move(state), out, err);
}

}  // namespace gdp
