#include "health/state_file.h"

#include <cerrno>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/atomic_file.h"
#include "util/bounded_json.h"
#include "util/make_dirs.h"
#include "util/quote.h"
#include "util/read_file.h"

namespace gdp {
namespace {

using nlohmann::json;

constexpr char kKind[] = "gpu-device-plugin/health-state";
constexpr unsigned kAll = kNvmlAllInstances;

constexpr std::pair<SavedUnitState, const char*> kStates[] = {
    {SavedUnitState::kHealthy, "healthy"},
    {SavedUnitState::kRecoverable, "recoverable"},
    {SavedUnitState::kNeedsReset, "needs-reset"},
    {SavedUnitState::kLost, "lost"},
};

constexpr std::pair<HealthCause::Kind, const char*> kCauses[] = {
    {HealthCause::Kind::kNone, "none"},
    {HealthCause::Kind::kXid, "xid"},
    {HealthCause::Kind::kEcc, "ecc"},
    {HealthCause::Kind::kLost, "lost"},
    {HealthCause::Kind::kNvml, "nvml"},
    {HealthCause::Kind::kNvLink, "nvlink"},
    {HealthCause::Kind::kFlapping, "flapping"},
};

std::string TimeText(absl::Time t) {
  return absl::FormatTime(absl::RFC3339_full, t, absl::UTCTimeZone());
}

// Written with the keys in this order (ordered_json), for people reading.
using ojson = nlohmann::ordered_json;

ojson UnitJson(const SavedUnit& u) {
  ojson j = ojson::object();
  if (u.gi != kAll) j["gpuInstance"] = u.gi;
  if (u.ci != kAll) j["computeInstance"] = u.ci;
  j["state"] = SavedUnitStateName(u.state);
  if (u.state != SavedUnitState::kHealthy) {
    j["reason"] = u.reason;
    for (const auto& [kind, name] : kCauses) {
      if (kind == u.cause.kind) j["cause"] = name;
    }
    if (u.cause.kind == HealthCause::Kind::kXid) j["xid"] = u.cause.xid;
    j["since"] = TimeText(u.since);
  }
  if (u.state == SavedUnitState::kRecoverable) {
    j["quietPeriod"] = absl::FormatDuration(u.quiet);
    j["probeAt"] = TimeText(u.probe_at);
    if (!u.probe_error.empty()) j["probeError"] = u.probe_error;
  }
  ojson failures = ojson::array();
  for (absl::Time t : u.failures) failures.push_back(TimeText(t));
  j["failures"] = std::move(failures);
  return j;
}

ojson MarkersJson(const NvmlResetMarkers& m) {
  ojson j = ojson::object();
  if (m.recovery_action.has_value()) j["recoveryAction"] = *m.recovery_action;
  if (m.volatile_sbe.has_value()) j["volatileEccSbe"] = *m.volatile_sbe;
  if (m.volatile_dbe.has_value()) j["volatileEccDbe"] = *m.volatile_dbe;
  return j;
}

// Reads the document, keeping the first problem found ("<place>: what").
class Reader {
 public:
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  void Fail(const std::string& where, const std::string& what) {
    if (ok()) error_ = absl::StrCat(where, ": ", what);
  }

  // obj[key] when present; nullptr when absent (a problem unless
  // `optional`).
  const json* Find(const json& obj, const std::string& where, const char* key,
                   bool optional = false) {
    const auto it = obj.find(key);
    if (it != obj.end()) return &*it;
    if (!optional) Fail(Join(where, key), "missing");
    return nullptr;
  }

  std::optional<std::string> String(const json& obj, const std::string& where,
                                    const char* key, bool optional = false) {
    const json* v = Find(obj, where, key, optional);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) {
      Fail(Join(where, key), "must be a string");
      return std::nullopt;
    }
    return v->get<std::string>();
  }

  // An unsigned integer up to `max`.
  std::optional<uint64_t> Unsigned(const json& obj, const std::string& where,
                                   const char* key, uint64_t max,
                                   bool optional = false) {
    const json* v = Find(obj, where, key, optional);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_unsigned() || v->get<uint64_t>() > max) {
      Fail(Join(where, key),
           absl::StrCat("must be an unsigned integer up to ", max));
      return std::nullopt;
    }
    return v->get<uint64_t>();
  }

  std::optional<absl::Time> Time(const json& obj, const std::string& where,
                                 const char* key) {
    std::optional<std::string> text = String(obj, where, key);
    if (!text.has_value()) return std::nullopt;
    return ParseTime(*text, Join(where, key));
  }

  std::optional<absl::Time> ParseTime(const std::string& text,
                                      const std::string& where) {
    absl::Time t;
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, text, &t, &err)) {
      Fail(where,
           absl::StrCat("'", text, "' is not an RFC 3339 time (", err, ")"));
      return std::nullopt;
    }
    return t;
  }

  static std::string Join(const std::string& where, const char* key) {
    return where.empty() ? std::string(key) : absl::StrCat(where, ".", key);
  }

 private:
  std::string error_;
};

void ReadUnit(Reader& r, const json& j, const std::string& where,
              SavedUnit& u) {
  if (!j.is_object()) return r.Fail(where, "must be an object");
  const uint64_t kMaxId = std::numeric_limits<unsigned>::max() - 1;
  if (auto gi = r.Unsigned(j, where, "gpuInstance", kMaxId, true)) u.gi = *gi;
  if (auto ci = r.Unsigned(j, where, "computeInstance", kMaxId, true)) {
    u.ci = *ci;
  }
  std::optional<std::string> state = r.String(j, where, "state");
  if (!state.has_value()) return;
  bool known = false;
  for (const auto& [value, name] : kStates) {
    if (*state == name) {
      u.state = value;
      known = true;
    }
  }
  if (!known) {
    return r.Fail(Reader::Join(where, "state"),
                  absl::StrCat("unknown state '", *state, "'"));
  }
  if (u.state != SavedUnitState::kHealthy) {
    if (auto reason = r.String(j, where, "reason")) u.reason = *reason;
    std::optional<std::string> cause = r.String(j, where, "cause");
    if (!cause.has_value()) return;
    known = false;
    for (const auto& [kind, name] : kCauses) {
      if (*cause == name) {
        u.cause.kind = kind;
        known = true;
      }
    }
    if (!known) {
      return r.Fail(Reader::Join(where, "cause"),
                    absl::StrCat("unknown cause '", *cause, "'"));
    }
    if (u.cause.kind == HealthCause::Kind::kXid) {
      if (auto xid = r.Unsigned(j, where, "xid",
                                std::numeric_limits<uint64_t>::max())) {
        u.cause.xid = *xid;
      }
    }
    if (auto since = r.Time(j, where, "since")) u.since = *since;
  }
  if (u.state == SavedUnitState::kRecoverable) {
    if (auto quiet = r.String(j, where, "quietPeriod")) {
      if (!absl::ParseDuration(*quiet, &u.quiet) ||
          u.quiet < absl::ZeroDuration() ||
          u.quiet == absl::InfiniteDuration()) {
        r.Fail(Reader::Join(where, "quietPeriod"),
               absl::StrCat("'", *quiet, "' is not a duration such as 2m"));
      }
    }
    if (auto at = r.Time(j, where, "probeAt")) u.probe_at = *at;
    if (auto e = r.String(j, where, "probeError", true)) u.probe_error = *e;
  }
  const json* failures = r.Find(j, where, "failures");
  if (failures == nullptr) return;
  const std::string fwhere = Reader::Join(where, "failures");
  if (!failures->is_array()) return r.Fail(fwhere, "must be an array");
  for (size_t i = 0; i < failures->size() && r.ok(); ++i) {
    const std::string at = absl::StrCat(fwhere, "[", i, "]");
    const json& f = (*failures)[i];
    if (!f.is_string()) return r.Fail(at, "must be a string");
    if (auto t = r.ParseTime(f.get<std::string>(), at)) {
      u.failures.push_back(*t);
    }
  }
}

void ReadGpu(Reader& r, const json& j, const std::string& where,
             HealthState& state) {
  if (!j.is_object()) return r.Fail(where, "must be an object");
  std::optional<std::string> uuid = r.String(j, where, "uuid");
  std::optional<uint64_t> index =
      r.Unsigned(j, where, "index", std::numeric_limits<unsigned>::max());
  const json* units = r.Find(j, where, "units");
  if (!r.ok()) return;
  if (uuid->empty()) return r.Fail(Reader::Join(where, "uuid"), "empty");
  if (state.gpus.contains(*uuid)) {
    return r.Fail(Reader::Join(where, "uuid"),
                  absl::StrCat(*uuid, " is listed twice"));
  }
  SavedGpu gpu;
  gpu.index = static_cast<unsigned>(*index);
  if (const json* m = r.Find(j, where, "resetMarkers", true)) {
    const std::string mwhere = Reader::Join(where, "resetMarkers");
    if (!m->is_object()) return r.Fail(mwhere, "must be an object");
    NvmlResetMarkers markers;
    if (auto a = r.Unsigned(*m, mwhere, "recoveryAction",
                            std::numeric_limits<unsigned>::max(), true)) {
      markers.recovery_action = static_cast<unsigned>(*a);
    }
    const uint64_t kMax = std::numeric_limits<uint64_t>::max();
    markers.volatile_sbe = r.Unsigned(*m, mwhere, "volatileEccSbe", kMax, true);
    markers.volatile_dbe = r.Unsigned(*m, mwhere, "volatileEccDbe", kMax, true);
    if (!r.ok()) return;
    gpu.reset_markers = markers;
  }
  const std::string uwhere = Reader::Join(where, "units");
  if (!units->is_array()) return r.Fail(uwhere, "must be an array");
  for (size_t i = 0; i < units->size() && r.ok(); ++i) {
    SavedUnit u;
    ReadUnit(r, (*units)[i], absl::StrCat(uwhere, "[", i, "]"), u);
    gpu.units.push_back(std::move(u));
  }
  if (r.ok()) state.gpus.emplace(*uuid, std::move(gpu));
}

}  // namespace

std::string HealthStatePath(const std::string& dir) {
  if (!dir.empty() && dir.back() == '/') {
    return absl::StrCat(dir, kHealthStateFileName);
  }
  return absl::StrCat(dir, "/", kHealthStateFileName);
}

std::string SerializeHealthState(const HealthState& state) {
  ojson gpus = ojson::array();
  for (const auto& [uuid, gpu] : state.gpus) {
    ojson units = ojson::array();
    for (const SavedUnit& u : gpu.units) units.push_back(UnitJson(u));
    ojson entry = {
        {"uuid", uuid}, {"index", gpu.index}, {"units", std::move(units)}};
    if (gpu.reset_markers.has_value()) {
      entry["resetMarkers"] = MarkersJson(*gpu.reset_markers);
    }
    gpus.push_back(std::move(entry));
  }
  ojson doc = {{"kind", kKind},
               {"version", kHealthStateVersion},
               {"bootID", state.boot_id},
               {"gpus", std::move(gpus)}};
  return doc.dump(2) + "\n";
}

absl::StatusOr<HealthState> ParseHealthState(absl::string_view text,
                                             const std::string& path) {
  auto bad = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat(path, ": ", what));
  };
  if (text.empty()) return bad("the file is empty");
  ScopedMemoryRelease release;  // declared first: outlives the tree
  absl::StatusOr<json> parsed = ParseBoundedJson(text);
  if (absl::IsResourceExhausted(parsed.status())) {
    return bad(std::string(parsed.status().message()));
  }
  if (!parsed.ok()) {
    return bad(absl::StrCat("not JSON (truncated or corrupt): ",
                            parsed.status().message()));
  }
  json doc = *std::move(parsed);
  if (!doc.is_object()) return bad("not a JSON object");
  Reader r;
  std::optional<std::string> kind = r.String(doc, "", "kind");
  if (!r.ok()) return bad(r.error());
  if (*kind != kKind) {
    return bad(absl::StrCat("kind ", Quote(*kind), " is not '", kKind, "'"));
  }
  const json* version = r.Find(doc, "", "version");
  if (!r.ok()) return bad(r.error());
  if (!version->is_number_integer()) {
    return bad("version: must be an integer");
  }
  if (version->get<int64_t>() != kHealthStateVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": format version ", version->get<int64_t>(),
                     " is not one this gpu-device-plugin reads (",
                     kHealthStateVersion, ")"));
  }
  HealthState state;
  if (auto boot = r.String(doc, "", "bootID")) state.boot_id = *boot;
  const json* gpus = r.Find(doc, "", "gpus");
  if (!r.ok()) return bad(r.error());
  if (!gpus->is_array()) return bad("gpus: must be an array");
  for (size_t i = 0; i < gpus->size() && r.ok(); ++i) {
    ReadGpu(r, (*gpus)[i], absl::StrCat("gpus[", i, "]"), state);
  }
  if (!r.ok()) return bad(r.error());
  return state;
}

absl::StatusOr<std::string> ReadHealthStateText(const std::string& path) {
  absl::StatusOr<std::string> text = ReadRegularFile(
      path, {.max_bytes = kMaxHealthStateBytes, .follow_symlinks = false});
  if (IsFileTooLarge(text.status()) || IsNotRegularFile(text.status())) {
    return absl::DataLossError(text.status().message());
  }
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  return text;
}

absl::StatusOr<HealthState> ReadHealthState(const std::string& path) {
  absl::StatusOr<std::string> text = ReadHealthStateText(path);
  if (!text.ok()) return text.status();
  return ParseHealthState(*text, path);
}

absl::Status WriteHealthStateText(const std::string& path,
                                  absl::string_view text) {
  if (text.size() > kMaxHealthStateBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        path, ": the state would take ", text.size(), " bytes, more than the ",
        kMaxHealthStateBytes, " the file may (it would be refused when read)"));
  }
  return WriteFileAtomically(path, text, 0644, kPrivateDirMode);
}

absl::StatusOr<std::string> MoveHealthStateAside(const std::string& path) {
  const std::string aside = absl::StrCat(path, ".corrupt");
  if (std::rename(path.c_str(), aside.c_str()) != 0) {
    return absl::ErrnoToStatus(
        errno, absl::StrCat("cannot rename ", path, " to ", aside));
  }
  return aside;
}

}  // namespace gdp
