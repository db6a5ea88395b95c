#include "dra/checkpoint.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/atomic_file.h"
#include "util/bounded_json.h"
#include "util/make_dirs.h"
#include "util/read_file.h"

namespace gdp::dra {
namespace {

using nlohmann::json;

constexpr char kKind[] = "gpu-device-plugin/dra-checkpoint";

std::string Checksum(const json& body) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  for (unsigned char c : body.dump()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrFormat("fnv1a64:%016x", h);
}

const char* StrategyName(Sharing::Strategy s) {
  return s == Sharing::Strategy::kMps ? "MPS" : "TimeSlicing";
}

constexpr std::pair<Sharing::Interval, const char*> kIntervals[] = {
    {Sharing::Interval::kDefault, "Default"},
    {Sharing::Interval::kShort, "Short"},
    {Sharing::Interval::kMedium, "Medium"},
    {Sharing::Interval::kLong, "Long"},
};

json SharingJson(const Sharing& s) {
  json out = {{"strategy", StrategyName(s.strategy)}};
  for (const auto& [value, name] : kIntervals) {
    if (value == s.interval) out["interval"] = name;
  }
  if (s.active_thread_percentage.has_value()) {
    out["activeThreadPercentage"] = *s.active_thread_percentage;
  }
  if (s.pinned_memory_limit.has_value()) {
    out["pinnedMemoryLimit"] = *s.pinned_memory_limit;
  }
  if (!s.per_device_pinned_memory_limit.empty()) {
    out["perDevicePinnedMemoryLimit"] = s.per_device_pinned_memory_limit;
  }
  return out;
}

// Reads a field of `j`, throwing json::exception when it is missing or of
// another type (caught and reported by ParseCheckpoint).
template <typename T>
T Get(const json& j, const char* key) {
  return j.at(key).get<T>();
}

Sharing ParseSharing(const json& j) {
  Sharing s;
  const std::string strategy = Get<std::string>(j, "strategy");
  if (strategy == "MPS") {
    s.strategy = Sharing::Strategy::kMps;
  } else if (strategy != "TimeSlicing") {
    throw json::other_error::create(
        501, absl::StrCat("unknown sharing strategy '", strategy, "'"), &j);
  }
  const std::string interval = Get<std::string>(j, "interval");
  bool known = false;
  for (const auto& [value, name] : kIntervals) {
    if (interval == name) {
      s.interval = value;
      known = true;
    }
  }
  if (!known) {
    throw json::other_error::create(
        501, absl::StrCat("unknown interval '", interval, "'"), &j);
  }
  if (j.contains("activeThreadPercentage")) {
    s.active_thread_percentage = Get<int>(j, "activeThreadPercentage");
  }
  if (j.contains("pinnedMemoryLimit")) {
    s.pinned_memory_limit = Get<uint64_t>(j, "pinnedMemoryLimit");
  }
  if (j.contains("perDevicePinnedMemoryLimit")) {
    s.per_device_pinned_memory_limit =
        Get<std::map<std::string, uint64_t>>(j, "perDevicePinnedMemoryLimit");
  }
  return s;
}

constexpr std::pair<ClaimState, const char*> kStates[] = {
    {ClaimState::kPrepared, "Prepared"},
    {ClaimState::kPreparing, "Preparing"},
    {ClaimState::kUnpreparing, "Unpreparing"},
};

json MigJson(const MigRecord& m) {
  const MigPlacement& p = m.placement;
  json out = {{"gpuUUID", p.gpu_uuid},
              {"gpuMinor", p.gpu_minor},
              {"profile", p.profile},
              {"profileID", p.profile_id},
              {"ciProfileID", p.ci_profile_id},
              {"start", p.start},
              {"size", p.size}};
  if (m.gi_id.has_value()) out["giID"] = *m.gi_id;
  if (m.ci_id.has_value()) out["ciID"] = *m.ci_id;
  if (!m.uuid.empty()) out["uuid"] = m.uuid;
  return out;
}

MigRecord ParseMig(const json& j) {
  MigRecord m;
  MigPlacement& p = m.placement;
  p.gpu_uuid = Get<std::string>(j, "gpuUUID");
  p.gpu_minor = Get<unsigned>(j, "gpuMinor");
  p.profile = Get<std::string>(j, "profile");
  p.profile_id = Get<unsigned>(j, "profileID");
  p.ci_profile_id = Get<unsigned>(j, "ciProfileID");
  p.start = Get<unsigned>(j, "start");
  p.size = Get<unsigned>(j, "size");
  if (p.gpu_uuid.empty() || p.size == 0) {
    throw json::other_error::create(
        501, "a MIG placement needs a GPU UUID and a size", &j);
  }
  if (j.contains("giID")) m.gi_id = Get<unsigned>(j, "giID");
  if (j.contains("ciID")) m.ci_id = Get<unsigned>(j, "ciID");
  if (j.contains("uuid")) m.uuid = Get<std::string>(j, "uuid");
  return m;
}

absl::Status DataLoss(const std::string& path, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what));
}

}  // namespace

std::string SerializeCheckpoint(const Checkpoint& c) {
  json claims = json::array();
  int version = 1;
  for (const auto& [uid, claim] : c.claims) {
    json devices = json::array();
    for (const PreparedDevice& d : claim.devices) {
      json device = {{"requests", d.requests},
                     {"pool", d.pool},
                     {"device", d.device},
                     {"cdiDeviceIDs", d.cdi_ids}};
      if (!d.share_id.empty()) {
        version = std::max(version, 2);
        device["shareID"] = d.share_id;
        device["memoryLimit"] = d.memory_limit;
        device["shares"] = d.shares;
      }
      if (d.admin_access) device["adminAccess"] = true;
      if (d.mig.has_value()) {
        version = 3;
        device["mig"] = MigJson(*d.mig);
      }
      devices.push_back(std::move(device));
    }
    json sharing = json::object();
    for (const auto& [device, s] : claim.sharing) {
      sharing[device] = SharingJson(s);
    }
    json entry = {{"uid", uid},
                  {"namespace", claim.ref.ns},
                  {"name", claim.ref.name},
                  {"devices", std::move(devices)},
                  {"sharing", std::move(sharing)}};
    if (claim.state != ClaimState::kPrepared) {
      version = 3;
      for (const auto& [state, name] : kStates) {
        if (state == claim.state) entry["state"] = name;
      }
    }
    claims.push_back(std::move(entry));
  }
  json body = {{"kind", kKind},
               {"version", version},
               {"bootID", c.boot_id},
               {"claims", std::move(claims)}};
  body["checksum"] = Checksum(body);
  return body.dump(2) + "\n";
}

absl::StatusOr<Checkpoint> ParseCheckpoint(absl::string_view text,
                                           const std::string& path) {
  ScopedMemoryRelease release;  // declared first: outlives the tree
  absl::StatusOr<json> parsed = ParseBoundedJson(text);
  if (absl::IsResourceExhausted(parsed.status())) {
    return DataLoss(path, parsed.status().message());
  }
  if (!parsed.ok()) return DataLoss(path, "not valid JSON");
  json body = *std::move(parsed);
  const auto kind = body.is_object() ? body.find("kind") : body.end();
  if (kind == body.end() || !kind->is_string() || *kind != kKind) {
    return DataLoss(path, absl::StrCat("not a checkpoint of gpu-device-plugin "
                                       "(kind is not ",
                                       kKind, ")"));
  }
  if (auto v = body.find("version"); v != body.end() &&
                                     v->is_number_integer() &&
                                     v->get<int64_t>() > kCheckpointVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": written in format ", v->get<int64_t>(),
                     " by a newer gpu-device-plugin; this one reads up to ",
                     kCheckpointVersion));
  }
  auto sum = body.find("checksum");
  if (sum == body.end() || !sum->is_string()) {
    return DataLoss(path, "has no checksum");
  }
  const std::string expected = sum->get<std::string>();
  body.erase("checksum");
  if (Checksum(body) != expected) {
    return DataLoss(path,
                    "checksum mismatch (the file was changed or "
                    "damaged)");
  }
  Checkpoint c;
  try {
    if (Get<int>(body, "version") < 1) {
      return DataLoss(path, "version must be at least 1");
    }
    c.boot_id = Get<std::string>(body, "bootID");
    for (const json& claim : body.at("claims")) {
      PreparedClaim p;
      const std::string uid = Get<std::string>(claim, "uid");
      p.ref = {Get<std::string>(claim, "namespace"),
               Get<std::string>(claim, "name"), uid};
      for (const json& d : claim.at("devices")) {
        PreparedDevice device{Get<std::vector<std::string>>(d, "requests"),
                              Get<std::string>(d, "pool"),
                              Get<std::string>(d, "device"),
                              Get<std::vector<std::string>>(d, "cdiDeviceIDs")};
        if (d.contains("shareID")) {
          device.share_id = Get<std::string>(d, "shareID");
          device.memory_limit = Get<uint64_t>(d, "memoryLimit");
          device.shares = Get<uint64_t>(d, "shares");
          if (device.share_id.empty()) {
            return DataLoss(path, absl::StrCat("claim ", uid,
                                               ": a device has an empty "
                                               "shareID"));
          }
        }
        if (d.contains("adminAccess")) {
          device.admin_access = Get<bool>(d, "adminAccess");
        }
        if (d.contains("mig")) device.mig = ParseMig(d.at("mig"));
        p.devices.push_back(std::move(device));
      }
      for (const auto& [device, s] : claim.at("sharing").items()) {
        p.sharing[device] = ParseSharing(s);
      }
      if (claim.contains("state")) {
        const std::string state = Get<std::string>(claim, "state");
        bool known = false;
        for (const auto& [value, name] : kStates) {
          if (state == name) {
            p.state = value;
            known = true;
          }
        }
        if (!known) {
          return DataLoss(path, absl::StrCat("claim ", uid, ": unknown state '",
                                             state, "'"));
        }
      }
      if (!c.claims.emplace(uid, std::move(p)).second) {
        return DataLoss(path, absl::StrCat("claim ", uid, " is listed twice"));
      }
    }
  } catch (const json::exception& e) {
    return DataLoss(path, absl::StrCat("malformed: ", e.what()));
  }
  return c;
}

std::string RestampCheckpoint(absl::string_view text) {
  json body = json::parse(text.begin(), text.end(), nullptr,
                          /*allow_exceptions=*/false);
  if (!body.is_object()) return std::string(text);
  body.erase("checksum");
  body["checksum"] = Checksum(body);
  return body.dump();
}

absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path) {
  absl::StatusOr<std::string> text =
      ReadRegularFile(path, {.max_bytes = kMaxCheckpointBytes,
                             .follow_symlinks = false,
                             .what = "checkpoint"});
  if (IsFileTooLarge(text.status()) || IsNotRegularFile(text.status())) {
    return absl::DataLossError(text.status().message());
  }
  if (!text.ok()) return text.status();
  return ParseCheckpoint(*text, path);
}

absl::Status WriteCheckpoint(const std::string& path,
                             const Checkpoint& checkpoint, bool durable) {
  const std::string text = SerializeCheckpoint(checkpoint);
  if (text.size() > kMaxCheckpointBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": the checkpoint would take ", text.size(),
                     " bytes, more than the ", kMaxCheckpointBytes,
                     " a checkpoint may (it would be refused when read)"));
  }
  return WriteFileAtomically(path, text, 0600, kPrivateDirMode, durable);
}

}  // namespace gdp::dra
