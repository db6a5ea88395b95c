#include "config/config_file.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "config/names.h"
#include "config/settings.h"
#include "config/yaml_fields.h"
#include "util/read_file.h"

namespace gdp {
namespace {

// What a config file may hold: a real one is a few KiB, a few levels deep.
constexpr size_t kMaxConfigBytes = 1 << 20;

using Field = YamlField;

// A Kubernetes quantity of bytes written as digits and an optional
// suffix: binary (Ki, Mi, Gi, Ti, Pi, Ei) or decimal (k, M, G, T, P, E);
// nullopt for anything else (a sign, a fraction, an exponent, other
// suffixes) or a value that does not fit 64 bits.
std::optional<uint64_t> ParseByteQuantity(absl::string_view text) {
  struct Suffix {
    absl::string_view name;
    uint64_t factor;
  };
  static constexpr Suffix kSuffixes[] = {
      {"Ki", uint64_t{1} << 10},
      {"Mi", uint64_t{1} << 20},
      {"Gi", uint64_t{1} << 30},
      {"Ti", uint64_t{1} << 40},
      {"Pi", uint64_t{1} << 50},
      {"Ei", uint64_t{1} << 60},
      {"k", 1000ULL},
      {"M", 1000000ULL},
      {"G", 1000000000ULL},
      {"T", 1000000000000ULL},
      {"P", 1000000000000000ULL},
      {"E", 1000000000000000000ULL},
  };
  uint64_t factor = 1;
  for (const Suffix& s : kSuffixes) {
    if (absl::ConsumeSuffix(&text, s.name)) {
      factor = s.factor;
      break;
    }
  }
  if (text.empty() || text.size() > 20) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(text, &n)) return std::nullopt;
  if (n > UINT64_MAX / factor) return std::nullopt;
  return n * factor;
}

// The schema: which fields a config file has and what each fills in.
class Parser : public YamlFieldReader {
 public:
  explicit Parser(ConfigFile* out)
      : YamlFieldReader(out->path, &out->lines), out_(out) {}

  bool Document(const YAML::Node& root);

 private:
  // The fields of `section` ("flags.plugin") that are settings (rows of
  // settings.h), followed by `others`.
  Handlers Section(absl::string_view section, Handlers others);

  bool Flags(const Field& f);
  bool Imex(const Field& f);
  bool Patterns(const Field& f,
                std::optional<std::vector<ResourcePattern>>* out);
  bool SharingSection(const Field& f);
  bool Replicated(const Field& f, SharingStrategy strategy);
  bool SharedResourceEntry(const Field& f, SharedResource* out);
  bool Devices(const Field& f, SharedDevices* out);
  // A Kubernetes quantity of bytes in whole MiB, > 0 ("20Gi", "512Mi",
  // "1073741824").
  bool MemoryQuantity(const Field& f, uint64_t* out);

  ConfigFile* out_;
};

bool Parser::Document(const YAML::Node& root) {
  if (root.IsNull()) return true;  // an empty document
  return Mapping(
      Field{root, "", LineOfNode(root)},
      {
          {"version",
           [&](const Field& f) {
             std::optional<std::string> version;
             if (!String(f, &version)) return false;
             if (!version->empty() && *version != "v1") {
               return Fail(f.line, f.path,
                           absl::StrCat("unknown version '", *version,
                                        "'; only v1 is supported"));
             }
             return true;
           }},
          {"flags", [&](const Field& f) { return Flags(f); }},
          {"resources",
           [&](const Field& f) {
             return Mapping(f, {
                                   {"gpus",
                                    [&](const Field& g) {
                                      return Patterns(g, &out_->gpu_resources);
                                    }},
                                   {"mig",
                                    [&](const Field& g) {
                                      return Patterns(g, &out_->mig_resources);
                                    }},
                               });
           }},
          {"sharing", [&](const Field& f) { return SharingSection(f); }},
          {"imex", [&](const Field& f) { return Imex(f); }},
          {"dra",
           [&](const Field& f) {
             return Mapping(f, {
                                   {"devices",
                                    [&](const Field& x) {
                                      SharedDevices d;
                                      if (!Devices(x, &d)) return false;
                                      out_->dra_devices = std::move(d);
                                      return true;
                                    }},
                               });
           }},
          {"health",
           [&](const Field& f) { return Mapping(f, Section("health", {})); }},
      });
}

Parser::Handlers Parser::Section(absl::string_view section, Handlers others) {
  Handlers out;
  for (const Setting& s : Settings()) {
    absl::string_view key = s.file;
    if (!absl::ConsumePrefix(&key, section) ||
        !absl::ConsumePrefix(&key, ".") || absl::StrContains(key, '.')) {
      continue;
    }
    out.emplace_back(key, [this, &s](const Field& f) {
      return s.value->Read(*this, f, &out_->settings);
    });
  }
  for (auto& other : others) out.push_back(std::move(other));
  return out;
}

bool Parser::Flags(const Field& f) {
  return Mapping(
      f,
      Section("flags",
              {
                  {"gdrcopyEnabled",
                   [&](const Field& x) { return UnsupportedBool(x); }},
                  {"gdsEnabled",
                   [&](const Field& x) { return UnsupportedBool(x); }},
                  {"mofedEnabled",
                   [&](const Field& x) { return UnsupportedBool(x); }},
                  {"useNodeFeatureAPI",
                   [&](const Field& x) {
                     std::optional<bool> unused;
                     return Bool(x, &unused);
                   }},
                  {"deviceDiscoveryStrategy",
                   [&](const Field& x) {
                     std::optional<std::string> s;
                     if (!String(x, &s)) return false;
                     if (*s == "auto" || *s == "nvml") return true;
                     if (*s == "tegra" || *s == "vfio") {
                       return Fail(
                           x.line, x.path,
                           absl::StrCat("'", *s,
                                        "' is not supported by "
                                        "gpu-device-plugin; use auto or nvml"));
                     }
                     return Fail(
                         x.line, x.path,
                         absl::StrCat("must be auto, nvml, tegra or vfio, "
                                      "got '",
                                      *s, "'"));
                   }},
                  {"plugin",
                   [&](const Field& x) {
                     return Mapping(x, Section("flags.plugin", {}));
                   }},
                  {"gfd",
                   [&](const Field& x) {
                     return Mapping(x, Section("flags.gfd", {}));
                   }},
              }));
}

bool Parser::Imex(const Field& f) {
  return Mapping(f, {
                        {"channelIDs",
                         [&](const Field& x) {
                           if (!List(x, [&](const Field& id) {
                                 int unused = 0;
                                 return Int(id, &unused);
                               })) {
                             return false;
                           }
                           if (x.node.size() > 0) {
                             return Fail(
                                 x.line, x.path,
                                 "IMEX channels are not supported by "
                                 "gpu-device-plugin; leave the list empty");
                           }
                           return true;
                         }},
                        {"required",
                         [&](const Field& x) {
                           std::optional<bool> unused;
                           return Bool(x, &unused);
                         }},
                    });
}

bool Parser::Patterns(const Field& f,
                      std::optional<std::vector<ResourcePattern>>* out) {
  std::vector<ResourcePattern> patterns;
  bool ok = List(f, [&](const Field& item) {
    std::optional<std::string> pattern, name;
    if (!Mapping(item,
                 {
                     {"pattern",
                      [&](const Field& x) { return String(x, &pattern); }},
                     {"name", [&](const Field& x) { return String(x, &name); }},
                 })) {
      return false;
    }
    if (!pattern.has_value()) {
      return Fail(item.line, absl::StrCat(item.path, ".pattern"),
                  "is required");
    }
    if (!name.has_value()) {
      return Fail(item.line, absl::StrCat(item.path, ".name"), "is required");
    }
    patterns.push_back({*pattern, QualifyResourceName(*name)});
    return true;
  });
  if (!ok) return false;
  *out = std::move(patterns);
  return true;
}

bool Parser::SharingSection(const Field& f) {
  std::optional<int> first_line;  // of the strategy given first
  auto strategy = [&](SharingStrategy s) {
    return [&, s](const Field& x) {
      if (first_line.has_value()) {
        return Fail(x.line, x.path,
                    absl::StrCat("timeSlicing and mps cannot both be set (the "
                                 "other is on line ",
                                 *first_line, ")"));
      }
      first_line = x.line;
      return Replicated(x, s);
    };
  };
  return Mapping(f,
                 {
                     {"timeSlicing", strategy(SharingStrategy::kTimeSlicing)},
                     {"mps", strategy(SharingStrategy::kMps)},
                 });
}

bool Parser::Replicated(const Field& f, SharingStrategy strategy) {
  Sharing sharing;
  sharing.strategy = strategy;
  std::optional<bool> rename_by_default, fail_requests;
  bool ok = Mapping(
      f, {
             {"renameByDefault",
              [&](const Field& x) { return Bool(x, &rename_by_default); }},
             {"failRequestsGreaterThanOne",
              [&](const Field& x) { return Bool(x, &fail_requests); }},
             {"resources",
              [&](const Field& x) {
                return List(x, [&](const Field& item) {
                  SharedResource r;
                  if (!SharedResourceEntry(item, &r)) return false;
                  sharing.resources.push_back(std::move(r));
                  return true;
                });
              }},
         });
  if (!ok) return false;
  sharing.rename_by_default = rename_by_default.value_or(false);
  sharing.fail_requests_greater_than_one =
      fail_requests.value_or(strategy == SharingStrategy::kMps);
  out_->sharing = std::move(sharing);
  return true;
}

bool Parser::SharedResourceEntry(const Field& f, SharedResource* out) {
  std::optional<std::string> name, rename;
  std::optional<int> replicas;
  bool ok = Mapping(
      f, {
             {"memoryPerReplica",
              [&](const Field& x) {
                return MemoryQuantity(x, &out->memory_per_replica);
              }},
             {"name", [&](const Field& x) { return String(x, &name); }},
             {"rename", [&](const Field& x) { return String(x, &rename); }},
             {"devices",
              [&](const Field& x) { return Devices(x, &out->devices); }},
             {"replicas",
              [&](const Field& x) {
                int n = 0;
                if (!Int(x, &n)) return false;
                replicas = n;
                return true;
              }},
         });
  if (!ok) return false;
  if (!name.has_value()) {
    return Fail(f.line, absl::StrCat(f.path, ".name"), "is required");
  }
  if (!replicas.has_value()) {
    return Fail(f.line, absl::StrCat(f.path, ".replicas"), "is required");
  }
  out->name = QualifyResourceName(*name);
  if (rename.has_value() && !rename->empty()) {
    out->rename = QualifyResourceName(*rename);
  }
  out->replicas = *replicas;
  return true;
}

bool Parser::MemoryQuantity(const Field& f, uint64_t* out) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  constexpr char kWhat[] =
      "a memory quantity in whole MiB such as '20Gi' or '512Mi'";
  if (!f.node.IsScalar()) return WrongType(f, kWhat);
  const std::string& text = f.node.Scalar();
  std::optional<uint64_t> bytes = ParseByteQuantity(text);
  if (!bytes.has_value()) {
    return Fail(f.line, f.path,
                absl::StrCat("must be ", kWhat, ", got '", text, "'"));
  }
  if (*bytes == 0 || *bytes % kMiB != 0) {
    return Fail(f.line, f.path,
                absl::StrCat("must be a positive whole number of MiB, got '",
                             text, "' (", *bytes, " bytes)"));
  }
  *out = *bytes;
  return true;
}

bool Parser::Devices(const Field& f, SharedDevices* out) {
  if (f.node.IsScalar()) {
    if (f.node.Scalar() == "all") {
      out->kind = SharedDevices::Kind::kAll;
      return true;
    }
    int count = 0;
    if (IsPlain(f.node) && absl::SimpleAtoi(f.node.Scalar(), &count)) {
      out->kind = SharedDevices::Kind::kCount;
      out->count = count;
      return true;
    }
    return Fail(f.line, f.path,
                absl::StrCat("must be 'all', a number of devices or a list of "
                             "devices, got '",
                             f.node.Scalar(), "'"));
  }
  if (!f.node.IsSequence()) {
    return WrongType(f, "'all', a number of devices or a list of devices");
  }
  out->kind = SharedDevices::Kind::kList;
  return List(f, [&](const Field& item) {
    if (!item.node.IsScalar()) {
      return WrongType(item, "a GPU index, MIG index or UUID");
    }
    out->list.push_back(item.node.Scalar());
    return true;
  });
}

}  // namespace

int ConfigFile::LineOf(absl::string_view path) const {
  while (!path.empty()) {
    if (auto it = lines.find(path); it != lines.end()) return it->second;
    size_t cut = path.find_last_of(".[");
    if (cut == absl::string_view::npos) break;
    path = path.substr(0, cut);
  }
  return 0;
}

absl::StatusOr<ConfigFile> ParseConfigFile(absl::string_view text,
                                           const std::string& path) {
  ConfigFile file;
  file.path = path;
  if (text.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": larger than ", kMaxConfigBytes,
                     " bytes; a config file is a few KiB"));
  }
  absl::StatusOr<YAML::Node> document =
      LoadOneYamlDocument(text, path, YamlLimits{});
  if (!document.ok()) return document.status();
  if (document->IsNull()) return file;
  Parser parser(&file);
  if (!parser.Document(*document)) return parser.status();
  return file;
}

absl::StatusOr<ConfigFile> ReadConfigFile(const std::string& path) {
  // Followed through symlinks: a ConfigMap's file is one (into ..data).
  absl::StatusOr<std::string> text = ReadRegularFile(
      path, {.max_bytes = kMaxConfigBytes, .what = "config file"});
  if (IsFileTooLarge(text.status())) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": larger than ", kMaxConfigBytes,
                     " bytes; a config file is a few KiB"));
  }
  if (!text.ok()) return text.status();
  return ParseConfigFile(*text, path);
}

}  // namespace gdp
