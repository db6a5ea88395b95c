#include "health/monitor_jobs.h"

#include <algorithm>
#include <utility>

namespace gdp {

Registration RegisterOn(const Nvml& nvml, NvmlEventSet& set,
                        const std::string& uuid) {
  Registration r;
  absl::StatusOr<nvmlDevice_t> handle = nvml.DeviceByUuid(uuid);
  absl::StatusOr<unsigned long long> supported =
      handle.ok() ? nvml.SupportedEventTypes(*handle) : handle.status();
  r.status = supported.status();
  if (!supported.ok()) return r;
  r.handle = *handle;
  r.types = *supported & kHealthEventTypes;
  if (r.types != 0) r.status = set.Register(*handle, r.types);
  return r;
}

std::vector<SweepAnswer> SweepAll(const Nvml& nvml,
                                  const std::vector<WatchedGpu>& gpus) {
  std::vector<SweepAnswer> out;
  for (const WatchedGpu& g : gpus) {
    // The registered handle first: one call instead of a lookup by UUID
    // and a call, every sweep of every GPU. Any failure takes the full
    // probe, which says what it was.
    const bool answered =
        g.handle != nullptr && nvml.MemoryTotal(g.handle).ok();
    SweepAnswer a{answered ? ProbeOutcome{} : Probe(nvml, ProbeTarget{g.ref}),
                  {},
                  std::nullopt,
                  std::nullopt};
    if (a.gpu.result == ProbeResult::kPass && !g.migs.empty()) {
      a.migs = ProbeMigDevices(nvml, g.ref, g.migs);
    }
    if (a.gpu.result == ProbeResult::kPass &&
        (g.read_signals || g.read_reset_markers)) {
      absl::StatusOr<nvmlDevice_t> handle =
          answered ? absl::StatusOr<nvmlDevice_t>(g.handle)
                   : nvml.DeviceByUuid(g.ref.uuid);
      if (!handle.ok()) {
        if (IsNvmlHang(handle.status())) a.gpu = OutcomeOf(handle.status());
        out.push_back(std::move(a));
        continue;
      }
      if (g.read_signals) {
        a.signals = ReadSignals(nvml, *handle);
        if (!a.signals->hang.ok()) a.gpu = OutcomeOf(a.signals->hang);
      }
      if (g.read_reset_markers && a.gpu.result == ProbeResult::kPass) {
        absl::StatusOr<NvmlResetMarkers> m = nvml.ResetMarkers(*handle);
        if (m.ok()) {
          a.reset_markers = *m;
        } else if (IsNvmlHang(m.status())) {
          a.gpu = OutcomeOf(m.status());
        }
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

bool QuietSweep(
    const std::vector<SweepAnswer>& answers,
    const std::vector<std::optional<GpuSignals>>& last,
    const std::vector<std::optional<NvmlResetMarkers>>& last_markers) {
  for (size_t i = 0; i < answers.size(); ++i) {
    const SweepAnswer& a = answers[i];
    if (a.gpu.result != ProbeResult::kPass) return false;
    for (const ProbeOutcome& mig : a.migs) {
      if (mig.result != ProbeResult::kPass) return false;
    }
    if (a.signals.has_value() && (i >= last.size() || !last[i].has_value() ||
                                  !SameSignals(*a.signals, *last[i]))) {
      return false;
    }
    if (a.reset_markers.has_value() &&
        (i >= last_markers.size() || last_markers[i] != a.reset_markers)) {
      return false;
    }
  }
  return true;
}

std::vector<std::optional<NvmlResetMarkers>> ReadResetMarkers(
    const Nvml& nvml, const std::vector<nvmlDevice_t>& gpus) {
  std::vector<std::optional<NvmlResetMarkers>> out;
  for (nvmlDevice_t gpu : gpus) {
    absl::StatusOr<NvmlResetMarkers> m = nvml.ResetMarkers(gpu);
    out.push_back(m.ok() ? std::optional<NvmlResetMarkers>(*m) : std::nullopt);
  }
  return out;
}

WaitAnswer WaitOn(NvmlEventSet& set, absl::Duration wait, const Nvml& nvml,
                  std::vector<WatchedGpu> sweep, const QuietRounds& quiet) {
  WaitAnswer a;
  absl::Time signals_due = quiet.signals_due;
  for (;;) {
    absl::StatusOr<NvmlEvent> event = set.Wait(wait);
    while (event.ok()) {
      a.events.push_back(*event);
      if (a.events.size() == kMaxWaitEvents) {
        a.more = true;
        return a;
      }
      event = set.Wait(absl::ZeroDuration());
    }
    a.status = event.status();
    if (!a.events.empty() || sweep.empty() ||
        NvmlCode(a.status) != NVML_ERROR_TIMEOUT) {
      return a;
    }
    a.sweep = SweepAll(nvml, sweep);
    const absl::Time now = absl::Now();
    if (!quiet.on ||
        !QuietSweep(*a.sweep, quiet.last_signals, quiet.last_reset_markers) ||
        quiet.interrupts->load() != quiet.interrupts_seen) {
      return a;
    }
    wait = quiet.sweep_interval;
    if (now + wait > quiet.until) return a;
    // Nothing to act on: the monitor need not wake for it.
    ++a.quiet_rounds;
    a.swept_at = now;
    if (sweep.front().read_signals) {  // all targets alike
      a.signals_read = now;
      signals_due = now + quiet.signals_interval;
    }
    a.sweep.reset();
    for (WatchedGpu& g : sweep) g.read_signals = now + wait >= signals_due;
  }
}

namespace {

// Every event queued on `set` now, at most kMaxWaitEvents.
std::vector<NvmlEvent> TakeQueued(NvmlEventSet& set) {
  std::vector<NvmlEvent> out;
  while (out.size() < kMaxWaitEvents) {
    absl::StatusOr<NvmlEvent> event = set.Wait(absl::ZeroDuration());
    if (!event.ok()) break;
    out.push_back(*event);
  }
  return out;
}

// The events of `events` about `device`, in order.
std::vector<NvmlEvent> EventsOf(const std::vector<NvmlEvent>& events,
                                nvmlDevice_t device) {
  std::vector<NvmlEvent> out;
  for (const NvmlEvent& e : events) {
    if (e.device == device) out.push_back(e);
  }
  return out;
}

}  // namespace

std::vector<NvmlEvent> NotTakenBefore(const std::vector<NvmlEvent>& earlier,
                                      const std::vector<NvmlEvent>& later) {
  // How many of each GPU's first events in `later` to drop.
  std::vector<std::pair<nvmlDevice_t, size_t>> drop;
  for (const NvmlEvent& e : later) {
    if (std::any_of(drop.begin(), drop.end(),
                    [&](const auto& d) { return d.first == e.device; })) {
      continue;
    }
    const std::vector<NvmlEvent> before = EventsOf(earlier, e.device);
    const std::vector<NvmlEvent> after = EventsOf(later, e.device);
    size_t n = std::min(before.size(), after.size());
    while (n > 0 && !std::equal(before.end() - n, before.end(), after.begin()))
      --n;
    drop.emplace_back(e.device, n);
  }
  std::vector<NvmlEvent> out;
  for (const NvmlEvent& e : later) {
    auto it = std::find_if(drop.begin(), drop.end(),
                           [&](const auto& d) { return d.first == e.device; });
    if (it->second > 0) {
      --it->second;
      continue;
    }
    out.push_back(e);
  }
  return out;
}

std::vector<NvmlEvent> TakeOver(NvmlEventSet& old, NvmlEventSet& now) {
  std::vector<NvmlEvent> out = TakeQueued(old);
  const std::vector<NvmlEvent> taken = TakeQueued(now);
  for (const NvmlEvent& e : NotTakenBefore(out, taken)) out.push_back(e);
  return out;
}

}  // namespace gdp
