#include "health/tracker.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "util/logging.h"

namespace gdp {
namespace {

constexpr unsigned kAll = kNvmlAllInstances;

// " GPU instance 9 compute instance 0", or "" for the whole GPU.
std::string ScopeLabel(unsigned gi, unsigned ci) {
  std::string out;
  if (gi != kAll) absl::StrAppend(&out, " GPU instance ", gi);
  if (ci != kAll) absl::StrAppend(&out, " compute instance ", ci);
  return out;
}

// "GPU 3 GPU-..." plus the scope: how logs name a unit.
std::string Label(const GpuRef& gpu, unsigned gi, unsigned ci) {
  return absl::StrCat("GPU ", gpu.index, " ", gpu.uuid, ScopeLabel(gi, ci));
}

// "1st", "2nd", "3rd", "4th", ..., "11th", "21st".
std::string Ordinal(size_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    switch (n % 10) {
      case 1:
        suffix = "st";
        break;
      case 2:
        suffix = "nd";
        break;
      case 3:
        suffix = "rd";
        break;
    }
  }
  return absl::StrCat(n, suffix);
}

// How logs name recovery action `a`.
std::string ActionName(unsigned a) {
  switch (a) {
    case NVML_GPU_RECOVERY_ACTION_NONE:
      return "none";
    case NVML_GPU_RECOVERY_ACTION_GPU_RESET:
      return "GPU reset";
    case NVML_GPU_RECOVERY_ACTION_NODE_REBOOT:
      return "node reboot";
    case NVML_GPU_RECOVERY_ACTION_DRAIN_P2P:
      return "drain P2P";
    case NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET:
      return "drain P2P and reset";
    case NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN:
      return "recover IMEX domain";
    case NVML_GPU_RECOVERY_ACTION_BUS_RESET:
      return "PCIe bus reset";
    case NVML_GPU_RECOVERY_ACTION_SYSTEM_REBOOT:
      return "system reboot";
    default:
      return absl::StrCat("action ", a);
  }
}

// Whether recovery action `a` is done by a GPU reset or more.
bool ResetCompletes(unsigned a) {
  switch (a) {
    case NVML_GPU_RECOVERY_ACTION_GPU_RESET:
    case NVML_GPU_RECOVERY_ACTION_NODE_REBOOT:
    case NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET:
    case NVML_GPU_RECOVERY_ACTION_BUS_RESET:
    case NVML_GPU_RECOVERY_ACTION_SYSTEM_REBOOT:
      return true;
    default:
      return false;
  }
}

std::string CountText(const std::optional<unsigned long long>& n) {
  return n.has_value() ? absl::StrCat(*n) : "?";
}

}  // namespace

std::string ResetEvidence(const NvmlResetMarkers& before,
                          const NvmlResetMarkers& now) {
  if (now.recovery_action.has_value() &&
      *now.recovery_action != NVML_GPU_RECOVERY_ACTION_NONE) {
    return "";
  }
  if (before.recovery_action.has_value() &&
      ResetCompletes(*before.recovery_action) &&
      now.recovery_action.has_value()) {
    return absl::StrCat("NVML's GPU recovery action went from ",
                        ActionName(*before.recovery_action), " to none");
  }
  auto dropped = [](const std::optional<unsigned long long>& a,
                    const std::optional<unsigned long long>& b) {
    return a.has_value() && b.has_value() && *b < *a;
  };
  if (dropped(before.volatile_sbe, now.volatile_sbe) ||
      dropped(before.volatile_dbe, now.volatile_dbe)) {
    return absl::StrCat("its volatile ECC error counts went down (corrected ",
                        CountText(before.volatile_sbe), " to ",
                        CountText(now.volatile_sbe), ", uncorrectable ",
                        CountText(before.volatile_dbe), " to ",
                        CountText(now.volatile_dbe),
                        "): they restart when the driver loads the GPU anew");
  }
  return "";
}

std::vector<GpuRef> GpuRefs(const NodeGpus& node) {
  std::vector<GpuRef> refs;
  for (const GpuInfo& g : node.gpus) refs.push_back({g.uuid, g.index});
  return refs;
}

HealthTracker::HealthTracker(XidPolicy policy, HealthTrackerOptions options)
    : policy_(std::move(policy)), options_(options) {}

void HealthTracker::SetOnChange(std::function<void()> on_change) {
  absl::MutexLock lock(&cb_mu_);
  on_change_ = std::move(on_change);
}

uint64_t HealthTracker::generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

std::string HealthTracker::nvml_failure() const {
  absl::MutexLock lock(&mu_);
  return nvml_failed_ ? nvml_reason_ : std::string();
}

bool HealthTracker::nvml_failed() const {
  absl::MutexLock lock(&mu_);
  return nvml_failed_;
}

void HealthTracker::Changed() { ++generation_; }

void HealthTracker::NotifyIfChanged(uint64_t before) {
  absl::MutexLock cb_lock(&cb_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (generation_ == before) return;
  }
  if (on_change_) on_change_();
}

HealthTracker::Gpu& HealthTracker::GpuFor(const GpuRef& gpu) {
  Gpu& g = gpus_[gpu.uuid];
  g.index = gpu.index;
  return g;
}

size_t HealthTracker::CountFailure(Unit& unit, absl::Time now) {
  const absl::Time horizon = now - options_.flap_window;
  unit.failures.erase(
      std::remove_if(unit.failures.begin(), unit.failures.end(),
                     [&](absl::Time t) { return t <= horizon; }),
      unit.failures.end());
  unit.failures.push_back(now);
  return unit.failures.size();
}

absl::Duration HealthTracker::QuietFor(size_t n) const {
  absl::Duration d = options_.quiet_period;
  for (size_t i = 1; i < n && d < options_.max_quiet_period; ++i) d *= 2;
  return std::min(d, options_.max_quiet_period);
}

void HealthTracker::Fail(const GpuRef& gpu, Gpu& g, Scope scope, State state,
                         const std::string& what, HealthCause cause,
                         absl::Time now, const std::string& until) {
  auto severity = [](State s) { return static_cast<int>(s); };
  const std::string label = Label(gpu, scope.first, scope.second);
  Unit& u = g.units[scope];
  const bool was_healthy = u.state == State::kHealthy;
  if (!was_healthy && severity(state) <= severity(u.state)) {
    // The same failure again (a GPU that stays lost fails every sweep) is
    // a state, not news: logged at -v 1 only; a different one at INFO.
    const bool same = absl::StrContains(u.reason, what);
    if (state == State::kRecoverable && u.state == State::kRecoverable) {
      u.probe_at = now + u.quiet;
      if (same) {
        VLOG(1,
             "{}: {} again while unhealthy: its quiet period of {} starts "
             "again",
             label, what, absl::FormatDuration(u.quiet));
      } else {
        LOG_INFO("{}: {} while unhealthy: its quiet period of {} starts again",
                 label, what, absl::FormatDuration(u.quiet));
      }
    } else if (same) {
      VLOG(1, "{}: {} again while unhealthy", label, what);
    } else {
      LOG_INFO("{}: {} while unhealthy ({})", label, what, u.reason);
    }
    return;
  }
  const size_t n = was_healthy ? CountFailure(u, now) : u.failures.size();
  u.state = state;
  u.cause = cause;
  u.probe_error.clear();
  if (was_healthy) u.since = now;
  switch (state) {
    case State::kRecoverable:
      u.quiet = QuietFor(n);
      u.probe_at = now + u.quiet;
      u.reason = absl::StrCat(what, "; held unhealthy for ",
                              absl::FormatDuration(u.quiet));
      if (n > 1) {
        absl::StrAppend(&u.reason, ": ", Ordinal(n), " failure in ",
                        absl::FormatDuration(options_.flap_window));
      }
      break;
    case State::kNeedsReset:
      u.reason = absl::StrCat(what, "; unhealthy ",
                              until.empty() ? "until the GPU is reset" : until);
      break;
    case State::kLost:
      u.reason = absl::StrCat(what, "; unhealthy until it answers again");
      break;
    case State::kHealthy:
      break;
  }
  if (was_healthy) {
    LOG_WARN("{}: unhealthy: {}", label, u.reason);
  } else {
    LOG_WARN("{}: still unhealthy, now worse: {}", label, u.reason);
  }
  Changed();
}

void HealthTracker::OnEvent(const GpuRef& gpu, const HealthEvent& event,
                            absl::Time now) {
  const XidDecision d =
      event.kind == HealthEvent::Kind::kXid
          ? policy_.Decide(event.xid)
          : policy_.DecideEcc(event.kind == HealthEvent::Kind::kDoubleBitEcc);
  if (d.cls == XidClass::kIgnored) {
    if (event.kind == HealthEvent::Kind::kSingleBitEcc) {
      VLOG(1, "{}: {}", Label(gpu, event.gi, event.ci), d.rule);
    } else if (event.kind == HealthEvent::Kind::kXid) {
      LOG_INFO("{}: XID {} {}", Label(gpu, event.gi, event.ci), event.xid,
               d.rule);
    } else {
      LOG_INFO("{}: {}", Label(gpu, event.gi, event.ci), d.rule);
    }
    return;
  }
  const bool xid = event.kind == HealthEvent::Kind::kXid;
  const std::string what =
      xid ? absl::StrCat("XID ", event.xid, " (", d.rule, ")") : d.rule;
  const HealthCause cause =
      xid ? HealthCause{HealthCause::Kind::kXid, event.xid}
          : HealthCause{HealthCause::Kind::kEcc, 0};
  // XID 79 says the GPU fell off the bus: it is lost (as a sweep finds it),
  // so that it answering NVML again, however soon, is its reset.
  const bool off_the_bus =
      xid && event.xid == kXidFallenOffTheBus && d.cls == XidClass::kNeedsReset;
  uint64_t before;
  {
    absl::MutexLock lock(&mu_);
    before = generation_;
    if (off_the_bus) {
      Fail(gpu, GpuFor(gpu), Scope{kAll, kAll}, State::kLost,
           absl::StrCat("GPU lost (", what, ": it fell off the bus)"),
           HealthCause{HealthCause::Kind::kLost, 0}, now);
    } else {
      Fail(gpu, GpuFor(gpu), Scope{event.gi, event.ci},
           d.cls == XidClass::kNeedsReset ? State::kNeedsReset
                                          : State::kRecoverable,
           what, cause, now);
    }
  }
  NotifyIfChanged(before);
}

void HealthTracker::OnGpuLost(const GpuRef& gpu, const std::string& why,
                              absl::Time now) {
  uint64_t before;
  {
    absl::MutexLock lock(&mu_);
    before = generation_;
    Fail(gpu, GpuFor(gpu), Scope{kAll, kAll}, State::kLost,
         absl::StrCat("GPU lost (", why, ")"),
         HealthCause{HealthCause::Kind::kLost, 0}, now);
  }
  NotifyIfChanged(before);
}

void HealthTracker::OnNeedsReset(const GpuRef& gpu, const std::string& what,
                                 const std::string& until, HealthCause cause,
                                 absl::Time now) {
  uint64_t before;
  {
    absl::MutexLock lock(&mu_);
    before = generation_;
    Fail(gpu, GpuFor(gpu), Scope{kAll, kAll}, State::kNeedsReset, what, cause,
         now, until);
  }
  NotifyIfChanged(before);
}

void HealthTracker::OnMigProbeFailed(const ProbeTarget& target,
                                     const std::string& detail,
                                     absl::Time now) {
  uint64_t before;
  {
    absl::MutexLock lock(&mu_);
    before = generation_;
    Gpu& g = GpuFor(target.gpu);
    const Scope scope{target.gi, target.ci};
    const auto it = g.units.find(scope);
    if (it != g.units.end() && it->second.state != State::kHealthy) return;
    Fail(target.gpu, g, scope, State::kRecoverable,
         absl::StrCat("MIG device does not answer NVML (", detail, ")"),
         HealthCause{HealthCause::Kind::kNvml, 0}, now);
  }
  NotifyIfChanged(before);
}

void HealthTracker::ResetLocked(const GpuRef& gpu, Gpu& g,
                                const std::string& how, absl::Time now) {
  const bool any = std::any_of(
      g.units.begin(), g.units.end(),
      [](const auto& entry) { return entry.second.state != State::kHealthy; });
  if (!any) return;
  g.reset_base.reset();
  for (auto& [scope, u] : g.units) {
    if (u.state == State::kHealthy) continue;
    u.state = State::kHealthy;
    u.reason.clear();
    u.cause = {};
    u.probe_error.clear();
  }
  Unit& whole = g.units[Scope{kAll, kAll}];
  const absl::Time horizon = now - options_.flap_window;
  const size_t n = std::count_if(whole.failures.begin(), whole.failures.end(),
                                 [&](absl::Time t) { return t > horizon; });
  Changed();
  if (n < 2) {
    LOG_INFO("{}: healthy again: {}", Label(gpu, kAll, kAll), how);
    return;
  }
  whole.state = State::kRecoverable;
  whole.since = now;
  whole.cause = HealthCause{HealthCause::Kind::kFlapping, 0};
  whole.quiet = QuietFor(n);
  whole.probe_at = now + whole.quiet;
  whole.reason =
      absl::StrCat("reset (", how, ") after its ", Ordinal(n), " failure in ",
                   absl::FormatDuration(options_.flap_window),
                   "; held unhealthy for ", absl::FormatDuration(whole.quiet));
  LOG_WARN("{}: {}", Label(gpu, kAll, kAll), whole.reason);
}

void HealthTracker::OnGpuAnswers(const GpuRef& gpu, absl::Time now) {
  uint64_t before;
  {
    absl::MutexLock lock(&mu_);
    before = generation_;
    auto it = gpus_.find(gpu.uuid);
    if (it == gpus_.end()) return;
    it->second.index = gpu.index;
    if (!it->second.hung.empty()) {
      LOG_INFO("GPU {} {}: answers NVML again (was: {})", gpu.index, gpu.uuid,
               it->second.hung);
      it->second.hung.clear();
      Changed();
    }
    auto whole = it->second.units.find(Scope{kAll, kAll});
    if (whole != it->second.units.end() &&
        whole->second.state == State::kLost) {
      ResetLocked(gpu, it->second, "it answers NVML again after being lost",
                  now);
    }
  }
  NotifyIfChanged(before);
}

void HealthTracker::OnGpuHung(const GpuRef& gpu, const std::string& why,
                              absl::Time now) {
  (void)now;
  uint64_t before;
  {
    absl::MutexLock lock(&mu_);
    before = generation_;
    Gpu& g = GpuFor(gpu);
    if (g.hung == why) return;
    LOG_ERROR("GPU {} {}: unhealthy: {}", gpu.index, gpu.uuid, why);
    g.hung = why;
    Changed();
  }
  NotifyIfChanged(before);
}

void HealthTracker::OnReset(const GpuRef& gpu, const std::string& how,
                            absl::Time now) {
  uint64_t before;
  {
    absl::MutexLock lock(&mu_);
    before = generation_;
    auto it = gpus_.find(gpu.uuid);
    if (it == gpus_.end()) return;
    it->second.index = gpu.index;
    ResetLocked(gpu, it->second, how, now);
  }
  NotifyIfChanged(before);
}

bool HealthTracker::NeedsReset(const Gpu& g) {
  return std::any_of(g.units.begin(), g.units.end(), [](const auto& entry) {
    return entry.second.state == State::kNeedsReset;
  });
}

bool HealthTracker::AwaitsReset(const std::string& uuid) const {
  absl::MutexLock lock(&mu_);
  const auto it = gpus_.find(uuid);
  return it != gpus_.end() && NeedsReset(it->second);
}

void HealthTracker::OnResetMarkers(const GpuRef& gpu,
                                   const NvmlResetMarkers& read,
                                   absl::Time now) {
  uint64_t before;
  {
    absl::MutexLock lock(&mu_);
    before = generation_;
    auto it = gpus_.find(gpu.uuid);
    if (it == gpus_.end()) return;
    Gpu& g = it->second;
    g.index = gpu.index;
    if (!NeedsReset(g) || g.reset_base == read) return;
    const std::string how =
        g.reset_base.has_value() ? ResetEvidence(*g.reset_base, read) : "";
    if (how.empty()) {
      g.reset_base = read;
      Changed();  // Export keeps it
    } else {
      ResetLocked(gpu, g, how, now);
    }
  }
  NotifyIfChanged(before);
}

void HealthTracker::OnNvmlFailure(const std::string& why, absl::Time) {
  uint64_t before;
  {
    absl::MutexLock lock(&mu_);
    before = generation_;
    if (nvml_failed_) {
      VLOG(1, "NVML still failing: {}", why);
      return;
    }
    nvml_failed_ = true;
    nvml_reason_ = why;
    LOG_ERROR("{}: every device is unhealthy until NVML works again", why);
    Changed();
  }
  NotifyIfChanged(before);
}

void HealthTracker::OnNvmlWorks(absl::Time) {
  uint64_t before;
  {
    absl::MutexLock lock(&mu_);
    before = generation_;
    if (!nvml_failed_) return;
    nvml_failed_ = false;
    LOG_INFO("NVML works again (it failed: {}); devices take their own health",
             nvml_reason_);
    nvml_reason_.clear();
    Changed();
  }
  NotifyIfChanged(before);
}

std::vector<ProbeTarget> HealthTracker::DueProbes(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  std::vector<ProbeTarget> due;
  for (const auto& [uuid, g] : gpus_) {
    for (const auto& [scope, u] : g.units) {
      if (u.state == State::kRecoverable && u.probe_at <= now) {
        due.push_back({GpuRef{uuid, g.index}, scope.first, scope.second});
      }
    }
  }
  return due;
}

absl::Time HealthTracker::NextProbe() const {
  absl::MutexLock lock(&mu_);
  absl::Time next = absl::InfiniteFuture();
  for (const auto& [uuid, g] : gpus_) {
    for (const auto& [scope, u] : g.units) {
      if (u.state == State::kRecoverable) next = std::min(next, u.probe_at);
    }
  }
  return next;
}

void HealthTracker::OnProbe(const ProbeTarget& target, ProbeResult result,
                            const std::string& detail, absl::Time now) {
  uint64_t before;
  {
    absl::MutexLock lock(&mu_);
    before = generation_;
    auto g = gpus_.find(target.gpu.uuid);
    if (g == gpus_.end()) return;
    auto it = g->second.units.find(Scope{target.gi, target.ci});
    if (it == g->second.units.end()) return;
    Unit& u = it->second;
    if (u.state != State::kRecoverable || now < u.probe_at) return;
    const std::string label = Label(target.gpu, target.gi, target.ci);
    switch (result) {
      case ProbeResult::kPass:
        u.state = State::kHealthy;
        u.reason.clear();
        u.cause = {};
        u.probe_error.clear();
        LOG_INFO("{}: healthy again: probe passed after a quiet period of {}",
                 label, absl::FormatDuration(u.quiet));
        Changed();
        break;
      case ProbeResult::kGone:
        u.state = State::kHealthy;
        u.reason.clear();
        u.cause = {};
        u.probe_error.clear();
        LOG_INFO("{}: the instance no longer exists; its failure is dropped",
                 label);
        Changed();
        break;
      case ProbeResult::kFail:
        u.probe_at = now + options_.probe_interval;
        LOG_WARN("{}: probe failed ({}); probing again in {}", label, detail,
                 absl::FormatDuration(options_.probe_interval));
        if (u.probe_error != detail) {
          u.probe_error = detail;
          Changed();
        }
        break;
      case ProbeResult::kLost:
        u.probe_at = now + options_.probe_interval;
        Fail(target.gpu, g->second, Scope{kAll, kAll}, State::kLost,
             absl::StrCat("GPU lost (", detail, ")"),
             HealthCause{HealthCause::Kind::kLost, 0}, now);
        break;
    }
  }
  NotifyIfChanged(before);
}

DeviceHealth HealthTracker::HealthOf(const Device& device) const {
  absl::MutexLock lock(&mu_);
  if (nvml_failed_) {
    return {Health::kUnhealthy, nvml_reason_,
            HealthCause{HealthCause::Kind::kNvml, 0}};
  }
  auto g = gpus_.find(device.gpu_uuid);
  if (g == gpus_.end()) return {};
  if (!g->second.hung.empty()) {
    return {Health::kUnhealthy, g->second.hung,
            HealthCause{HealthCause::Kind::kNvml, 0}};
  }
  const Unit* worst = nullptr;
  Scope worst_scope;
  for (const auto& [scope, u] : g->second.units) {
    if (u.state == State::kHealthy) continue;
    const bool covers =
        device.mig_gi < 0 ||
        ((scope.first == kAll ||
          scope.first == static_cast<unsigned>(device.mig_gi)) &&
         (scope.second == kAll ||
          scope.second == static_cast<unsigned>(device.mig_ci)));
    if (!covers) continue;
    // The most severe; on a tie the whole GPU (the largest key, last).
    if (worst == nullptr || u.state >= worst->state) {
      worst = &u;
      worst_scope = scope;
    }
  }
  if (worst == nullptr) return {};
  DeviceHealth h{Health::kUnhealthy, worst->reason, worst->cause};
  if (worst_scope != Scope{kAll, kAll}) {
    // "GPU instance 9 compute instance 0: XID ...".
    h.reason = absl::StrCat(
        ScopeLabel(worst_scope.first, worst_scope.second).substr(1), ": ",
        h.reason);
  }
  if (!worst->probe_error.empty()) {
    absl::StrAppend(&h.reason, "; last probe failed: ", worst->probe_error);
  }
  return h;
}

}  // namespace gdp
