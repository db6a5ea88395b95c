#include "config/config_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "config/names.h"

namespace gdp {
namespace {

// What a config file may hold: a real one is a few KiB, a few levels deep.
constexpr size_t kMaxConfigBytes = 1 << 20;
constexpr int kMaxDepth = 32;
constexpr size_t kMaxScalarBytes = 4096;

// Thrown by Bounds to stop the parser at the first excess.
struct OutOfBounds {
  int line;
  std::string what;
};

// Checks a document's events, before any node is built: nesting at most
// kMaxDepth, scalars at most kMaxScalarBytes. Throws OutOfBounds.
class Bounds final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { line_ = mark.line; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Seen(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Seen(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    Seen(mark);
    if (value.size() > kMaxScalarBytes) {
      throw OutOfBounds{mark.line + 1,
                        absl::StrCat("a value of ", value.size(),
                                     " bytes; at most ", kMaxScalarBytes)};
    }
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&,
                       YAML::anchor_t, YAML::EmitterStyle::value) override {
    Enter(mark);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Enter(mark);
  }
  void OnMapEnd() override { --depth_; }

  // The line of the document's first value (else of its start).
  int document_line() const { return line_ + 1; }

 private:
  void Seen(const YAML::Mark& mark) {
    if (!content_) line_ = mark.line;
    content_ = true;
  }

  void Enter(const YAML::Mark& mark) {
    Seen(mark);
    if (++depth_ > kMaxDepth) {
      throw OutOfBounds{mark.line + 1, absl::StrCat("nested deeper than ",
                                                    kMaxDepth, " levels")};
    }
  }

  int depth_ = 0;
  int line_ = 0;
  bool content_ = false;
};

// A value in the file: its node, its path ("flags.migStrategy") and the
// line of its key (or of the list item).
struct Field {
  YAML::Node node;
  std::string path;
  int line;
};

int LineOfNode(const YAML::Node& node) {
  return std::max(1, node.Mark().line + 1);
}

// Quoted scalars carry the tag "!", plain ones "?".
bool IsPlain(const YAML::Node& node) { return node.Tag() == "?"; }

// What YAML makes of a plain scalar other than a string, for messages;
// empty if it is a string.
absl::string_view PlainScalarType(const YAML::Node& node) {
  if (!IsPlain(node)) return {};
  bool b = false;
  if (YAML::convert<bool>::decode(node, b)) return "a bool";
  double d = 0;
  if (YAML::convert<double>::decode(node, d)) return "a number";
  return {};
}

absl::string_view TypeOf(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar: {
      absl::string_view t = PlainScalarType(node);
      return t.empty() ? "a string" : t;
    }
    default:
      return "nothing";
  }
}

class Parser {
 public:
  explicit Parser(ConfigFile* out) : out_(out) {}

  const absl::Status& status() const { return status_; }

  bool Document(const YAML::Node& root);

 private:
  using Handler = std::function<bool(const Field&)>;
  using Handlers = std::vector<std::pair<absl::string_view, Handler>>;

  bool Fail(int line, absl::string_view path, absl::string_view message) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat(out_->path, ":", line, ": ",
                     path.empty() ? "the document" : path, ": ", message));
    return false;
  }
  bool WrongType(const Field& f, absl::string_view expected) {
    return Fail(
        f.line, f.path,
        absl::StrCat(
            "must be ", expected, ", got ", TypeOf(f.node),
            f.node.IsScalar() ? absl::StrCat(" '", f.node.Scalar(), "'") : ""));
  }
  void Record(const Field& f) { out_->lines.emplace(f.path, f.line); }

  // `f` must be a mapping whose keys each have a handler, each once; records
  // the line of, and calls the handler of, every key whose value is not
  // null.
  bool Mapping(const Field& f, const Handlers& handlers);
  // `f` must be a list; calls `item` for each element, as "<path>[i]".
  bool List(const Field& f, const std::function<bool(const Field&)>& item);

  bool String(const Field& f, std::optional<std::string>* out);
  bool Bool(const Field& f, std::optional<bool>* out);
  bool Int(const Field& f, int* out);
  bool Duration(const Field& f, std::optional<absl::Duration>* out);
  template <typename E>
  bool Enum(const Field& f, std::optional<E>* out);
  // A bool that must be false: the feature it enables is not ours.
  bool UnsupportedBool(const Field& f);
  bool XidList(const Field& f, std::optional<std::string>* out);

  bool Flags(const Field& f);
  bool PluginFlags(const Field& f);
  bool GfdFlags(const Field& f);
  bool DeviceListStrategies(const Field& f);
  bool Imex(const Field& f);
  bool Patterns(const Field& f,
                std::optional<std::vector<ResourcePattern>>* out);
  bool SharingSection(const Field& f);
  bool Replicated(const Field& f, SharingStrategy strategy);
  bool SharedResourceEntry(const Field& f, SharedResource* out);
  bool Devices(const Field& f, SharedDevices* out);

  ConfigFile* out_;
  absl::Status status_;
};

bool Parser::Mapping(const Field& f, const Handlers& handlers) {
  if (!f.node.IsMap()) return WrongType(f, "a mapping");
  std::set<std::string, std::less<>> seen;
  for (auto it = f.node.begin(); it != f.node.end(); ++it) {
    // Copies: the iterator's pair is a temporary.
    const YAML::Node key = it->first;
    const int line = LineOfNode(key);
    if (!key.IsScalar()) {
      return Fail(line, f.path, "has a key that is not a string");
    }
    const std::string& name = key.Scalar();
    const std::string path =
        f.path.empty() ? name : absl::StrCat(f.path, ".", name);
    auto handler = std::find_if(handlers.begin(), handlers.end(),
                                [&](const auto& h) { return h.first == name; });
    if (handler == handlers.end()) {
      std::vector<absl::string_view> known;
      for (const auto& h : handlers) known.push_back(h.first);
      return Fail(line, path,
                  absl::StrCat("unknown field; known here: ",
                               absl::StrJoin(known, ", ")));
    }
    if (!seen.insert(name).second) {
      return Fail(line, path, "is given more than once");
    }
    Field value{it->second, path, line};
    if (value.node.IsNull()) continue;
    Record(value);
    if (!handler->second(value)) return false;
  }
  return true;
}

bool Parser::List(const Field& f,
                  const std::function<bool(const Field&)>& item) {
  if (!f.node.IsSequence()) return WrongType(f, "a list");
  for (size_t i = 0; i < f.node.size(); ++i) {
    Field element{f.node[i], absl::StrCat(f.path, "[", i, "]"),
                  LineOfNode(f.node[i])};
    Record(element);
    if (!item(element)) return false;
  }
  return true;
}

bool Parser::String(const Field& f, std::optional<std::string>* out) {
  if (!f.node.IsScalar() || !PlainScalarType(f.node).empty()) {
    return WrongType(f, "a string");
  }
  *out = f.node.Scalar();
  return true;
}

bool Parser::Bool(const Field& f, std::optional<bool>* out) {
  bool value = false;
  if (!f.node.IsScalar() || !IsPlain(f.node) ||
      !YAML::convert<bool>::decode(f.node, value)) {
    return WrongType(f, "true or false");
  }
  *out = value;
  return true;
}

bool Parser::Int(const Field& f, int* out) {
  if (!f.node.IsScalar() || !IsPlain(f.node) ||
      !absl::SimpleAtoi(f.node.Scalar(), out)) {
    return WrongType(f, "an integer");
  }
  return true;
}

bool Parser::Duration(const Field& f, std::optional<absl::Duration>* out) {
  if (!f.node.IsScalar()) return WrongType(f, "a duration");
  const std::string& text = f.node.Scalar();
  int64_t nanoseconds = 0;
  absl::Duration d;
  if (IsPlain(f.node) && absl::SimpleAtoi(text, &nanoseconds)) {
    *out = absl::Nanoseconds(nanoseconds);  // as NVIDIA: a number is in ns
  } else if (text == "infinite") {
    *out = absl::InfiniteDuration();
  } else if (text != "inf" && text != "-inf" && absl::ParseDuration(text, &d)) {
    *out = d;
  } else {
    return Fail(f.line, f.path,
                absl::StrCat("must be a duration such as \"60s\" or \"1h30m\", "
                             "or \"infinite\", got '",
                             text, "'"));
  }
  return true;
}

template <typename E>
bool Parser::Enum(const Field& f, std::optional<E>* out) {
  std::optional<std::string> text;
  if (!String(f, &text)) return false;
  *out = ParseName<E>(*text);
  if (!out->has_value()) {
    return Fail(
        f.line, f.path,
        absl::StrCat("must be ", NameChoices<E>(), ", got '", *text, "'"));
  }
  return true;
}

bool Parser::UnsupportedBool(const Field& f) {
  std::optional<bool> value;
  if (!Bool(f, &value)) return false;
  if (*value) {
    return Fail(f.line, f.path,
                "is not supported by gpu-device-plugin; remove it or set it "
                "to false");
  }
  return true;
}

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
           [&](const Field& f) {
             return Mapping(
                 f, {
                        {"disableHealthchecks",
                         [&](const Field& x) {
                           return XidList(x, &out_->disable_healthchecks);
                         }},
                        {"enableHealthchecks",
                         [&](const Field& x) {
                           return XidList(x, &out_->enable_healthchecks);
                         }},
                    });
           }},
      });
}

// A health check list: a string, or one number (an XID) written bare.
bool Parser::XidList(const Field& f, std::optional<std::string>* out) {
  int xid = 0;
  if (f.node.IsScalar() && IsPlain(f.node) &&
      absl::SimpleAtoi(f.node.Scalar(), &xid)) {
    *out = f.node.Scalar();
    return true;
  }
  return String(f, out);
}

bool Parser::Flags(const Field& f) {
  ConfigFile& o = *out_;
  return Mapping(
      f,
      {
          {"migStrategy",
           [&](const Field& x) { return Enum(x, &o.mig_strategy); }},
          {"failOnInitError",
           [&](const Field& x) { return Bool(x, &o.fail_on_init_error); }},
          {"nvidiaDriverRoot",
           [&](const Field& x) { return String(x, &o.driver_root); }},
          {"nvidiaDevRoot",
           [&](const Field& x) { return String(x, &o.dev_root); }},
          {"mpsRoot", [&](const Field& x) { return String(x, &o.mps_root); }},
          {"gdrcopyEnabled",
           [&](const Field& x) { return UnsupportedBool(x); }},
          {"gdsEnabled", [&](const Field& x) { return UnsupportedBool(x); }},
          {"mofedEnabled", [&](const Field& x) { return UnsupportedBool(x); }},
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
               return Fail(x.line, x.path,
                           absl::StrCat("'", *s,
                                        "' is not supported by "
                                        "gpu-device-plugin; use auto or nvml"));
             }
             return Fail(x.line, x.path,
                         absl::StrCat("must be auto, nvml, tegra or vfio, "
                                      "got '",
                                      *s, "'"));
           }},
          {"plugin", [&](const Field& x) { return PluginFlags(x); }},
          {"gfd", [&](const Field& x) { return GfdFlags(x); }},
          {"deviceAPI", [&](const Field& x) { return Enum(x, &o.device_api); }},
      });
}

bool Parser::PluginFlags(const Field& f) {
  ConfigFile& o = *out_;
  return Mapping(
      f,
      {
          {"passDeviceSpecs",
           [&](const Field& x) { return Bool(x, &o.pass_device_specs); }},
          {"deviceListStrategy",
           [&](const Field& x) { return DeviceListStrategies(x); }},
          {"deviceIDStrategy",
           [&](const Field& x) { return Enum(x, &o.device_id_strategy); }},
          {"cdiAnnotationPrefix",
           [&](const Field& x) { return String(x, &o.cdi_annotation_prefix); }},
          {"containerDriverRoot",
           [&](const Field& x) { return String(x, &o.container_driver_root); }},
          {"sharedDevicesAllocationPolicy",
           [&](const Field& x) {
             return Enum(x, &o.shared_allocation_policy);
           }},
          {"nvidiaCTKPath",
           [&](const Field& x) {
             std::optional<std::string> unused;
             return String(x, &unused);
           }},
      });
}

bool Parser::GfdFlags(const Field& f) {
  ConfigFile& o = *out_;
  return Mapping(
      f,
      {
          {"oneshot", [&](const Field& x) { return Bool(x, &o.gfd_oneshot); }},
          {"noTimestamp",
           [&](const Field& x) { return Bool(x, &o.gfd_no_timestamp); }},
          {"sleepInterval",
           [&](const Field& x) { return Duration(x, &o.gfd_sleep_interval); }},
          {"outputFile",
           [&](const Field& x) { return String(x, &o.gfd_output_file); }},
          {"machineTypeFile",
           [&](const Field& x) { return String(x, &o.gfd_machine_type_file); }},
      });
}

// A single strategy or a list of them.
bool Parser::DeviceListStrategies(const Field& f) {
  std::vector<DeviceListStrategy> strategies;
  auto one = [&](const Field& x) {
    std::optional<DeviceListStrategy> s;
    if (!Enum(x, &s)) return false;
    strategies.push_back(*s);
    return true;
  };
  if (f.node.IsSequence() ? !List(f, one) : !one(f)) return false;
  out_->device_list_strategies = std::move(strategies);
  return true;
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
  // The events first, for the bounds and for a second document: yaml-cpp
  // 0.7's LoadAll never ends on text after a flow document (a trailing
  // comma) and allocates without end, so at most two documents are asked
  // for.
  YAML::Node document;
  try {
    std::istringstream stream{std::string(text)};
    YAML::Parser events(stream);
    Bounds first;
    if (!events.HandleNextDocument(first)) return file;  // empty
    Bounds second;
    if (events.HandleNextDocument(second)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", second.document_line(),
          ": holds more than one YAML document (or text after the config, "
          "such as a trailing comma); give one config"));
    }
    document = YAML::Load(std::string(text));
  } catch (const OutOfBounds& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", e.line, ": too large: ", e.what));
  } catch (const YAML::ParserException& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", e.mark.line + 1, ": invalid YAML: ", e.msg));
  }
  Parser parser(&file);
  if (!parser.Document(document)) return parser.status();
  return file;
}

absl::StatusOr<ConfigFile> ReadConfigFile(const std::string& path) {
  auto error = [&path](int err) {
    return absl::ErrnoToStatus(err,
                               absl::StrCat("cannot read config file ", path));
  };
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error(errno);
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return error(err);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxConfigBytes) break;  // refused by the parse
  }
  close(fd);
  return ParseConfigFile(text, path);
}

}  // namespace gdp
