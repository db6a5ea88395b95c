// The daemon's settings as a plain struct. Filled from flags, environment
// (cmd/flags.cc) and NVIDIA's config file by LoadConfig (config/load.h), as
// the table of settings (config/settings.h) says, and validated before use:
// at start and on every reload. Nothing below main reads the environment.
#ifndef GDP_CONFIG_CONFIG_H_
#define GDP_CONFIG_CONFIG_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "device/device.h"

namespace gdp {

inline constexpr char kResourceName[] = "nvidia.com/gpu";
inline constexpr char kSocketName[] = "nvidia-gpu.sock";
inline constexpr char kResourcePrefix[] = "nvidia.com/";
// Where the MPS pipe directories (under Config::mps_root on the host)
// appear in a container: /mps/<resource or DRA driver>/pipe.
inline constexpr char kMpsContainerRoot[] = "/mps";

// NVIDIA's --mig-strategy.
enum class MigStrategy { kNone, kSingle, kMixed };

// NVIDIA's --device-list-strategy: how Allocate names the devices.
enum class DeviceListStrategy {
  kEnvvar,        // NVIDIA_VISIBLE_DEVICES=<ids>
  kVolumeMounts,  // /dev/null mounted at /var/run/nvidia-container-devices/<id>
  kCdiAnnotations,  // annotation <prefix>nvidia-device-plugin_<n> = CDI names
  kCdiCri,          // AllocateResponse.cdi_devices
};

// NVIDIA's --shared-devices-allocation-policy for replicas.
enum class SharedAllocationPolicy { kDistributed, kPacked };

enum class SharingStrategy { kNone, kTimeSlicing, kMps };

// --device-api: which kubelet API serves the GPUs. kBoth splits them:
// dra.devices go to DRA, the others to the device plugin.
enum class DeviceApi { kDevicePlugin, kDra, kBoth };

// sharing.<strategy>.resources[].devices: which devices of the resource are
// shared. `all`, the first `count` (in index order), or a list of GPU
// indices, MIG "i:j" indices and GPU/MIG UUIDs.
struct SharedDevices {
  enum class Kind { kAll, kCount, kList };
  Kind kind = Kind::kAll;
  int count = 0;
  std::vector<std::string> list;
  bool operator==(const SharedDevices&) const = default;
};

// One entry of sharing.<strategy>.resources. Names are full resource names
// ("nvidia.com/gpu"); a name given without a domain gets "nvidia.com/".
struct SharedResource {
  std::string name;
  std::string rename;  // empty: keep `name` (or <name>.shared by default)
  SharedDevices devices;
  int replicas = 0;  // >= 2
  // memoryPerReplica (our extension): each replica's share of its GPU's
  // memory, whole MiB; a container given k replicas of a GPU is limited to
  // k times this on it (docs/configuration.md, "Memory per replica").
  uint64_t memory_per_replica = 0;  // bytes, 0: none
  bool operator==(const SharedResource&) const = default;
};

struct Sharing {
  SharingStrategy strategy = SharingStrategy::kNone;  // which section was set
  bool rename_by_default = false;
  // Refuse Allocate of more than one replica. In the file it defaults to
  // false for timeSlicing and to true for mps, as in NVIDIA's plugin.
  bool fail_requests_greater_than_one = false;
  std::vector<SharedResource> resources;
  bool operator==(const Sharing&) const = default;
};

// One entry of resources.gpus or resources.mig: devices whose product name
// (GPU) or profile (MIG, e.g. "1g.10gb") matches the glob `pattern` ('*'
// wildcard) are advertised as `name` (full, e.g. "nvidia.com/a100").
struct ResourcePattern {
  std::string pattern;
  std::string name;
  bool operator==(const ResourcePattern&) const = default;
};

// flags.gfd of the config file, or GFD's flags (--oneshot, --no-timestamp,
// --sleep-interval, --output-file, --machine-type-file): NVIDIA's GPU feature
// discovery settings, with GFD's defaults; used by node labelling.
struct GfdConfig {
  bool oneshot = false;       // label once and exit
  bool no_timestamp = false;  // leave out nvidia.com/gfd.timestamp
  // Between labellings; absl::InfiniteDuration() ("infinite"): label once,
  // then sleep.
  absl::Duration sleep_interval = absl::Seconds(60);
  std::string output_file =
      "/etc/kubernetes/node-feature-discovery/features.d/gfd";
  std::string machine_type_file = "/sys/class/dmi/id/product_name";
  // --use-node-feature-api: write the labels as this node's NFD NodeFeature
  // object through the API server instead of output_file.
  bool use_node_feature_api = false;
  bool operator==(const GfdConfig&) const = default;
};

// The DRA kubelet plugin side (--device-api dra or both).
struct DraConfig {
  // --dra-driver-name: the driver name (ResourceSlices, DeviceClasses, the
  // kubelet's plugin name); a DNS subdomain of at most 63 characters.
  std::string driver_name = "gpu.nvidia.com";
  // --kubelet-registration-dir: the kubelet's plugin watcher directory; our
  // registration socket is <dir>/<driver>-reg.sock.
  std::string registration_dir = "/var/lib/kubelet/plugins_registry";
  // --kubelet-plugins-dir: our endpoint is <dir>/<driver>/dra.sock, and the
  // checkpoint of prepared claims lives beside it.
  std::string plugins_dir = "/var/lib/kubelet/plugins";
  // --node-name (NODE_NAME): this node, the pool and nodeName of our
  // ResourceSlices.
  std::string node_name;
  // --kubeconfig: how to reach the API server; empty: in cluster, with the
  // service account and api_host/api_port.
  std::string kubeconfig;
  // KUBERNETES_SERVICE_HOST / _PORT, as main read them (in-cluster access).
  std::string api_host;
  std::string api_port;
  // dra.devices of the config file: the GPUs and MIG devices DRA serves
  // (same references as sharing's devices); absent: every GPU. With
  // DeviceApi::kBoth it must be given, and the device plugin serves the
  // others.
  std::optional<SharedDevices> devices;
  bool operator==(const DraConfig&) const = default;
};

// NVIDIA's DRA driver feature gates (--feature-gates, FEATURE_GATES:
// "Name=true,Name2=false"), as far as this daemon acts on them. The gates
// NVIDIA defines that change nothing here are accepted and dropped; those
// whose non-default value this daemon cannot honour are refused
// (config/feature_gates.h).
struct FeatureGates {
  // ConsumableShares (NVIDIA: alpha, off by default): with
  // --consumable-shares, GPUs are published for several claims at once,
  // their memory a consumable capacity.
  bool consumable_shares = false;
  // DynamicMIG (NVIDIA: alpha, off by default): each MIG-capable GPU is
  // published as shared counters plus the whole GPU and every MIG profile
  // placement consuming them (KEP-4815), MIG devices made at prepare and
  // destroyed at unprepare. Never with MPSSupport or NVMLDeviceHealthCheck
  // (refused as NVIDIA's driver refuses them).
  bool dynamic_mig = false;
  bool operator==(const FeatureGates&) const = default;
};

// NVIDIA's --consumable-shares (CONSUMABLE_SHARES): how a GPU's memory (and
// a count of shares) is published as consumable capacity when the
// ConsumableShares gate is on. kDisabled without the gate.
struct ConsumableShares {
  enum class Mode {
    kDisabled,   // "disabled": whole devices, as without the gate
    kMemory,     // "memory": a claim takes all memory unless it asks less
    kUnlimited,  // "unlimited": a claim takes no memory unless it asks some
    kCount,      // "<N>": as unlimited, plus a `shares` capacity of N
  };
  Mode mode = Mode::kDisabled;
  int count = 0;  // kCount: the number of shares, 2..1024
  bool operator==(const ConsumableShares&) const = default;
};

// --memory-limit-hook: which CDI hook applies a share's memory limit to
// the container's cgroup. kOurs: gpu-device-plugin's hook (installed on the
// host by the DaemonSet); kNvidia: the container toolkit's nvidia-cdi-hook
// `apply-cuda-memory-limits` (the same NVIDIA_GPU_MEMORY_REQUEST/LIMIT
// contract).
enum class MemoryLimitHookKind { kOurs, kNvidia };

// --unenforced-shares: what is published for a GPU whose memory limits this
// node cannot enforce (driver older than R615, MIG, no cgroup v2) while
// consumable shares are on. kRefuse: the GPU whole, as without shares (the
// log and /readyz say why); kAllow: NVIDIA's consumable shape anyway, the
// limits unenforced (as NVIDIA's driver always does).
enum class UnenforcedShares { kRefuse, kAllow };

// Where the DaemonSet installs our memory-limit hook on the host.
inline constexpr char kDefaultMemoryLimitHookPath[] =
    "/usr/local/gpu-device-plugin/bin/gdp-cdi-hook";

struct Config {
  std::string kubelet_socket = "/var/lib/kubelet/device-plugins/kubelet.sock";
  std::string driver_root = "/";  // where the driver (NVML) is installed
  std::string dev_root;  // host root of /dev/nvidia*; empty: driver_root
  std::string sysfs_root = "/sys";
  bool fail_on_init_error = true;
  bool pass_device_specs = false;
  DeviceIdStrategy device_id_strategy = DeviceIdStrategy::kUuid;
  int verbosity = 0;
  // Between NVML load/init attempts when fail_on_init_error is false.
  absl::Duration nvml_retry_interval = absl::Seconds(30);

  // --config-file / CONFIG_FILE: NVIDIA's v1 config; empty: none. Reloaded
  // on SIGHUP and when it changes.
  std::string config_file;
  MigStrategy mig_strategy = MigStrategy::kNone;
  std::vector<DeviceListStrategy> device_list_strategies = {
      DeviceListStrategy::kEnvvar};
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  // Where the host's driver root is mounted inside the plugin's container;
  // driver files for the CDI spec are looked up there when it exists, else
  // under driver_root. Host paths in the spec use driver_root.
  std::string container_driver_root = "/driver-root";
  // Host directory of the MPS control daemon's pipes and shm; needed for
  // sharing.mps.
  std::string mps_root;
  SharedAllocationPolicy shared_allocation_policy =
      SharedAllocationPolicy::kDistributed;
  std::vector<ResourcePattern> gpu_resources;  // resources.gpus
  std::vector<ResourcePattern> mig_resources;  // resources.mig
  Sharing sharing;
  // Where the CDI spec is written (only with a cdi-* device list strategy).
  std::string cdi_spec_dir = "/var/run/cdi";
  // Where /proc is: MIG capability minors are read from
  // <proc_root>/driver/nvidia-caps/mig-minors.
  std::string proc_root = "/proc";
  GfdConfig gfd;  // flags.gfd of the config file, or GFD's flags
  // --labels: the daemon also writes the node labels (gfd settings above).
  bool labels = false;
  // --metrics-address: where /metrics, /healthz and /readyz are served
  // ("host:port" or ":port" for every address); empty: not served.
  std::string metrics_address;
  // Health checks, as NVIDIA's DP_DISABLE_HEALTHCHECKS (`all`, `xids`, or
  // XIDs to ignore besides the default ones) and DP_ENABLE_HEALTHCHECKS
  // (XIDs to check even if ignored); comma-separated.
  std::string disable_healthchecks;
  std::string enable_healthchecks;
  // How long a GPU with a recoverable failure stays unhealthy before it is
  // probed (doubling with each further failure within 10 minutes, up to an
  // hour), and how often GPUs are probed for being lost or back.
  absl::Duration health_quiet_period = absl::Seconds(60);
  absl::Duration health_probe_interval = absl::Seconds(5);
  // Whether an NVLink that was active going inactive also makes its GPU
  // unhealthy until it is reset (--nvlink-down-unhealthy); either way it
  // is counted and the topology is read again.
  bool nvlink_down_unhealthy = false;
  // The deadline of each NVML call after start-up (--nvml-timeout); zero:
  // none.
  absl::Duration nvml_timeout = absl::Seconds(10);
  // How often the daemon discovers the GPUs again to follow MIG
  // reconfiguration and GPUs appearing or disappearing
  // (--rediscover-interval); zero: never (only on reload).
  absl::Duration rediscover_interval = absl::Seconds(60);
  // --device-api (DEVICE_API, flags.deviceAPI) and the DRA side's settings.
  DeviceApi device_api = DeviceApi::kDevicePlugin;
  DraConfig dra;
  // NVIDIA's DRA driver's --feature-gates and --consumable-shares.
  FeatureGates feature_gates;
  ConsumableShares consumable_shares;
  // --unenforced-shares: consumable shares on a GPU that cannot enforce
  // memory limits.
  UnenforcedShares unenforced_shares = UnenforcedShares::kRefuse;
  // --memory-limit-hook and --memory-limit-hook-path: the CDI hook that
  // applies memory limits, and its executable's host path (for kNvidia the
  // toolkit's nvidia-cdi-hook; must then be given).
  MemoryLimitHookKind memory_limit_hook = MemoryLimitHookKind::kOurs;
  std::string memory_limit_hook_path = kDefaultMemoryLimitHookPath;
  // --nvidia-cdi-hook-path (--nvidia-ctk-path, flags.plugin.nvidiaCTKPath):
  // host path of the container toolkit's nvidia-cdi-hook, or of nvidia-ctk
  // (its `hook` subcommand); set, every CDI spec we write carries NVIDIA's
  // hooks (cdi/nvidia_hooks.h). Empty: none.
  std::string nvidia_cdi_hook_path;

  bool ServesDevicePlugin() const { return device_api != DeviceApi::kDra; }
  bool ServesDra() const { return device_api != DeviceApi::kDevicePlugin; }
  // Whether GPUs are published with consumable shares (gate and mode on).
  bool ConsumableSharesOn() const {
    return feature_gates.consumable_shares &&
           consumable_shares.mode != ConsumableShares::Mode::kDisabled;
  }
  // Whether DRA publishes MIG-enabled GPUs partitionable (DynamicMIG), so
  // discovery reads their MIG profiles.
  bool DynamicMigOn() const { return ServesDra() && feature_gates.dynamic_mig; }

  const std::string& DevRoot() const {
    return dev_root.empty() ? driver_root : dev_root;
  }
};

// The name `r` is advertised under: its rename if set, else
// "<name>.shared" if sharing.rename_by_default, else its name.
std::string AdvertisedName(const Sharing& sharing, const SharedResource& r);

// Checks every setting and the rules between them (NVIDIA's, and stricter
// ones of ours: see config_file.h). Names are full ("nvidia.com/..."): the
// config file's short names are qualified when it is read.
// Result on failure: InvalidArgument naming the setting (its flag, or its
// path in the config file for settings only the file has) and what is wrong.
absl::Status Validate(const Config& config);

// Validate, naming each setting as `where(path)` does. `path` is the
// setting's path in the config file ("flags.migStrategy",
// "sharing.mps.resources[0].replicas"; a flag such as "--kubelet-socket"
// for settings the file cannot give: Setting::path() in settings.h).
// Messages are "<where(path)>: <what is wrong>". Validate(config) names
// settings by their flag where they have one, else by their path.
absl::Status Validate(const Config& config,
                      absl::FunctionRef<std::string(absl::string_view)> where);

}  // namespace gdp

#endif  // GDP_CONFIG_CONFIG_H_
