#include "dra/publisher.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "dra/dra_metrics.h"
#include "util/logging.h"

namespace gdp::dra {
namespace {

constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";
// How many of our latest writes are remembered (for a watch that lags).
constexpr size_t kWrittenKept = 256;
// How many events a reconcile holds for judging when it ends; more are
// taken as someone else's.
constexpr size_t kUnsureKept = 1024;

std::string MetadataString(const nlohmann::json& object, const char* key) {
  auto m = object.find("metadata");
  if (m == object.end() || !m->is_object()) return "";
  auto v = m->find(key);
  return v != m->end() && v->is_string() ? v->get<std::string>() : "";
}

// What identifies a slice across publications: its first device, or for
// a slice of counters its first counter set ("" when empty).
std::string SliceKey(const std::vector<SliceDevice>& devices,
                     const std::vector<CounterSet>& counter_sets) {
  if (!devices.empty()) return absl::StrCat("device ", devices.front().name);
  if (!counter_sets.empty()) {
    return absl::StrCat("counters ", counter_sets.front().name);
  }
  return "";
}

// Which published slice each wanted slice replaces: the one that holds the
// wanted slice's first device (or counter set), so that a change moves no
// device between slices; the others fill the remaining places in name
// order, and what is left over is appended to `stale`.
std::vector<std::optional<PublishedSlice>> AlignSlices(
    const std::vector<SliceContent>& wanted, std::vector<PublishedSlice> ours,
    std::vector<PublishedSlice>* stale) {
  std::sort(ours.begin(), ours.end(),
            [](const PublishedSlice& a, const PublishedSlice& b) {
              return a.name < b.name;
            });
  std::map<std::string, size_t> first;  // SliceKey -> wanted index
  for (size_t i = 0; i < wanted.size(); ++i) {
    std::string key = SliceKey(wanted[i].devices, wanted[i].counter_sets);
    if (!key.empty()) first.emplace(std::move(key), i);
  }
  std::vector<std::optional<PublishedSlice>> slot(wanted.size());
  std::vector<PublishedSlice> rest;
  for (PublishedSlice& s : ours) {
    auto it = first.find(SliceKey(s.devices, s.counter_sets));
    if (it != first.end() && !slot[it->second].has_value()) {
      slot[it->second] = std::move(s);
    } else {
      rest.push_back(std::move(s));
    }
  }
  size_t next = 0;
  for (std::optional<PublishedSlice>& s : slot) {
    if (!s.has_value() && next < rest.size()) s = std::move(rest[next++]);
  }
  for (; next < rest.size(); ++next) stale->push_back(std::move(rest[next]));
  return slot;
}

bool AnyCounters(const std::vector<SliceDevice>& devices,
                 const std::vector<CounterSet>& counter_sets) {
  return !counter_sets.empty() ||
         std::any_of(devices.begin(), devices.end(), [](const SliceDevice& d) {
           return !d.consumes_counters.empty();
         });
}

// `devices` for an API server that drops shared counters: each device that
// consumes all of every counter set it names (a whole GPU) is kept without
// its consumption; the others (its partitions, which would then overlap)
// are left out, and no counter set is brought.
void DropCounters(std::vector<SliceDevice>* devices) {
  std::map<std::string, std::map<std::string, uint64_t>> sets;
  for (const SliceDevice& d : *devices) {
    if (d.shared_counters.has_value()) {
      sets[d.shared_counters->name] = d.shared_counters->counters;
    }
  }
  std::vector<SliceDevice> kept;
  for (SliceDevice& d : *devices) {
    const bool whole =
        std::all_of(d.consumes_counters.begin(), d.consumes_counters.end(),
                    [&](const CounterConsumption& c) {
                      auto it = sets.find(c.counter_set);
                      return it != sets.end() && it->second == c.counters;
                    });
    if (!whole) continue;
    d.consumes_counters.clear();
    d.shared_counters.reset();
    kept.push_back(std::move(d));
  }
  *devices = std::move(kept);
}

bool AnyShared(const std::vector<SliceDevice>& devices) {
  return std::any_of(devices.begin(), devices.end(), [](const SliceDevice& d) {
    return d.allow_multiple_allocations;
  });
}

bool AnyTaint(const std::vector<SliceDevice>& devices) {
  return std::any_of(devices.begin(), devices.end(),
                     [](const SliceDevice& d) { return !d.taints.empty(); });
}

}  // namespace

SlicePublisher::SlicePublisher(kube::Client& api, PublisherOptions options)
    : api_(api),
      options_(std::move(options)),
      collection_(kSlices),
      field_selector_(absl::StrCat("spec.nodeName=", options_.node_name,
                                   ",spec.driver=", options_.driver_name)),
      backoff_(options_.initial_backoff, options_.max_backoff, jitter_),
      foreign_(options_.foreign) {}

SlicePublisher::~SlicePublisher() { Stop(); }

void SlicePublisher::SetDevices(std::vector<SliceDevice> devices) {
  absl::MutexLock lock(&mu_);
  if (wanted_set_ && devices == wanted_) return;
  wanted_ = std::move(devices);
  wanted_set_ = true;
  dirty_ = true;
  foreign_only_ = false;
  status_.in_sync = false;
  // A change of what we publish is worth an attempt now, backoff or not.
  next_attempt_ = absl::InfinitePast();
  ++changes_;
}

void SlicePublisher::MarkOutOfSync() {
  absl::MutexLock lock(&mu_);
  ++changes_;
  foreign_only_ = false;  // no token needed now, if it waited for one
  if (dirty_) return;     // keeps the backoff of a failed attempt
  dirty_ = true;
  status_.in_sync = false;
  next_attempt_ = absl::InfinitePast();
}

void SlicePublisher::ForeignWriteLocked(std::string writer) {
  DraMetrics::Get().foreign_writes.With({}).Increment();
  if (!writer.empty()) other_writer_ = std::move(writer);
  if (dirty_) return;  // a reconcile is due anyway, for whatever cause
  dirty_ = true;
  foreign_only_ = true;
  status_.in_sync = false;
  next_attempt_ = absl::InfinitePast();
  ++changes_;
}

bool SlicePublisher::IsOursLocked(const std::string& name,
                                  const std::string& version) const {
  return known_.contains({name, version}) || written_.contains({name, version});
}

void SlicePublisher::RememberWriteLocked(const std::string& name,
                                         const std::string& version) {
  if (!written_.insert({name, version}).second) return;
  written_order_.emplace_back(name, version);
  if (written_order_.size() > kWrittenKept) {
    written_.erase(written_order_.front());
    written_order_.pop_front();
  }
}

void SlicePublisher::OnWatchEvent(const std::string& type,
                                  const std::string& name,
                                  const std::string& version,
                                  std::string writer) {
  absl::MutexLock lock(&mu_);
  if (type == "DELETED") {
    if (deleted_.erase(name) > 0) return;
  } else if (IsOursLocked(name, version)) {
    return;
  } else if (reconciling_ && unsure_.size() < kUnsureKept) {
    // Perhaps a write of the reconcile in progress that has not answered.
    unsure_.emplace_back(name, version, std::move(writer));
    return;
  }
  VLOG(1, "ResourceSlice {} {} by someone else ({}); republishing", name,
       absl::AsciiStrToLower(type), writer.empty() ? "unknown" : writer);
  ForeignWriteLocked(std::move(writer));
}

void SlicePublisher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  api_.Cancel();
}

PublisherStatus SlicePublisher::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

void SlicePublisher::Run() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    Step();
  }
}

namespace {

struct WaitFor {
  const bool* stopping;
  const uint64_t* changes;
  uint64_t seen;
  static bool Done(WaitFor* w) {
    return *w->stopping || *w->changes != w->seen;
  }
};

}  // namespace

void SlicePublisher::Step(absl::Duration max_wait) {
  bool due = false;
  bool foreign = false;  // only others' writes made it due
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    const absl::Time now = absl::Now();
    if (wanted_set_ && dirty_ && now >= next_attempt_) {
      if (!foreign_only_) {
        due = true;
      } else if (foreign_.Available(now) <= now) {
        foreign_.Take(now);
        due = foreign = true;
      } else if (!throttled_) {
        throttled_ = true;
        DraMetrics::Get().reconciles_throttled.With({}).Increment();
      }
    }
    if (due) {
      // A change from here on sets it again.
      dirty_ = foreign_only_ = throttled_ = false;
      reconciling_ = true;
    }
  }
  if (due) {
    int writes = 0;
    absl::Status s = Reconcile(&writes);
    if (!absl::IsCancelled(s)) {
      DraMetrics::Get()
          .publications.With({s.ok() ? "ok" : "failed"})
          .Increment();
    }
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    // Events that came while we wrote: ours now that the writes answered,
    // or someone else's.
    reconciling_ = false;
    std::vector<std::tuple<std::string, std::string, std::string>> unsure;
    unsure.swap(unsure_);
    for (auto& [name, version, writer] : unsure) {
      if (!IsOursLocked(name, version)) ForeignWriteLocked(std::move(writer));
    }
    if (s.ok()) {
      backoff_.Reset();
      if (!status_.last_error.empty()) {
        LOG_INFO("ResourceSlices of pool {} published again",
                 options_.node_name);
      }
      status_.last_error.clear();
      status_.in_sync = !dirty_;
      if (foreign && writes > 0 && foreign_.Undid(now)) {
        LOG_WARN(
            "The ResourceSlices of pool {} (driver {}) keep being rewritten "
            "by another writer, {}, and we keep putting ours back: from now "
            "on at most once every {}, then less often up to once every {} "
            "while this goes on. Two drivers publish the same pool: is "
            "NVIDIA's DRA driver still running on this node? Remove it (see "
            "docs/dra.md, migrating from NVIDIA's driver).",
            options_.node_name, options_.driver_name,
            other_writer_.empty()
                ? std::string("unknown (no managedFields)")
                : absl::StrCat("field manager \"", other_writer_, "\""),
            absl::FormatDuration(foreign_.interval()),
            absl::FormatDuration(options_.foreign.max_interval));
      }
    } else if (!stopping_) {
      // Retried after the backoff; a retry of a reconcile that only
      // others' writes caused still needs a token.
      foreign_only_ = dirty_ ? foreign_only_ && foreign : foreign;
      dirty_ = true;
      status_.in_sync = false;
      next_attempt_ = now + backoff_.Next();
      if (status_.last_error != s.message()) {
        LOG_ERROR(
            "Publishing the ResourceSlices of pool {} failed (retrying "
            "with backoff up to {}): {}",
            options_.node_name, absl::FormatDuration(options_.max_backoff),
            s.message());
      } else {
        VLOG(1, "Publishing ResourceSlices failed again: {}", s.message());
      }
      status_.last_error = std::string(s.message());
    }
  }
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  const absl::Time now = absl::Now();
  absl::Time deadline = max_wait == absl::InfiniteDuration()
                            ? absl::InfiniteFuture()
                            : now + max_wait;
  if (dirty_ && wanted_set_) {
    absl::Time at = next_attempt_;
    if (foreign_only_) at = std::max(at, foreign_.Available(now));
    deadline = std::min(deadline, at);
  }
  if (deadline <= now) return;
  WaitFor wait{&stopping_, &changes_, changes_};
  mu_.AwaitWithDeadline(absl::Condition(&WaitFor::Done, &wait), deadline);
}

absl::Status SlicePublisher::EnsureOwner() {
  {
    absl::MutexLock lock(&mu_);
    if (!owner_.uid.empty()) return absl::OkStatus();
  }
  absl::StatusOr<nlohmann::json> node =
      api_.Get(absl::StrCat("/api/v1/nodes/", options_.node_name));
  if (!node.ok()) {
    return absl::Status(
        node.status().code(),
        absl::StrCat("reading Node ", options_.node_name,
                     " (the owner of our slices): ", node.status().message()));
  }
  std::string uid = MetadataString(*node, "uid");
  if (uid.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Node ", options_.node_name, " has no metadata.uid"));
  }
  absl::MutexLock lock(&mu_);
  owner_ = {options_.node_name, std::move(uid)};
  return absl::OkStatus();
}

absl::Status SlicePublisher::Reconcile(int* writes) {
  if (absl::Status s = EnsureOwner(); !s.ok()) return s;
  std::vector<SliceDevice> devices;
  bool withhold;
  bool whole;
  bool no_counters;
  NodeOwner owner;
  {
    absl::MutexLock lock(&mu_);
    devices = wanted_;
    withhold = status_.taints_dropped;
    whole = status_.shares_dropped;
    no_counters = status_.counters_dropped;
    owner = owner_;
  }
  if (no_counters) DropCounters(&devices);
  if (whole) {
    for (SliceDevice& d : devices) {
      d.allow_multiple_allocations = false;
      d.request_policies.clear();
    }
  }
  if (withhold) WithholdTainted(&devices);

  kube::ListOptions selector;
  selector.field_selector = field_selector_;
  absl::StatusOr<nlohmann::json> list = api_.List(collection_, selector);
  if (!list.ok()) return list.status();

  std::vector<PublishedSlice> ours;   // of our pool, by name
  std::vector<PublishedSlice> stale;  // ours by selector, another pool
  TaintTimes times;
  std::set<std::pair<std::string, std::string>> known;
  if (auto items = list->find("items");
      items != list->end() && items->is_array()) {
    for (const nlohmann::json& item : *items) {
      absl::StatusOr<PublishedSlice> s = ParseSlice(item);
      if (!s.ok()) {
        LOG_WARN("Ignoring an unreadable ResourceSlice: {}",
                 s.status().message());
        continue;
      }
      known.insert({s->name, s->resource_version});
      times.insert(s->taint_times.begin(), s->taint_times.end());
      (s->pool == options_.node_name ? ours : stale).push_back(*std::move(s));
    }
  }
  int64_t generation = 0;
  for (const PublishedSlice& s : ours) {
    generation = std::max(generation, s.generation);
  }
  std::vector<SliceContent> wanted =
      CutIntoSlices(std::move(devices), options_.limits);
  const int64_t count = static_cast<int64_t>(wanted.size());
  // The published slice each wanted one replaces (nullopt: a new one).
  std::vector<std::optional<PublishedSlice>> slot =
      AlignSlices(wanted, std::move(ours), &stale);
  std::vector<size_t> changed;
  for (size_t i = 0; i < wanted.size(); ++i) {
    const bool same =
        slot[i].has_value() && slot[i]->devices == wanted[i].devices &&
        slot[i]->counter_sets == wanted[i].counter_sets &&
        slot[i]->slice_count == count && slot[i]->generation == generation &&
        slot[i]->node_name == options_.node_name;
    if (!same) changed.push_back(i);
  }

  if (!changed.empty() || !stale.empty()) {
    // One slice changing in place is atomic for consumers; anything more
    // is a new generation, written to every slice.
    const bool in_place = changed.size() == 1 && stale.empty() &&
                          slot[changed[0]].has_value() && generation > 0;
    if (!in_place) {
      ++generation;
      changed.clear();
      for (size_t i = 0; i < wanted.size(); ++i) changed.push_back(i);
    }
    for (size_t i : changed) {
      SliceObject o;
      if (slot[i].has_value()) {
        o.name = slot[i]->name;
        o.resource_version = slot[i]->resource_version;
      }
      o.driver = options_.driver_name;
      o.node_name = options_.node_name;
      o.generation = generation;
      o.slice_count = count;
      o.devices = wanted[i].devices;
      o.counter_sets = wanted[i].counter_sets;
      nlohmann::json body = SliceJson(o, owner, times);
      absl::StatusOr<nlohmann::json> written =
          o.name.empty()
              ? api_.Create(collection_, body)
              : api_.Update(absl::StrCat(collection_, "/", o.name), body);
      if (!written.ok()) return written.status();
      ++*writes;
      absl::StatusOr<PublishedSlice> back = ParseSlice(*written);
      if (!back.ok()) return back.status();
      if (slot[i].has_value()) {
        known.erase({slot[i]->name, slot[i]->resource_version});
      }
      absl::MutexLock lock(&mu_);
      RememberWriteLocked(back->name, back->resource_version);
      known.insert({back->name, back->resource_version});
      if (AnyTaint(wanted[i].devices) && !AnyTaint(back->devices) &&
          !status_.taints_dropped) {
        status_.taints_dropped = true;
        dirty_ = true;
        foreign_only_ = false;
        next_attempt_ = absl::InfinitePast();
        ++changes_;
        LOG_WARN(
            "The API server dropped the taints of our devices (the "
            "DRADeviceTaints feature gate is off): unhealthy devices are "
            "left out of the ResourceSlices instead until they recover");
      }
      if (AnyCounters(wanted[i].devices, wanted[i].counter_sets) &&
          !AnyCounters(back->devices, back->counter_sets) &&
          !status_.counters_dropped) {
        status_.counters_dropped = true;
        dirty_ = true;
        foreign_only_ = false;
        next_attempt_ = absl::InfinitePast();
        ++changes_;
        LOG_WARN(
            "The API server dropped the shared counters and consumesCounters "
            "of our devices (the DRAPartitionableDevices feature gate is "
            "off; on by default from Kubernetes 1.36): MIG profile "
            "placements are not offered (DynamicMIG), whole GPUs are "
            "published without counters");
      }
      if (AnyShared(wanted[i].devices) && !AnyShared(back->devices) &&
          !status_.shares_dropped) {
        status_.shares_dropped = true;
        dirty_ = true;
        foreign_only_ = false;
        next_attempt_ = absl::InfinitePast();
        ++changes_;
        LOG_WARN(
            "The API server dropped allowMultipleAllocations and the "
            "requestPolicy of our devices (the DRAConsumableCapacity feature "
            "gate is off; on by default from Kubernetes 1.36): consumable "
            "shares are not offered, devices are published whole");
      }
    }
    for (const PublishedSlice& s : stale) {
      {
        absl::MutexLock lock(&mu_);
        deleted_.insert(s.name);
      }
      absl::Status deleted =
          api_.Delete(absl::StrCat(collection_, "/", s.name));
      if (!deleted.ok() && !absl::IsNotFound(deleted)) return deleted;
      ++*writes;
      known.erase({s.name, s.resource_version});
    }
    size_t total = 0, sets = 0;
    for (const SliceContent& w : wanted) {
      total += w.devices.size();
      sets += w.counter_sets.size();
    }
    LOG_INFO(
        "Published {} device(s){} in {} ResourceSlice(s) of pool {}, "
        "generation {}{}",
        total, sets == 0 ? "" : absl::StrCat(" and ", sets, " counter set(s)"),
        wanted.size(), options_.node_name, generation,
        stale.empty()
            ? ""
            : absl::StrCat(" (deleted ", stale.size(), " obsolete slice(s))"));
  }
  absl::MutexLock lock(&mu_);
  known_ = std::move(known);
  if (std::string rv = MetadataString(*list, "resourceVersion"); !rv.empty()) {
    list_resource_version_ = rv;
  }
  status_.generation = generation;
  status_.slices = wanted.size();
  status_.devices = 0;
  status_.counter_sets = 0;
  for (const SliceContent& w : wanted) {
    status_.devices += w.devices.size();
    status_.counter_sets += w.counter_sets.size();
  }
  return absl::OkStatus();
}

void SlicePublisher::RunWatch() {
  absl::BitGen gen;
  WatchPacer pacer(options_.watch, gen);
  std::string rv;
  bool relist = false;  // the last watch lost its connection
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      if (rv.empty()) rv = list_resource_version_;
    }
    // After a backoff the pool may have changed unseen (an API server
    // that came back without our slices): check it again as this watch
    // starts, not only when the last one ended.
    if (relist) MarkOutOfSync();
    relist = false;
    kube::ListOptions watch;
    watch.field_selector = field_selector_;
    watch.resource_version = rv;
    const absl::Time started = absl::Now();
    absl::Status s = api_.Watch(
        collection_, watch, pacer.NextTimeout(),
        [&](const kube::WatchEvent& e) {
          const std::string version =
              MetadataString(e.object, "resourceVersion");
          if (!version.empty()) rv = version;
          if (e.type == "BOOKMARK") return true;
          OnWatchEvent(e.type, MetadataString(e.object, "name"), version,
                       e.type == "DELETED"
                           ? std::string()
                           : LastManager(e.object, options_.field_manager));
          return true;
        });
    const absl::Time ended = absl::Now();
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    const char* reason = "closed";  // by the server: resume from rv
    if (absl::IsOutOfRange(s)) {
      reason = "expired";
      rv.clear();  // too old: list again, and watch from there
      MarkOutOfSync();
    } else if (!s.ok()) {
      // The connection was lost: what happened meanwhile is unknown, so
      // check the pool, and watch again from the current state.
      reason = "failed";
      VLOG(1, "Watching ResourceSlices failed: {}", s.message());
      MarkOutOfSync();
      rv.clear();
      relist = true;
    }
    DraMetrics::Get().watch_restarts.With({reason}).Increment();
    const absl::Time next = pacer.NextStart(started, ended);
    if (pacer.backing_off()) {
      DraMetrics::Get().watch_backoffs.With({}).Increment();
      VLOG(1, "The ResourceSlice watch ended after {} ({}); again in {}",
           absl::FormatDuration(ended - started), reason,
           absl::FormatDuration(next - ended));
    }
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithDeadline(absl::Condition(&stopping_), next);
  }
}

}  // namespace gdp::dra
