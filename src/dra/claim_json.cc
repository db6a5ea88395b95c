#include "dra/claim_json.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dra/k8s_names.h"
#include "dra/quantity.h"
#include "util/quote.h"

namespace gdp::dra {
namespace {

using nlohmann::json;

absl::Status Bad(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

const char* TypeName(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "a list";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    default:
      return "something else";
  }
}

absl::Status WrongType(const std::string& path, const json& j,
                       const char* expected) {
  return Bad(path, absl::StrCat("must be ", expected, ", not ", TypeName(j)));
}

// Walks the fields of object `j` at `path`: each key must have a handler
// (else "unknown field"); a null value counts as absent.
absl::Status Fields(
    const json& j, const std::string& path,
    const std::vector<std::pair<
        const char*,
        std::function<absl::Status(const json&, const std::string&)>>>&
        handlers) {
  if (!j.is_object()) return WrongType(path, j, "an object");
  for (const auto& [key, value] : j.items()) {
    // A key from outside: cut for the message (a 5 MB key, a short one).
    const std::string field = path.empty()
                                  ? CutText(key, 64)
                                  : absl::StrCat(path, ".", CutText(key, 64));
    bool known = false;
    for (const auto& [name, handle] : handlers) {
      if (key != name) continue;
      known = true;
      if (value.is_null()) break;
      if (absl::Status s = handle(value, field); !s.ok()) return s;
    }
    if (!known) return Bad(field, "unknown field");
  }
  return absl::OkStatus();
}

absl::Status String(const json& j, const std::string& path, std::string* out) {
  if (!j.is_string()) return WrongType(path, j, "a string");
  *out = j.get<std::string>();
  return absl::OkStatus();
}

absl::Status Quantity(const json& j, const std::string& path, uint64_t* out) {
  std::string text;
  if (j.is_number_unsigned() ||
      (j.is_number_integer() && j.get<int64_t>() >= 0)) {
    *out = j.get<uint64_t>();
    return absl::OkStatus();
  }
  if (absl::Status s = String(j, path, &text); !s.ok()) return s;
  std::optional<uint64_t> n = ParseWholeQuantity(text);
  if (!n.has_value()) {
    return Bad(path, absl::StrCat(Quote(text),
                                  " is not a whole quantity of bytes such as "
                                  "\"10Gi\" or \"512Mi\""));
  }
  *out = *n;
  return absl::OkStatus();
}

absl::Status MpsConfig(const json& j, const std::string& path, Sharing* out) {
  return Fields(
      j, path,
      {{"defaultActiveThreadPercentage",
        [&](const json& v, const std::string& p) {
          if (!v.is_number_integer()) return WrongType(p, v, "an integer");
          const int64_t n = v.get<int64_t>();
          if (n < 0) {
            return Bad(p, "active thread percentage must not be negative");
          }
          if (n > 100) {
            return Bad(p,
                       "active thread percentage must not be greater than 100");
          }
          out->active_thread_percentage = static_cast<int>(n);
          return absl::OkStatus();
        }},
       {"defaultPinnedDeviceMemoryLimit",
        [&](const json& v, const std::string& p) {
          uint64_t bytes = 0;
          if (absl::Status s = Quantity(v, p, &bytes); !s.ok()) return s;
          out->pinned_memory_limit = bytes;
          return absl::OkStatus();
        }},
       {"defaultPerDevicePinnedMemoryLimit",
        [&](const json& v, const std::string& p) {
          if (!v.is_object()) return WrongType(p, v, "an object");
          for (const auto& [device, limit] : v.items()) {
            uint64_t bytes = 0;
            if (absl::Status s = Quantity(
                    limit, absl::StrCat(p, "[\"", CutText(device, 64), "\"]"),
                    &bytes);
                !s.ok()) {
              return s;
            }
            out->per_device_pinned_memory_limit[device] = bytes;
          }
          return absl::OkStatus();
        }},
       // Newer NVIDIA versions: the MPS daemon's -M; nothing to do here
       // (this driver does not start MPS daemons), but not an error.
       {"multiUser", [&](const json& v, const std::string& p) {
          return v.is_boolean() ? absl::OkStatus()
                                : WrongType(p, v, "a boolean");
        }}});
}

absl::Status SharingSection(const json& j, const std::string& path, bool gpu,
                            Sharing* out) {
  std::optional<std::string> strategy;
  bool time_slicing_config = false, mps_config = false;
  std::vector<std::pair<const char*, std::function<absl::Status(
                                         const json&, const std::string&)>>>
      handlers = {
          {"strategy",
           [&](const json& v, const std::string& p) {
             std::string s;
             if (absl::Status st = String(v, p, &s); !st.ok()) return st;
             if (s == "TimeSlicing") {
               out->strategy = Sharing::Strategy::kTimeSlicing;
             } else if (s == "MPS") {
               out->strategy = Sharing::Strategy::kMps;
             } else {
               return Bad(p,
                          absl::StrCat("unknown ", gpu ? "GPU" : "MIG device",
                                       " sharing strategy ", Quote(s),
                                       " (TimeSlicing or MPS)"));
             }
             strategy = s;
             return absl::OkStatus();
           }},
          {"mpsConfig",
           [&](const json& v, const std::string& p) {
             mps_config = true;
             return MpsConfig(v, p, out);
           }},
      };
  if (gpu) {
    handlers.push_back(
        {"timeSlicingConfig", [&](const json& v, const std::string& p) {
           time_slicing_config = true;
           return Fields(
               v, p,
               {{"interval", [&](const json& i, const std::string& ip) {
                   std::string s;
                   if (absl::Status st = String(i, ip, &s); !st.ok()) return st;
                   static constexpr std::pair<const char*, Sharing::Interval>
                       kIntervals[] = {{"Default", Sharing::Interval::kDefault},
                                       {"Short", Sharing::Interval::kShort},
                                       {"Medium", Sharing::Interval::kMedium},
                                       {"Long", Sharing::Interval::kLong}};
                   for (const auto& [name, value] : kIntervals) {
                     if (s == name) {
                       out->interval = value;
                       return absl::OkStatus();
                     }
                   }
                   return Bad(ip, absl::StrCat("unknown time-slice interval ",
                                               Quote(s),
                                               " (Default, Short, Medium or "
                                               "Long)"));
                 }}});
         }});
  }
  if (absl::Status s = Fields(j, path, handlers); !s.ok()) return s;
  if (!strategy.has_value()) {
    return Bad(absl::StrCat(path, ".strategy"), "no sharing strategy set");
  }
  if (out->strategy == Sharing::Strategy::kTimeSlicing && mps_config) {
    return Bad(absl::StrCat(path, ".mpsConfig"),
               "cannot use MpsConfig with the 'TimeSlicing' strategy");
  }
  if (out->strategy == Sharing::Strategy::kMps && time_slicing_config) {
    return Bad(absl::StrCat(path, ".timeSlicingConfig"),
               "cannot use TimeSlicingConfig with the 'MPS' strategy");
  }
  return absl::OkStatus();
}

std::string Child(const std::string& path, const char* field) {
  return absl::StrCat(path, ".", field);
}

// resource.k8s.io/v1's own limits (the API server's validation), which no
// claim it stored breaks: results and the requests a config names at most
// 32 (AllocationResultsMaxSize, DeviceRequestsMaxSize), configs at most 64
// (twice DeviceConfigMaxSize: the class's and the claim's).
constexpr size_t kMaxResults = 32;
constexpr size_t kMaxConfigs = 64;
constexpr size_t kMaxConfigRequests = 32;
// A device has at most 32 attributes and capacities together, so a result
// consumes at most 32 capacities. A share ID is a UUID the scheduler made
// (36 characters); 64 leaves room and keeps CDI names and share keys short.
constexpr size_t kMaxCapacities = 32;
constexpr size_t kMaxShareId = 64;

// A capacity's name (a QualifiedName): a DNS label, or a DNS subdomain and
// a DNS label joined by '/'.
bool IsCapacityName(absl::string_view s) {
  if (s.size() > 253 + 1 + 63) return false;
  std::vector<absl::string_view> parts = absl::StrSplit(s, '/');
  if (parts.size() == 1) return IsDnsLabel(parts[0]);
  return parts.size() == 2 && IsDnsSubdomain(parts[0]) && IsDnsLabel(parts[1]);
}

// A pool name: DNS subdomains joined by '/', at most 253 characters.
bool IsPoolName(absl::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (absl::string_view part : absl::StrSplit(s, '/')) {
    if (!IsDnsSubdomain(part, 253)) return false;
  }
  return true;
}

// A request name: a DNS label, or "<request>/<subrequest>".
bool IsRequestName(absl::string_view s) {
  if (s.size() > 63 + 1 + 63) return false;  // before splitting 5 MB of '/'
  std::vector<absl::string_view> parts = absl::StrSplit(s, '/');
  return parts.size() <= 2 &&
         std::all_of(parts.begin(), parts.end(), IsDnsLabel);
}

// OK when `name` (at `path`) is a `kind` by `valid`; else the field named
// and the value quoted, cut (a 5 MB name makes a short error).
absl::Status CheckName(const std::string& path, const std::string& name,
                       bool valid, absl::string_view kind) {
  if (valid) return absl::OkStatus();
  return Bad(path, absl::StrCat("must be ", kind, ", not ", Quote(name)));
}

constexpr char kLabel[] =
    "a DNS label (at most 63 lower-case letters, digits and '-', starting "
    "and ending with a letter or digit)";

constexpr char kRequestName[] =
    "a DNS label (at most 63 lower-case letters, digits and '-'), or two "
    "joined by '/' (<request>/<subrequest>)";

absl::Status CheckCount(const std::string& path, size_t n, size_t max) {
  if (n <= max) return absl::OkStatus();
  return Bad(path, absl::StrCat(n, " entries; the API allows at most ", max));
}

}  // namespace

std::string Describe(const ClaimRef& ref) {
  return absl::StrCat(ref.ns, "/", ref.name);
}

absl::StatusOr<DeviceConfig> ParseDeviceConfig(const json& parameters,
                                               const std::string& path) {
  if (!parameters.is_object()) {
    return WrongType(path, parameters, "an object");
  }
  std::string api_version, kind;
  if (auto v = parameters.find("apiVersion");
      v == parameters.end() || !v->is_string()) {
    return Bad(Child(path, "apiVersion"), "is required (a string)");
  } else {
    api_version = v->get<std::string>();
  }
  if (auto k = parameters.find("kind");
      k == parameters.end() || !k->is_string()) {
    return Bad(Child(path, "kind"), "is required (a string)");
  } else {
    kind = k->get<std::string>();
  }
  if (api_version != kNvidiaConfigApiVersion) {
    return Bad(Child(path, "apiVersion"),
               absl::StrCat("unknown version ", Quote(api_version), " (only ",
                            kNvidiaConfigApiVersion, ")"));
  }
  DeviceConfig out;
  if (kind == "GpuConfig") {
    out.kind = DeviceConfig::Kind::kGpu;
  } else if (kind == "MigDeviceConfig") {
    out.kind = DeviceConfig::Kind::kMig;
  } else if (kind == "VfioDeviceConfig") {
    return Bad(Child(path, "kind"),
               "VfioDeviceConfig (GPU passthrough) is not supported by this "
               "driver");
  } else {
    return Bad(Child(path, "kind"),
               absl::StrCat("unknown kind ", Quote(kind),
                            " (GpuConfig or MigDeviceConfig)"));
  }
  const bool gpu = out.kind == DeviceConfig::Kind::kGpu;
  bool sharing_given = false;
  absl::Status s = Fields(
      parameters, path,
      {{"apiVersion",
        [](const json&, const std::string&) { return absl::OkStatus(); }},
       {"kind",
        [](const json&, const std::string&) { return absl::OkStatus(); }},
       {"sharing", [&](const json& v, const std::string& p) {
          sharing_given = true;
          return SharingSection(v, p, gpu, &out.sharing);
        }}});
  if (!s.ok()) return s;
  // As NVIDIA: no sharing means time-slicing with the default interval.
  if (!sharing_given) out.sharing = Sharing{};
  return out;
}

absl::StatusOr<AllocatedClaim> ParseClaim(const json& claim,
                                          const std::string& driver) {
  if (!claim.is_object()) return WrongType("claim", claim, "an object");
  AllocatedClaim out;
  const json* metadata = nullptr;
  if (auto m = claim.find("metadata"); m != claim.end() && m->is_object()) {
    metadata = &*m;
  } else {
    return Bad("metadata", "is missing");
  }
  for (auto [field, dest] :
       {std::pair<const char*, std::string*>{"namespace", &out.ref.ns},
        {"name", &out.ref.name},
        {"uid", &out.ref.uid}}) {
    auto v = metadata->find(field);
    if (v == metadata->end() || !v->is_string() ||
        v->get<std::string>().empty()) {
      return Bad(absl::StrCat("metadata.", field), "is missing");
    }
    *dest = v->get<std::string>();
  }
  if (absl::Status s = CheckName("metadata.namespace", out.ref.ns,
                                 IsDnsLabel(out.ref.ns), kLabel);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckName("metadata.name", out.ref.name,
                                 IsDnsSubdomain(out.ref.name, 253),
                                 "a DNS subdomain of at most 253 characters");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckName("metadata.uid", out.ref.uid, IsUid(out.ref.uid),
                    "at most 128 letters, digits and '-' (a UID)");
      !s.ok()) {
    return s;
  }
  const json* allocation = nullptr;
  if (auto st = claim.find("status"); st != claim.end() && st->is_object()) {
    if (auto a = st->find("allocation"); a != st->end() && a->is_object()) {
      allocation = &*a;
    }
  }
  if (allocation == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("claim ", Describe(out.ref),
                     " is not allocated (no status.allocation)"));
  }
  const std::string base = "status.allocation.devices";
  auto devices = allocation->find("devices");
  if (devices == allocation->end() || devices->is_null()) return out;
  if (!devices->is_object()) return WrongType(base, *devices, "an object");
  if (auto results = devices->find("results"); results != devices->end()) {
    if (!results->is_array()) {
      return WrongType(Child(base, "results"), *results, "a list");
    }
    if (absl::Status s =
            CheckCount(Child(base, "results"), results->size(), kMaxResults);
        !s.ok()) {
      return s;
    }
    for (size_t i = 0; i < results->size(); ++i) {
      const json& r = (*results)[i];
      const std::string path = absl::StrCat(base, ".results[", i, "]");
      if (!r.is_object()) return WrongType(path, r, "an object");
      AllocatedDevice d;
      for (auto [field, dest] :
           {std::pair<const char*, std::string*>{"request", &d.request},
            {"driver", &d.driver},
            {"pool", &d.pool},
            {"device", &d.device}}) {
        auto v = r.find(field);
        if (v == r.end() || !v->is_string()) {
          return Bad(Child(path, field), "is required (a string)");
        }
        *dest = v->get<std::string>();
      }
      for (absl::Status s : {
               CheckName(Child(path, "request"), d.request,
                         IsRequestName(d.request), kRequestName),
               CheckName(Child(path, "driver"), d.driver,
                         IsDnsSubdomain(d.driver, 63),
                         "a DNS subdomain of at most 63 characters"),
               d.pool.size() > 253
                   ? Bad(Child(path, "pool"),
                         absl::StrCat("must be at most 253 characters, not ",
                                      d.pool.size()))
                   : CheckName(Child(path, "pool"), d.pool, IsPoolName(d.pool),
                               "DNS subdomains separated by '/'"),
               CheckName(Child(path, "device"), d.device, IsDnsLabel(d.device),
                         kLabel),
           }) {
        if (!s.ok()) return s;
      }
      if (auto a = r.find("adminAccess"); a != r.end() && a->is_boolean()) {
        d.admin_access = a->get<bool>();
      }
      if (auto id = r.find("shareID"); id != r.end() && !id->is_null()) {
        const std::string p = Child(path, "shareID");
        if (absl::Status s = String(*id, p, &d.share_id); !s.ok()) return s;
        if (absl::Status s =
                CheckName(p, d.share_id,
                          d.share_id.size() <= kMaxShareId && IsUid(d.share_id),
                          "a UID (at most 64 ASCII letters, digits and '-')");
            !s.ok()) {
          return s;
        }
      }
      if (auto cc = r.find("consumedCapacity");
          cc != r.end() && !cc->is_null()) {
        const std::string p = Child(path, "consumedCapacity");
        if (!cc->is_object()) return WrongType(p, *cc, "an object");
        if (absl::Status s = CheckCount(p, cc->size(), kMaxCapacities);
            !s.ok()) {
          return s;
        }
        for (const auto& [name, value] : cc->items()) {
          const std::string field = absl::StrCat(p, ".", CutText(name, 64));
          if (absl::Status s =
                  CheckName(field, name, IsCapacityName(name),
                            "a capacity name (a DNS label, or a DNS "
                            "subdomain and a DNS label joined by '/')");
              !s.ok()) {
            return s;
          }
          uint64_t amount = 0;
          if (absl::Status s = Quantity(value, field, &amount); !s.ok()) {
            return s;
          }
          d.consumed_capacity[name] = amount;
        }
      }
      out.results.push_back(std::move(d));
    }
  }
  auto configs = devices->find("config");
  if (configs == devices->end() || configs->is_null()) return out;
  if (!configs->is_array()) {
    return WrongType(Child(base, "config"), *configs, "a list");
  }
  if (absl::Status s =
          CheckCount(Child(base, "config"), configs->size(), kMaxConfigs);
      !s.ok()) {
    return s;
  }
  std::vector<DeviceConfig> from_class, from_claim;
  for (size_t i = 0; i < configs->size(); ++i) {
    const json& c = (*configs)[i];
    const std::string path = absl::StrCat(base, ".config[", i, "]");
    if (!c.is_object()) return WrongType(path, c, "an object");
    auto opaque = c.find("opaque");
    if (opaque == c.end() || !opaque->is_object()) continue;  // not ours
    auto d = opaque->find("driver");
    if (d == opaque->end() || !d->is_string() || *d != driver) continue;
    std::string source;
    if (auto s = c.find("source"); s != c.end() && s->is_string()) {
      source = s->get<std::string>();
    }
    if (source != "FromClass" && source != "FromClaim") {
      return Bad(Child(path, "source"),
                 absl::StrCat("invalid config source ", Quote(source),
                              " (FromClass or FromClaim)"));
    }
    auto parameters = opaque->find("parameters");
    if (parameters == opaque->end()) {
      return Bad(Child(path, "opaque.parameters"), "is required");
    }
    absl::StatusOr<DeviceConfig> config =
        ParseDeviceConfig(*parameters, Child(path, "opaque.parameters"));
    if (!config.ok()) return config.status();
    config->from_claim = source == "FromClaim";
    if (auto r = c.find("requests"); r != c.end() && !r->is_null()) {
      if (!r->is_array())
        return WrongType(Child(path, "requests"), *r, "a list");
      if (absl::Status s = CheckCount(Child(path, "requests"), r->size(),
                                      kMaxConfigRequests);
          !s.ok()) {
        return s;
      }
      for (size_t k = 0; k < r->size(); ++k) {
        const json& name = (*r)[k];
        const std::string item = absl::StrCat(path, ".requests[", k, "]");
        if (!name.is_string()) return WrongType(item, name, "a string");
        const std::string request = name.get<std::string>();
        if (absl::Status s =
                CheckName(item, request, IsRequestName(request), kRequestName);
            !s.ok()) {
          return s;
        }
        config->requests.push_back(request);
      }
    }
    (config->from_claim ? from_claim : from_class)
        .push_back(*std::move(config));
  }
  out.configs = std::move(from_class);
  for (DeviceConfig& c : from_claim) out.configs.push_back(std::move(c));
  return out;
}

}  // namespace gdp::dra
