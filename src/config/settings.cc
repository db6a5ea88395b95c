#include "config/settings.h"

#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "config/feature_gates.h"
#include "config/names.h"
#include "config/yaml_fields.h"

namespace gdp {
namespace {

// Where a setting lives in Config: a member, or a member of a member
// (Config::gfd's, Config::dra's).
template <typename T>
class Place {
 public:
  Place(T Config::*member)  // NOLINT: rows name members directly
      : get_([member](const Config& c) -> const T& { return c.*member; }),
        set_([member](Config& c) -> T& { return c.*member; }) {}
  template <typename S>
  Place(S Config::*outer, T S::*inner)
      : get_([=](const Config& c) -> const T& { return (c.*outer).*inner; }),
        set_([=](Config& c) -> T& { return (c.*outer).*inner; }) {}

  const T& Of(const Config& c) const { return get_(c); }
  T& Of(Config* c) const { return set_(*c); }

 private:
  std::function<const T&(const Config&)> get_;
  std::function<T&(Config&)> set_;
};

absl::Status Bad(absl::string_view rule, absl::string_view text) {
  return absl::InvalidArgumentError(
      absl::StrCat("must be ", rule, ", got '", text, "'"));
}

// What every value of type T does alike.
template <typename T>
class Typed : public SettingValue {
 public:
  explicit Typed(Place<T> place) : place_(std::move(place)) {}

  absl::Status Check(const Config&) const override { return absl::OkStatus(); }
  void Copy(const Config& from, Config* to) const override {
    place_.Of(to) = place_.Of(from);
  }
  bool Equal(const Config& a, const Config& b) const override {
    return place_.Of(a) == place_.Of(b);
  }

 protected:
  const Place<T> place_;
};

// Text, maybe an absolute path.
class TextValue : public Typed<std::string> {
 public:
  enum class Rule { kAny, kPath, kPathOrEmpty };
  TextValue(Place<std::string> place, Rule rule)
      : Typed(std::move(place)), rule_(rule) {}

  Kind kind() const override { return Kind::kText; }
  std::string Get(const Config& c) const override { return place_.Of(c); }
  absl::Status Set(absl::string_view text, Config* c) const override {
    place_.Of(c) = std::string(text);
    return absl::OkStatus();
  }
  bool Read(YamlFieldReader& r, const YamlField& f, Config* c) const override {
    std::optional<std::string> text;
    if (!r.String(f, &text)) return false;
    place_.Of(c) = *std::move(text);
    return true;
  }
  absl::Status Check(const Config& c) const override {
    const std::string& v = place_.Of(c);
    if (rule_ == Rule::kAny || (rule_ == Rule::kPathOrEmpty && v.empty())) {
      return absl::OkStatus();
    }
    if (v.empty() || v[0] != '/') return Bad("an absolute path", v);
    return absl::OkStatus();
  }

 private:
  const Rule rule_;
};

// Health checks: text; in the file also one XID written as a bare number.
class XidListValue : public TextValue {
 public:
  explicit XidListValue(Place<std::string> place)
      : TextValue(std::move(place), Rule::kAny) {}

  bool Read(YamlFieldReader& r, const YamlField& f, Config* c) const override {
    int xid = 0;
    if (f.node.IsScalar() && IsPlain(f.node) &&
        absl::SimpleAtoi(f.node.Scalar(), &xid)) {
      place_.Of(c) = f.node.Scalar();
      return true;
    }
    return TextValue::Read(r, f, c);
  }
};

class BoolValue : public Typed<bool> {
 public:
  using Typed::Typed;

  Kind kind() const override { return Kind::kBool; }
  std::string Get(const Config& c) const override {
    return place_.Of(c) ? "true" : "false";
  }
  absl::Status Set(absl::string_view text, Config* c) const override {
    place_.Of(c) = text == "true";
    return absl::OkStatus();
  }
  bool Read(YamlFieldReader& r, const YamlField& f, Config* c) const override {
    std::optional<bool> value;
    if (!r.Bool(f, &value)) return false;
    place_.Of(c) = *value;
    return true;
  }
};

class IntValue : public Typed<int> {
 public:
  using Typed::Typed;

  Kind kind() const override { return Kind::kInt; }
  std::string Get(const Config& c) const override {
    return absl::StrCat(place_.Of(c));
  }
  absl::Status Set(absl::string_view text, Config* c) const override {
    if (!absl::SimpleAtoi(text, &place_.Of(c))) return Bad("a number", text);
    return absl::OkStatus();
  }
  bool Read(YamlFieldReader& r, const YamlField& f, Config* c) const override {
    return r.Int(f, &place_.Of(c));
  }
};

// A duration given as a positive whole number of seconds.
class SecondsValue : public Typed<absl::Duration> {
 public:
  using Typed::Typed;

  Kind kind() const override { return Kind::kInt; }
  bool Positive() const override { return true; }
  std::string Get(const Config& c) const override {
    return absl::StrCat(absl::ToInt64Seconds(place_.Of(c)));
  }
  absl::Status Set(absl::string_view text, Config* c) const override {
    int seconds = 0;
    if (!absl::SimpleAtoi(text, &seconds)) return Bad("a number", text);
    place_.Of(c) = absl::Seconds(seconds);
    return absl::OkStatus();
  }
  bool Read(YamlFieldReader& r, const YamlField& f, Config* c) const override {
    int seconds = 0;
    if (!r.Int(f, &seconds)) return false;
    place_.Of(c) = absl::Seconds(seconds);
    return true;
  }
};

// What a duration flag accepts besides a positive duration.
struct DurationRule {
  bool zero = false;           // 0 (none, never)
  bool infinite = true;        // "inf"
  bool infinite_word = false;  // GFD's "infinite" for "inf"
  absl::string_view what;      // for messages: "a duration such as 10s"
};

// A duration such as "30s" or "1h30m"; in the file also a bare number of
// nanoseconds, as NVIDIA's.
class DurationValue : public Typed<absl::Duration> {
 public:
  DurationValue(Place<absl::Duration> place, DurationRule rule)
      : Typed(std::move(place)), rule_(rule) {}

  Kind kind() const override { return Kind::kText; }
  std::string Get(const Config& c) const override {
    return absl::FormatDuration(place_.Of(c));
  }
  absl::Status Set(absl::string_view text, Config* c) const override {
    const std::string spelled =
        rule_.infinite_word && text == "infinite" ? "inf" : std::string(text);
    absl::Duration d;
    if (!absl::ParseDuration(spelled, &d) || d < absl::ZeroDuration() ||
        (!rule_.zero && d == absl::ZeroDuration()) ||
        (!rule_.infinite && d == absl::InfiniteDuration())) {
      return Bad(rule_.what, spelled);
    }
    place_.Of(c) = d;
    return absl::OkStatus();
  }
  bool Read(YamlFieldReader& r, const YamlField& f, Config* c) const override {
    std::optional<absl::Duration> d;
    if (!r.Duration(f, &d)) return false;
    place_.Of(c) = *d;
    return true;
  }

 private:
  const DurationRule rule_;
};

// One of the names config/names.h has for E.
template <typename E>
class EnumValue : public Typed<E> {
 public:
  using Typed<E>::Typed;
  using Kind = SettingValue::Kind;

  Kind kind() const override { return Kind::kText; }
  std::vector<std::string> Choices() const override { return AllNames<E>(); }
  std::string Get(const Config& c) const override {
    return std::string(NameOf(this->place_.Of(c)));
  }
  absl::Status Set(absl::string_view text, Config* c) const override {
    std::optional<E> value = ParseName<E>(text);
    if (!value.has_value()) return Bad(NameChoices<E>(), text);
    this->place_.Of(c) = *value;
    return absl::OkStatus();
  }
  bool Read(YamlFieldReader& r, const YamlField& f, Config* c) const override {
    std::optional<E> value;
    if (!r.Enum(f, &value)) return false;
    this->place_.Of(c) = *value;
    return true;
  }
};

// Names of E, comma-separated or repeated on the command line; in the file
// one name or a list of them.
template <typename E>
class EnumListValue : public Typed<std::vector<E>> {
 public:
  using Typed<std::vector<E>>::Typed;
  using Kind = SettingValue::Kind;

  Kind kind() const override { return Kind::kList; }
  std::vector<std::string> Choices() const override { return AllNames<E>(); }
  std::string Get(const Config& c) const override {
    return absl::StrJoin(this->place_.Of(c), ",", [](std::string* out, E e) {
      absl::StrAppend(out, NameOf(e));
    });
  }
  absl::Status Set(absl::string_view text, Config* c) const override {
    std::vector<E> values;
    for (absl::string_view name :
         absl::StrSplit(text, ',', absl::SkipEmpty())) {
      std::optional<E> value = ParseName<E>(name);
      if (!value.has_value()) return Bad(NameChoices<E>(), name);
      values.push_back(*value);
    }
    this->place_.Of(c) = std::move(values);
    return absl::OkStatus();
  }
  bool Read(YamlFieldReader& r, const YamlField& f, Config* c) const override {
    std::vector<E> values;
    auto one = [&](const YamlField& x) {
      std::optional<E> value;
      if (!r.Enum(x, &value)) return false;
      values.push_back(*value);
      return true;
    };
    if (f.node.IsSequence() ? !r.List(f, one) : !one(f)) return false;
    this->place_.Of(c) = std::move(values);
    return true;
  }
};

// Text parsed into a T by `parse` and spelled back by `format`
// (--feature-gates, --consumable-shares).
template <typename T>
class ParsedValue : public Typed<T> {
 public:
  using Parse = absl::Status (*)(absl::string_view, T*);
  using Format = std::string (*)(const T&);
  using Kind = SettingValue::Kind;
  ParsedValue(Place<T> place, Parse parse, Format format)
      : Typed<T>(std::move(place)), parse_(parse), format_(format) {}

  Kind kind() const override { return Kind::kText; }
  std::string Get(const Config& c) const override {
    return format_(this->place_.Of(c));
  }
  absl::Status Set(absl::string_view text, Config* c) const override {
    return parse_(text, &this->place_.Of(c));
  }
  bool Read(YamlFieldReader& r, const YamlField& f, Config* c) const override {
    std::optional<std::string> text;
    if (!r.String(f, &text)) return false;
    if (absl::Status s = parse_(*text, &this->place_.Of(c)); !s.ok()) {
      return r.Fail(f.line, f.path, s.message());
    }
    return true;
  }

 private:
  const Parse parse_;
  const Format format_;
};

// The helpers the rows are written with.
using Value = std::shared_ptr<const SettingValue>;

Value Text(Place<std::string> p) {
  return std::make_shared<TextValue>(std::move(p), TextValue::Rule::kAny);
}
Value Path(Place<std::string> p) {
  return std::make_shared<TextValue>(std::move(p), TextValue::Rule::kPath);
}
Value PathOrEmpty(Place<std::string> p) {
  return std::make_shared<TextValue>(std::move(p),
                                     TextValue::Rule::kPathOrEmpty);
}
Value XidList(Place<std::string> p) {
  return std::make_shared<XidListValue>(std::move(p));
}
Value Bool(Place<bool> p) { return std::make_shared<BoolValue>(std::move(p)); }
Value Int(Place<int> p) { return std::make_shared<IntValue>(std::move(p)); }
Value Seconds(Place<absl::Duration> p) {
  return std::make_shared<SecondsValue>(std::move(p));
}
Value Duration(Place<absl::Duration> p, DurationRule rule) {
  return std::make_shared<DurationValue>(std::move(p), rule);
}
template <typename T>
Value Parsed(Place<T> p, typename ParsedValue<T>::Parse parse,
             typename ParsedValue<T>::Format format) {
  return std::make_shared<ParsedValue<T>>(std::move(p), parse, format);
}
template <typename E>
Value Enum(Place<E> p) {
  return std::make_shared<EnumValue<E>>(std::move(p));
}
template <typename E>
Value EnumList(Place<std::vector<E>> p) {
  return std::make_shared<EnumListValue<E>>(std::move(p));
}

constexpr DurationRule kPositive = {
    .what = "a positive duration such as 30s or 2m"};

// What CheckReloadable calls the DRA side, whose settings change together.
constexpr absl::string_view kDraSettings =
    "DRA settings (dra.devices and the DRA flags)";

std::vector<Setting> MakeSettings() {
  return {
      {.flags = "--config-file",
       .env = "CONFIG_FILE",
       .value = Text(&Config::config_file),
       .help = "NVIDIA's config file (version v1, YAML or JSON); flags and "
               "their variables beat it, it beats the defaults",
       .doc = "NVIDIA's `version: v1` config (YAML or JSON); reloaded on "
              "SIGHUP and when it changes"},
      {.flags = "--kubelet-socket",
       .env = "KUBELET_SOCKET",
       .value = Text(&Config::kubelet_socket),
       .restart = "kubelet socket",
       .help = "the kubelet's registration socket; our socket goes beside it",
       .doc = "the kubelet's registration socket; ours (`nvidia-gpu.sock`) "
              "goes beside it"},
      {.flags = "--mig-strategy",
       .env = "MIG_STRATEGY",
       .file = "flags.migStrategy",
       .value = Enum<MigStrategy>(&Config::mig_strategy),
       .help = "how MIG devices are advertised: none, single (as "
               "nvidia.com/gpu) or mixed (nvidia.com/mig-<profile>)",
       .doc = "`none`, `single` (MIG devices as `nvidia.com/gpu`) or "
              "`mixed` (`nvidia.com/mig-<profile>`)"},
      {.flags = "--fail-on-init-error",
       .env = "FAIL_ON_INIT_ERROR",
       .file = "flags.failOnInitError",
       .value = Bool(&Config::fail_on_init_error),
       .help = "exit if NVML cannot be loaded or initialised; with =false, "
               "stay up and retry every 30 s",
       .doc = "exit 1 if NVML cannot be loaded or initialised, or finds no "
              "GPU; with `=false`, stay up, register nothing, retry every "
              "30 s"},
      {.flags = "--driver-root,--nvidia-driver-root",
       .env = "NVIDIA_DRIVER_ROOT",
       .file = "flags.nvidiaDriverRoot",
       .value = Path(&Config::driver_root),
       .restart = "driver root",
       .help = "root where the NVIDIA driver (libnvidia-ml.so.1) is installed",
       .doc = "where the driver is installed; `/` uses the dynamic linker's "
              "path for `libnvidia-ml.so.1`, another root is searched under "
              "`usr/lib64`, `usr/lib/x86_64-linux-gnu`, `lib64`, ..."},
      {.flags = "--dev-root,--nvidia-dev-root",
       .env = "NVIDIA_DEV_ROOT",
       .file = "flags.nvidiaDevRoot",
       .value = PathOrEmpty(&Config::dev_root),
       .help = "root of the /dev/nvidia* nodes on the host [default: the "
               "driver root]",
       .doc = "host root of `/dev/nvidia*` (device specs' host paths); none: "
              "the driver root"},
      {.flags = "--sysfs-root",
       .env = "SYSFS_ROOT",
       .value = Path(&Config::sysfs_root),
       .help = "where sysfs is mounted (NUMA nodes of GPUs are read there)",
       .doc = "where GPUs' NUMA nodes are read "
              "(`bus/pci/devices/<bdf>/numa_node`)"},
      {.flags = "--proc-root",
       .env = "PROC_ROOT",
       .value = Path(&Config::proc_root),
       .help = "where /proc is mounted (MIG capability minors are read from "
               "driver/nvidia-caps/mig-minors there)",
       .doc = "where MIG capability minors are read "
              "(`driver/nvidia-caps/mig-minors`)"},
      {.flags = "--pass-device-specs",
       .env = "PASS_DEVICE_SPECS",
       .file = "flags.plugin.passDeviceSpecs",
       .value = Bool(&Config::pass_device_specs),
       .help = "pass /dev/nvidia* device specs in Allocate answers (needed "
               "with the CPU manager's static policy)",
       .doc = "add `DeviceSpec`s for `/dev/nvidiactl`, `/dev/nvidia-uvm`, "
              "`/dev/nvidia-uvm-tools`, `/dev/nvidia-modeset` (those "
              "present) and `/dev/nvidiaN`"},
      {.flags = "--device-list-strategy",
       .env = "DEVICE_LIST_STRATEGY",
       .file = "flags.plugin.deviceListStrategy",
       .value = EnumList<DeviceListStrategy>(&Config::device_list_strategies),
       .help = "how Allocate names the devices to the runtime: envvar, "
               "volume-mounts, cdi-annotations, cdi-cri; several "
               "comma-separated or repeated",
       .doc = "`envvar`, `volume-mounts`, `cdi-annotations`, `cdi-cri`; "
              "several comma-separated"},
      {.flags = "--device-id-strategy",
       .env = "DEVICE_ID_STRATEGY",
       .file = "flags.plugin.deviceIDStrategy",
       .value = Enum<DeviceIdStrategy>(&Config::device_id_strategy),
       .help = "how devices are named to the kubelet: uuid or index",
       .doc = "device IDs: GPU/MIG UUIDs or NVML indexes (`3`, MIG `0:1`)"},
      {.flags = "--cdi-annotation-prefix",
       .env = "CDI_ANNOTATION_PREFIX",
       .file = "flags.plugin.cdiAnnotationPrefix",
       .value = Text(&Config::cdi_annotation_prefix),
       .help = "prefix of the CDI annotation keys (cdi-annotations)",
       .doc = "prefix of CDI annotation keys"},
      {.flags = "--driver-root-ctr-path,--container-driver-root",
       .env = "DRIVER_ROOT_CTR_PATH,CONTAINER_DRIVER_ROOT",
       .file = "flags.plugin.containerDriverRoot",
       .value = Path(&Config::container_driver_root),
       .help = "where the driver root is mounted in this container; driver "
               "files for the CDI spec are looked up there",
       .doc = "where the host's driver root is mounted in the plugin's "
              "container (CDI spec lookups; used when it exists)"},
      {.flags = "--mps-root",
       .env = "MPS_ROOT",
       .file = "flags.mpsRoot",
       .value = PathOrEmpty(&Config::mps_root),
       .help = "host directory of the MPS control daemon's pipes and shared "
               "memory (needed for sharing.mps)",
       .doc = "host directory of the MPS daemon's pipes and shm "
              "(`sharing.mps`)"},
      {.flags = "--shared-devices-allocation-policy",
       .env = "SHARED_DEVICES_ALLOCATION_POLICY",
       .file = "flags.plugin.sharedDevicesAllocationPolicy",
       .value = Enum<SharedAllocationPolicy>(&Config::shared_allocation_policy),
       .help = "how replicas are preferred: distributed (one per GPU, "
               "spread) or packed (fill a GPU first)",
       .doc = "preferred replicas: one per GPU (`distributed`) or fewest GPUs "
              "(`packed`)"},
      {.flags = "--disable-healthchecks",
       .env = "DP_DISABLE_HEALTHCHECKS",
       .file = "health.disableHealthchecks",
       .value = XidList(&Config::disable_healthchecks),
       .help = "health checks to turn off: all, xids, or XIDs to ignore "
               "besides the default ones (comma-separated)",
       .doc = "`all`, `xids`, or XIDs to ignore besides the default "
              "application XIDs (13, 31, 43, 45, 68, 109)"},
      {.flags = "--enable-healthchecks",
       .env = "DP_ENABLE_HEALTHCHECKS",
       .file = "health.enableHealthchecks",
       .value = XidList(&Config::enable_healthchecks),
       .help = "XIDs to check even if ignored by default or by "
               "--disable-healthchecks (comma-separated)",
       .doc = "XIDs to check even if ignored"},
      {.flags = "--health-quiet-period",
       .value = Duration(&Config::health_quiet_period, kPositive),
       .help = "how long a GPU with a recoverable XID stays unhealthy before "
               "it is probed (e.g. 60s, 2m)",
       .doc = "how long a GPU with a recoverable XID stays unhealthy before "
              "it is probed (doubling while it flaps, up to 1 h)"},
      {.flags = "--health-probe-interval",
       .value = Duration(&Config::health_probe_interval, kPositive),
       .help = "how often GPUs are probed for falling off the bus or coming "
               "back (e.g. 5s)"},
      {.flags = "--nvlink-down-unhealthy",
       .env = "NVLINK_DOWN_UNHEALTHY",
       .value = Bool(&Config::nvlink_down_unhealthy),
       .help = "also make a GPU unhealthy (until it is reset) when one of its "
               "NVLinks goes from active to inactive; either way it is "
               "counted and the topology is read again",
       .doc = "also make a GPU unhealthy (until it is reset) when one of its "
              "NVLinks goes from active to inactive; either way it is "
              "counted and the topology read again "
              "([health.md](health.md#an-nvlink-going-down))"},
      {.flags = "--nvml-timeout",
       .env = "NVML_TIMEOUT",
       .value = Duration(
           &Config::nvml_timeout,
           {.zero = true, .what = "a duration such as 10s, or 0 for none"}),
       .help = "how long an NVML call may take before its GPU (or, for a "
               "call about no GPU, every GPU, and then /healthz fails) counts "
               "as unhealthy; 0 waits forever (e.g. 10s)",
       .doc = "deadline of each NVML call after start-up: past it the GPU "
              "(every GPU, for a call about none) is unhealthy with the call "
              "named; `/healthz` fails only for a hung call about no GPU; "
              "`0` waits forever ([health.md](health.md#hung-nvml-calls))"},
      {.flags = "--rediscover-interval",
       .env = "REDISCOVER_INTERVAL",
       .value = Duration(&Config::rediscover_interval,
                         {.zero = true,
                          .infinite = false,
                          .what = "a duration such as 60s, or 0 for never"}),
       .help = "how often the GPUs are discovered again to follow MIG "
               "changes and GPUs coming or going without a reload; 0 turns "
               "it off (e.g. 60s)",
       .doc = "how often the GPUs are discovered again to follow MIG "
              "reconfiguration and GPUs appearing or disappearing without a "
              "reload (only what changed is restarted); `0` turns it off "
              "([daemon.md](daemon.md#following-the-node))"},
      {.flags = "--cdi-spec-dir",
       .env = "CDI_SPEC_DIR",
       .value = Path(&Config::cdi_spec_dir),
       .help = "where the CDI spec is written (cdi-* strategies)"},
      {.flags = "-v,--verbosity",
       .env = "LOG_VERBOSITY",
       .value = Int(&Config::verbosity),
       .help = "log verbosity (klog -v level: 1 logs every RPC, 2 every "
               "ListAndWatch send); -v=N and --v=N work too",
       .doc = "klog-style verbosity: 1 logs each RPC, 2 each ListAndWatch "
              "send; `-v=N` and `--v=N` work too"},
      {.flags = "--labels",
       .env = "GDP_LABELS",
       .value = Bool(&Config::labels),
       .help = "also write the node labels (GPU feature discovery) while "
               "serving; the labels subcommand writes only them",
       .doc = "also write the node labels NVIDIA's gpu-feature-discovery "
              "writes ([labels.md](labels.md))"},
      {.flags = "--oneshot",
       .env = "GFD_ONESHOT",
       .file = "flags.gfd.oneshot",
       .value = Bool({&Config::gfd, &GfdConfig::oneshot}),
       .help = "label once and exit",
       .doc = "`labels`: label once and exit"},
      {.flags = "--no-timestamp",
       .env = "GFD_NO_TIMESTAMP",
       .file = "flags.gfd.noTimestamp",
       .value = Bool({&Config::gfd, &GfdConfig::no_timestamp}),
       .help = "leave out the nvidia.com/gfd.timestamp label",
       .doc = "leave out `nvidia.com/gfd.timestamp`"},
      {.flags = "--sleep-interval",
       .env = "GFD_SLEEP_INTERVAL",
       .file = "flags.gfd.sleepInterval",
       .value = Duration({&Config::gfd, &GfdConfig::sleep_interval},
                         {.infinite_word = true, .what = kPositive.what}),
       .help = "time between labellings (e.g. 60s; infinite: label once, "
               "then wait)",
       .doc = "time between labellings (`labels` alone, or `--labels` with "
              "`--rediscover-interval=0`; beside the daemon the labels "
              "follow each rediscovery instead); `infinite`: label once, "
              "then wait"},
      {.flags = "--output-file,--output,-o",
       .env = "GFD_OUTPUT_FILE",
       .file = "flags.gfd.outputFile",
       .value = Path({&Config::gfd, &GfdConfig::output_file}),
       .help = "the Node Feature Discovery local feature file the labels "
               "are written to",
       .doc = "the Node Feature Discovery feature file the labels go to "
              "(written atomically)"},
      {.flags = "--machine-type-file",
       .env = "GFD_MACHINE_TYPE_FILE",
       .file = "flags.gfd.machineTypeFile",
       .value = Path({&Config::gfd, &GfdConfig::machine_type_file}),
       .help = "the DMI product name file (nvidia.com/gpu.machine)",
       .doc = "DMI product name, for `nvidia.com/gpu.machine`"},
      {.flags = "--use-node-feature-api",
       .env = "GFD_USE_NODE_FEATURE_API,USE_NODE_FEATURE_API",
       .file = "flags.useNodeFeatureAPI",
       .value = Bool({&Config::gfd, &GfdConfig::use_node_feature_api}),
       .restart = "label output (--use-node-feature-api)",
       .help = "write the labels as this node's NFD NodeFeature object "
               "(nfd.k8s-sigs.io/v1alpha1; needs --node-name and the API "
               "server) instead of the feature file",
       .doc = "write the labels as the node's NFD `NodeFeature` object "
              "instead of the feature file; needs `--node-name` "
              "([labels.md](labels.md#nodefeature-objects))"},
      {.flags = "--metrics-address",
       .env = "METRICS_ADDRESS",
       .value = Text(&Config::metrics_address),
       .help = "serve /metrics (Prometheus), /healthz and /readyz over HTTP "
               "on host:port or :port; empty: off",
       .doc = "serve `/metrics` (Prometheus), `/healthz` and `/readyz` on "
              "`host:port` or `:port`; none: off ([metrics.md](metrics.md))"},
      {.flags = "--device-api",
       .env = "DEVICE_API",
       .file = "flags.deviceAPI",
       .value = Enum<DeviceApi>(&Config::device_api),
       .restart = "device API (--device-api, flags.deviceAPI)",
       .help = "which kubelet API serves the GPUs: device-plugin, dra, or "
               "both (dra.devices in the config file go to DRA, the others "
               "to the device plugin)",
       .doc = "`device-plugin`, `dra` (serve the GPUs as the DRA driver "
              "`gpu.nvidia.com`) or `both` (`dra.devices` in the config file "
              "go to DRA); [dra.md](dra.md)"},
      {.flags = "--dra-driver-name",
       .env = "DRA_DRIVER_NAME",
       .value = Text({&Config::dra, &DraConfig::driver_name}),
       .restart = kDraSettings,
       .help = "the DRA driver name (ResourceSlices, DeviceClasses)"},
      {.flags = "--kubelet-registration-dir,"
                "--kubelet-registrar-directory-path",
       .env = "KUBELET_REGISTRATION_DIR,KUBELET_REGISTRAR_DIRECTORY_PATH",
       .value = Text({&Config::dra, &DraConfig::registration_dir}),
       .restart = kDraSettings,
       .help = "the kubelet's plugin registration directory; our "
               "registration socket is <dir>/<driver>-reg.sock",
       .doc = "where the DRA registration socket goes "
              "(`<driver>-reg.sock`)"},
      {.flags = "--kubelet-plugins-dir,--kubelet-plugins-directory-path",
       .env = "KUBELET_PLUGINS_DIR,KUBELET_PLUGINS_DIRECTORY_PATH",
       .value = Text({&Config::dra, &DraConfig::plugins_dir}),
       .restart = kDraSettings,
       .help = "the kubelet's plugins directory; our DRA socket is "
               "<dir>/<driver>/dra.sock",
       .doc = "where the DRA endpoint (`<driver>/dra.sock`) and its "
              "checkpoint go"},
      {.flags = "--node-name",
       .env = "NODE_NAME",
       .value = Text({&Config::dra, &DraConfig::node_name}),
       .restart = kDraSettings,
       .help = "this node's name: the pool of our ResourceSlices (DRA)",
       .doc = "this node: the pool of the ResourceSlices (required for DRA)"},
      {.flags = "--kubeconfig",
       .env = "KUBECONFIG",
       .value = Text({&Config::dra, &DraConfig::kubeconfig}),
       .restart = kDraSettings,
       .help = "kubeconfig file for the API server (DRA); default: the pod's "
               "service account (in-cluster)",
       .doc = "how the DRA side reaches the API server; none: in-cluster, "
              "with the pod's service account"},
      {.flags = "--feature-gates",
       .env = "FEATURE_GATES",
       .value = Parsed<FeatureGates>(&Config::feature_gates, ParseFeatureGates,
                                     FormatFeatureGates),
       .restart = kDraSettings,
       .help = "NVIDIA's DRA driver feature gates, Name=true,Name2=false: "
               "ConsumableShares, DynamicMIG; NVIDIA's other gates are "
               "accepted at their defaults",
       .doc = "NVIDIA's DRA driver gates, `Name=true,Name2=false`: "
              "`ConsumableShares`; NVIDIA's other gates at their defaults "
              "([dra.md](dra.md#feature-gates)); none: NVIDIA's defaults"},
      {.flags = "--consumable-shares",
       .env = "CONSUMABLE_SHARES",
       .value = Parsed<ConsumableShares>(&Config::consumable_shares,
                                         ParseConsumableShares,
                                         FormatConsumableShares),
       .restart = kDraSettings,
       .help = "with --feature-gates=ConsumableShares=true, publish GPUs for "
               "several claims at once: memory (a claim takes all memory "
               "unless it asks less), unlimited (none unless it asks), or a "
               "number of shares N (as unlimited, plus N shares)",
       .doc = "with the `ConsumableShares` gate: `disabled`, `memory`, "
              "`unlimited` or a number of shares (2 to 1024), as NVIDIA's "
              "([dra.md](dra.md#consumable-shares))"},
      {.flags = "--unenforced-shares",
       .env = "UNENFORCED_SHARES",
       .value = Enum<UnenforcedShares>(&Config::unenforced_shares),
       .restart = kDraSettings,
       .help = "with consumable shares, a GPU whose memory limits this node "
               "cannot enforce (driver before R615, MIG, no cgroup v2): "
               "refuse (publish it whole, say why) or allow (shares "
               "unenforced, as NVIDIA's driver)",
       .doc = "with consumable shares, a GPU whose memory limits cannot be "
              "enforced (driver before R615, MIG, no cgroup v2) is published "
              "whole (`refuse`; the log and `/readyz` say why) or shared "
              "unenforced (`allow`, as NVIDIA's driver)"},
      {.flags = "--memory-limit-hook",
       .env = "MEMORY_LIMIT_HOOK",
       .value = Enum<MemoryLimitHookKind>(&Config::memory_limit_hook),
       .restart = "memory limit hook (--memory-limit-hook, "
                  "--memory-limit-hook-path)",
       .help = "the CDI hook that applies a share's memory limit to its "
               "container: gdp (ours) or nvidia (the container toolkit's "
               "nvidia-cdi-hook apply-cuda-memory-limits)",
       .doc = "the CDI hook that applies a share's memory limit to the "
              "container's cgroup: `gdp` (ours) or `nvidia` (the container "
              "toolkit's `nvidia-cdi-hook apply-cuda-memory-limits`)"},
      {.flags = "--memory-limit-hook-path",
       .env = "MEMORY_LIMIT_HOOK_PATH",
       .value = Path(&Config::memory_limit_hook_path),
       .restart = "memory limit hook (--memory-limit-hook, "
                  "--memory-limit-hook-path)",
       .help = "host path of the memory-limit hook's executable (with "
               "--memory-limit-hook=nvidia: the toolkit's nvidia-cdi-hook, "
               "required)",
       .doc = "host path of the hook's executable; the DaemonSet installs "
              "ours there; with `--memory-limit-hook=nvidia` the toolkit's "
              "`nvidia-cdi-hook`, required"},
      {.flags = "--nvidia-cdi-hook-path,--nvidia-ctk-path",
       .env = "NVIDIA_CDI_HOOK_PATH,NVIDIA_CTK_PATH",
       .file = "flags.plugin.nvidiaCTKPath",
       .value = PathOrEmpty(&Config::nvidia_cdi_hook_path),
       .restart = "NVIDIA CDI hook path",
       .help = "host path of the container toolkit's nvidia-cdi-hook (or "
               "nvidia-ctk, run as 'nvidia-ctk hook'); set, the CDI specs "
               "carry NVIDIA's hooks (library links, ldconfig, CUDA compat, "
               "device node handling) [default: none]",
       .doc = "host path of the container toolkit's `nvidia-cdi-hook`, or of "
              "`nvidia-ctk` (run as `nvidia-ctk hook`); set, our CDI specs "
              "carry NVIDIA's hooks ([deploy.md](deploy.md#nvidias-cdi-hooks))"
              "; none: no hooks (NVIDIA's plugin defaults to "
              "`/usr/bin/nvidia-ctk`)"},
      {.flags = "--nvml-retry-interval",
       .value = Seconds(&Config::nvml_retry_interval),
       .help = "seconds between NVML retries with --fail-on-init-error=false",
       .doc = "seconds between NVML attempts with "
              "`--fail-on-init-error=false`"},
  };
}

// "`a`, `b`" for the names in `list` (comma-separated).
std::string Quoted(absl::string_view list) {
  return absl::StrJoin(absl::StrSplit(list, ',', absl::SkipEmpty()), ", ",
                       [](std::string* out, absl::string_view name) {
                         absl::StrAppend(out, "`", name, "`");
                       });
}

}  // namespace

absl::string_view Setting::name() const {
  return flags.substr(0, flags.find(','));
}

std::vector<absl::string_view> Setting::env_names() const {
  return absl::StrSplit(env, ',', absl::SkipEmpty());
}

const std::vector<Setting>& Settings() {
  static const std::vector<Setting>* const settings =
      new std::vector<Setting>(MakeSettings());
  return *settings;
}

const Setting* SettingAtPath(absl::string_view path) {
  for (const Setting& s : Settings()) {
    if (!s.file.empty() && s.file == path) return &s;
  }
  return nullptr;
}

absl::Status CheckReloadable(const Config& running, const Config& next) {
  auto refuse = [](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", what, " cannot change on reload; restart the plugin"));
  };
  for (const Setting& s : Settings()) {
    if (!s.restart.empty() && !s.value->Equal(running, next)) {
      return refuse(s.restart);
    }
  }
  // The DRA settings no row has: dra.devices (the file's) and the API
  // server main found.
  if (running.dra != next.dra) return refuse(kDraSettings);
  return absl::OkStatus();
}

std::string SettingsTable() {
  const Config defaults;
  std::string out =
      "| flag | environment | config file | default | meaning |\n"
      "|---|---|---|---|---|\n";
  for (const Setting& s : Settings()) {
    std::string file = Quoted(s.file);
    if (!file.empty() && !s.restart.empty()) {
      absl::StrAppend(&file, ", not on reload");
    }
    const std::string value = s.value->Get(defaults);
    absl::StrAppend(&out, "| ", Quoted(s.flags), " | ", Quoted(s.env), " | ",
                    file, " | ",
                    value.empty() ? "none" : absl::StrCat("`", value, "`"),
                    " | ", s.doc.empty() ? s.help : s.doc, " |\n");
  }
  return out;
}

}  // namespace gdp
