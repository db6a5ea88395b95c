#include "health/state_store.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "health/state_file.h"
#include "util/logging.h"

namespace gdp {
namespace {

std::string PathFor(const HealthStateOptions& o) {
  if (o.dir.empty() || o.boot_id.empty()) return "";
  return HealthStatePath(o.dir);
}

}  // namespace

HealthStateStore::HealthStateStore(HealthStateOptions options)
    : options_(std::move(options)), path_(PathFor(options_)) {}

void HealthStateStore::MoveAside(const std::string& why,
                                 const std::string& consequence) {
  absl::StatusOr<std::string> aside = MoveHealthStateAside(path_);
  if (aside.ok()) {
    LOG_ERROR("Health state file: {}; {} (the file is kept as {})", why,
              consequence, *aside);
  } else {
    LOG_ERROR("Health state file: {}; {} ({})", why, consequence,
              aside.status().message());
  }
}

HealthState HealthStateStore::Load() {
  if (options_.dir.empty()) {
    LOG_INFO(
        "Health state is not kept across restarts (--state-dir is "
        "empty)");
    return {};
  }
  if (options_.boot_id.empty()) {
    LOG_WARN(
        "Health state is not kept across restarts: this boot's ID could not "
        "be read, so a reboot could not be told from a restart");
    return {};
  }
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::string> text = ReadHealthStateText(path_);
  if (absl::IsNotFound(text.status())) {
    LOG_INFO("Health state file {}: none yet", path_);
    return {};
  }
  if (!text.ok()) {
    MoveAside(std::string(text.status().message()),
              "starting with a fresh health state");
    return {};
  }
  absl::StatusOr<HealthState> state = ParseHealthState(*text, path_);
  if (!state.ok()) {
    MoveAside(std::string(state.status().message()),
              "ignored; starting with a fresh health state");
    return {};
  }
  on_disk_ = *std::move(text);
  if (state->boot_id != options_.boot_id) {
    LOG_INFO(
        "Health state file {} is from another boot (boot ID '{}', now '{}'): "
        "dropped, since a reboot resets every GPU",
        path_, state->boot_id, options_.boot_id);
    on_disk_state_ = {};
    return {};
  }
  on_disk_state_ = *state;
  LOG_INFO("Health state file {}: saved state of {} GPU(s)", path_,
           state->gpus.size());
  return *std::move(state);
}

void HealthStateStore::Hold(const HealthState& loaded,
                            const std::vector<GpuRef>& present) {
  absl::MutexLock lock(&mu_);
  for (const auto& [uuid, gpu] : loaded.gpus) {
    // Named for the lambda: clang 14 cannot capture a structured binding.
    const std::string& id = uuid;
    const bool found =
        std::any_of(present.begin(), present.end(),
                    [&](const GpuRef& p) { return p.uuid == id; });
    if (found) continue;
    LOG_INFO(
        "Health state file {}: GPU {} {} is not found now; its saved state "
        "is kept until it is",
        path_, gpu.index, uuid);
    held_.insert_or_assign(uuid, gpu);
  }
}

HealthState HealthStateStore::Claim(const std::vector<GpuRef>& present) {
  absl::MutexLock lock(&mu_);
  HealthState out;
  out.boot_id = options_.boot_id;
  for (const GpuRef& gpu : present) {
    auto it = held_.find(gpu.uuid);
    if (it == held_.end()) continue;
    out.gpus.insert(held_.extract(it));
  }
  return out;
}

void HealthStateStore::Save(const HealthTracker& tracker, absl::Time now) {
  if (!enabled()) return;
  absl::MutexLock lock(&mu_);
  HealthState state = tracker.Export(now);
  state.boot_id = options_.boot_id;
  for (const auto& [uuid, gpu] : held_) state.gpus.emplace(uuid, gpu);
  std::string text = SerializeHealthState(state);
  if (text == on_disk_) return;
  if (on_disk_.empty() && state.gpus.empty()) return;
  absl::Status written = WriteHealthStateText(path_, text);
  if (!written.ok()) {
    if (written.message() != last_error_) {
      last_error_ = std::string(written.message());
      LOG_ERROR(
          "Cannot write the health state file {}: {}; health is still "
          "checked, but a restart of the plugin would forget it (tried again "
          "at the next change)",
          path_, last_error_);
    }
    return;
  }
  if (!last_error_.empty()) {
    LOG_INFO("Health state file {} written again", path_);
    last_error_.clear();
  }
  VLOG(1, "Health state file {}: {} GPU(s) written", path_, state.gpus.size());
  on_disk_ = std::move(text);
  on_disk_state_ = std::move(state);
}

std::vector<GpuRef> HealthStateStore::Cleared() {
  if (!enabled()) return {};
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::string> text = ReadHealthStateText(path_);
  HealthState now_state;
  if (absl::IsNotFound(text.status())) {
    text = std::string();
  } else if (absl::IsDataLoss(text.status())) {
    // Too large or not a file: damage, set aside unread.
    MoveAside(std::string(text.status().message()),
              "no GPU's saved state is cleared");
    on_disk_.clear();
    return {};
  } else if (!text.ok()) {
    LOG_ERROR("Health state file: {}; no GPU's saved state is cleared",
              text.status().message());
    return {};
  } else if (*text == on_disk_) {
    return {};
  } else {
    absl::StatusOr<HealthState> parsed = ParseHealthState(*text, path_);
    if (!parsed.ok()) {
      MoveAside(std::string(parsed.status().message()),
                "no GPU's saved state is cleared");
      on_disk_.clear();
      return {};
    }
    if (parsed->boot_id != options_.boot_id) {
      LOG_WARN(
          "Health state file {} now holds the state of another boot (boot ID "
          "'{}', now '{}'); no GPU's saved state is cleared",
          path_, parsed->boot_id, options_.boot_id);
      on_disk_ = *std::move(text);
      return {};
    }
    now_state = *std::move(parsed);
  }
  std::vector<GpuRef> cleared;
  for (const auto& [uuid, gpu] : on_disk_state_.gpus) {
    if (now_state.gpus.contains(uuid)) continue;
    cleared.push_back({uuid, gpu.index});
    held_.erase(uuid);
  }
  on_disk_ = *std::move(text);
  on_disk_state_ = std::move(now_state);
  return cleared;
}

}  // namespace gdp
