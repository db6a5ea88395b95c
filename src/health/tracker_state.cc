// HealthTracker's export and import of the state kept across restarts
// (declared in tracker.h; the file format is health/state_file.h).
#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "health/health_state.h"
#include "health/tracker.h"
#include "util/logging.h"

namespace gdp {
namespace {

constexpr unsigned kAll = kNvmlAllInstances;

// Appended once to the reason of a unit restored from the state file.
constexpr char kRestoredNote[] =
    "; restored from the state file after a plugin restart";

// "GPU 3 GPU-..." plus " GPU instance 9 compute instance 0" for a MIG
// unit: how the tracker's logs name a unit.
std::string UnitLabel(const GpuRef& gpu, unsigned gi, unsigned ci) {
  std::string out = absl::StrCat("GPU ", gpu.index, " ", gpu.uuid);
  if (gi != kAll) absl::StrAppend(&out, " GPU instance ", gi);
  if (ci != kAll) absl::StrAppend(&out, " compute instance ", ci);
  return out;
}

}  // namespace

const char* SavedUnitStateName(SavedUnitState state) {
  switch (state) {
    case SavedUnitState::kHealthy:
      return "healthy";
    case SavedUnitState::kRecoverable:
      return "recoverable";
    case SavedUnitState::kNeedsReset:
      return "needs-reset";
    case SavedUnitState::kLost:
      return "lost";
  }
  return "unknown";
}

HealthState HealthTracker::Export(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  HealthState out;
  const absl::Time horizon = now - options_.flap_window;
  for (const auto& [uuid, g] : gpus_) {
    SavedGpu saved;
    saved.index = g.index;
    for (const auto& [scope, u] : g.units) {
      SavedUnit s;
      s.gi = scope.first;
      s.ci = scope.second;
      for (absl::Time t : u.failures) {
        if (t > horizon) s.failures.push_back(t);
      }
      switch (u.state) {
        case State::kHealthy:
          s.state = SavedUnitState::kHealthy;
          break;
        case State::kRecoverable:
          s.state = SavedUnitState::kRecoverable;
          s.quiet = u.quiet;
          s.probe_at = u.probe_at;
          s.probe_error = u.probe_error;
          break;
        case State::kNeedsReset:
          s.state = SavedUnitState::kNeedsReset;
          break;
        case State::kLost:
          s.state = SavedUnitState::kLost;
          break;
      }
      if (s.state == SavedUnitState::kHealthy) {
        if (s.failures.empty()) continue;
      } else {
        s.reason = u.reason;
        s.cause = u.cause;
        s.since = u.since;
      }
      saved.units.push_back(std::move(s));
    }
    if (saved.units.empty()) continue;
    if (NeedsReset(g)) saved.reset_markers = g.reset_base;
    out.gpus.emplace(uuid, std::move(saved));
  }
  return out;
}

size_t HealthTracker::Import(const HealthState& saved,
                             const std::vector<GpuRef>& present,
                             absl::Time now) {
  uint64_t before;
  size_t restored = 0;
  {
    absl::MutexLock lock(&mu_);
    before = generation_;
    const absl::Time horizon = now - options_.flap_window;
    for (const GpuRef& gpu : present) {
      const auto found = saved.gpus.find(gpu.uuid);
      if (found == saved.gpus.end()) continue;
      Gpu& g = GpuFor(gpu);
      bool changed =
          std::any_of(g.units.begin(), g.units.end(), [](const auto& entry) {
            return entry.second.state != State::kHealthy;
          });
      g.units.clear();
      for (const SavedUnit& s : found->second.units) {
        Unit u;
        for (absl::Time t : s.failures) {
          if (t > horizon) u.failures.push_back(t);
        }
        switch (s.state) {
          case SavedUnitState::kHealthy:
            u.state = State::kHealthy;
            break;
          case SavedUnitState::kRecoverable:
            u.state = State::kRecoverable;
            u.quiet = s.quiet;
            u.probe_at = s.probe_at;
            u.probe_error = s.probe_error;
            break;
          case SavedUnitState::kNeedsReset:
            u.state = State::kNeedsReset;
            break;
          case SavedUnitState::kLost:
            u.state = State::kLost;
            break;
        }
        if (u.state == State::kHealthy) {
          if (u.failures.empty()) continue;
        } else {
          u.reason = s.reason;
          if (!absl::EndsWith(u.reason, kRestoredNote)) {
            absl::StrAppend(&u.reason, kRestoredNote);
          }
          u.cause = s.cause;
          u.since = s.since;
          changed = true;
          LOG_WARN(
              "{}: unhealthy since {}: {}", UnitLabel(gpu, s.gi, s.ci),
              absl::FormatTime(absl::RFC3339_sec, s.since, absl::UTCTimeZone()),
              u.reason);
        }
        g.units[Scope{s.gi, s.ci}] = std::move(u);
      }
      ++restored;
      // The first read of NVML compares with what it said before.
      g.reset_base.reset();
      if (NeedsReset(g)) g.reset_base = found->second.reset_markers;
      const auto whole = g.units.find(Scope{kAll, kAll});
      if (whole != g.units.end() && whole->second.state == State::kLost) {
        // Discovery found it, so it answers NVML again: a reset.
        ResetLocked(gpu, g,
                    "it answers NVML again after being lost before the "
                    "plugin restarted",
                    now);
      }
      if (changed) Changed();
    }
  }
  NotifyIfChanged(before);
  return restored;
}

void HealthTracker::OnCleared(const GpuRef& gpu, const std::string& how,
                              absl::Time) {
  uint64_t before;
  {
    absl::MutexLock lock(&mu_);
    before = generation_;
    const auto it = gpus_.find(gpu.uuid);
    if (it == gpus_.end()) return;
    const bool unhealthy =
        std::any_of(it->second.units.begin(), it->second.units.end(),
                    [](const auto& entry) {
                      return entry.second.state != State::kHealthy;
                    });
    if (it->second.hung.empty()) {
      gpus_.erase(it);
    } else {  // a hang is not saved state: it stays until the GPU answers
      it->second.units.clear();
      it->second.reset_base.reset();
    }
    if (unhealthy) {
      LOG_INFO("{}: healthy again: {}", UnitLabel(gpu, kAll, kAll), how);
      Changed();
    } else {
      LOG_INFO("{}: its failure history is forgotten: {}",
               UnitLabel(gpu, kAll, kAll), how);
    }
  }
  NotifyIfChanged(before);
}

}  // namespace gdp
