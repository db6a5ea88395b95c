#include "cmd/daemon.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cdi/memory_limit.h"
#include "cdi/spec.h"
#include "cdi/write_spec.h"
#include "cmd/gpu_layout.h"
#include "cmd/probes.h"
#include "config/settings.h"
#include "device/mig_caps.h"
#include "health/xid_policy.h"
#include "kube/config.h"
#include "resources/device_api.h"
#include "resources/resources.h"
#include "topology/discover.h"
#include "util/logging.h"

namespace gdp {
namespace {

bool Has(const std::vector<DeviceListStrategy>& v, DeviceListStrategy s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool UsesCdi(const Config& c) {
  return Has(c.device_list_strategies, DeviceListStrategy::kCdiAnnotations) ||
         Has(c.device_list_strategies, DeviceListStrategy::kCdiCri);
}

bool AnyMigDevice(const NodeGpus& node) {
  return std::any_of(node.gpus.begin(), node.gpus.end(), [](const GpuInfo& g) {
    return g.mig_enabled && !g.migs.empty();
  });
}

// The device plugin advertises MIG devices only with a MIG strategy; the
// DRA side always publishes a MIG-enabled GPU's MIG devices.
bool NeedsMigCaps(const Config& c, const DeviceApiSplit& split) {
  return (c.mig_strategy != MigStrategy::kNone &&
          AnyMigDevice(split.device_plugin)) ||
         AnyMigDevice(split.dra);
}

// Where CDI specs find the driver's files and device nodes under `c`.
cdi::CdiSpecOptions CdiOptions(const Config& c) {
  cdi::CdiSpecOptions o;
  o.host_driver_root = c.driver_root;
  std::error_code ec;
  o.lookup_root = std::filesystem::is_directory(c.container_driver_root, ec)
                      ? c.container_driver_root
                      : c.driver_root;
  o.dev_root = c.DevRoot();
  o.nvidia_cdi_hook_path = c.nvidia_cdi_hook_path;
  return o;
}

// Writes the CDI spec for `devices` (all resources together) into
// config.cdi_spec_dir, or removes it when there are none. Replicas of
// resources with a memoryPerReplica (`share_bytes` by GPU UUID): with our
// hook each replica gets a CDI device of its own carrying its share
// (--share, which the pod cannot change); with NVIDIA's the GPU's device
// carries NVIDIA's hook, which reads the limit Allocate puts in the env.
absl::Status WriteCdiSpec(
    const Config& c, const NodeGpus& node, const std::vector<Device>& devices,
    const absl::flat_hash_map<std::string, uint64_t>& share_bytes) {
  if (devices.empty()) return cdi::RemoveSpec(c.cdi_spec_dir);
  cdi::CdiSpecOptions o = CdiOptions(c);
  o.driver_version = node.driver_version;
  cdi::MemoryLimitHook hook;
  hook.kind = c.memory_limit_hook == MemoryLimitHookKind::kNvidia
                  ? cdi::MemoryLimitHook::Kind::kNvidia
                  : cdi::MemoryLimitHook::Kind::kOurs;
  hook.path = c.memory_limit_hook_path;
  hook.driver_root = c.driver_root;
  const bool ours = hook.kind == cdi::MemoryLimitHook::Kind::kOurs;
  auto edit = [&](const Device& d, cdi::CdiDevice* unit) {
    if (ours || d.replica < 0 || !share_bytes.contains(d.gpu_uuid)) {
      return absl::OkStatus();
    }
    return cdi::AddEnvLimitHook(hook, d.gpu_uuid, unit);
  };
  auto replica_edit = [&](const Device& d,
                          cdi::CdiDevice* replica) -> absl::StatusOr<bool> {
    auto it = share_bytes.find(d.gpu_uuid);
    if (!ours || it == share_bytes.end()) return false;
    if (absl::Status s = cdi::AddShareLimit(
            hook, d.gpu_uuid, it->second,
            cdi::ReplicaShareKey(d.gpu_uuid, d.replica), replica);
        !s.ok()) {
      return s;
    }
    return true;
  };
  absl::StatusOr<nlohmann::json> spec =
      cdi::GenerateSpec(o, devices, edit, replica_edit);
  if (!spec.ok()) return spec.status();
  if (absl::Status s = cdi::WriteSpec(c.cdi_spec_dir, *spec); !s.ok()) {
    return s;
  }
  LOG_INFO("Wrote the CDI spec for {} device(s) to {}/{}",
           (*spec)["devices"].size(), c.cdi_spec_dir, cdi::SpecFileName());
  return absl::OkStatus();
}

HealthTrackerOptions TrackerOptions(const Config& c) {
  HealthTrackerOptions o;
  o.quiet_period = c.health_quiet_period;
  o.max_quiet_period = std::max(o.max_quiet_period, c.health_quiet_period);
  o.probe_interval = c.health_probe_interval;
  return o;
}

}  // namespace

AllocatorOptions AllocatorOptionsFor(const Config& c, const Resource& r) {
  AllocatorOptions o;
  o.pass_device_specs = c.pass_device_specs;
  o.dev_root = c.DevRoot();
  o.strategies = c.device_list_strategies;
  o.cdi_annotation_prefix = c.cdi_annotation_prefix;
  o.resource_name = r.name;
  o.sharing = r.sharing;
  o.replicas = r.replicas;
  o.fail_requests_greater_than_one = r.fail_requests_greater_than_one;
  o.mps_root = c.mps_root;
  o.memory_per_replica = r.memory_per_replica;
  o.memory_limit_hook = c.memory_limit_hook;
  return o;
}

Daemon::Daemon(const Nvml& nvml, Config config, HealthStateOptions state)
    : nvml_(nvml),
      // A worker used once per rediscovery interval is kept between uses
      // rather than started and ended each time.
      nvml_runner_(nvml, config.rediscover_interval > absl::ZeroDuration()
                             ? config.rediscover_interval + absl::Seconds(30)
                             : absl::Seconds(30)),
      config_(std::move(config)),
      health_(nvml,
              XidPolicy::FromEnvironment(config_.disable_healthchecks,
                                         config_.enable_healthchecks),
              TrackerOptions(config_), std::move(state)),
      topology_(std::make_shared<SharedTopology>()),
      manager_(LifecycleOptions{.kubelet_socket = config_.kubelet_socket,
                                .socket_name = "",
                                .resource_name = ""},
               topology_) {}

Daemon::~Daemon() {
  nvml_runner_.Cancel();
  health_.Stop();
  dra_.reset();
  absl::MutexLock lock(&health_mu_);
  manager_.StopAll();
}

std::string Daemon::NvmlFailure() const {
  std::vector<std::string> why;
  if (std::string f = health_.nvml_failure(); !f.empty()) {
    why.push_back(std::move(f));
  }
  for (const NvmlHang& h : nvml_.Hangs()) {
    // A hang about one GPU is that GPU's health (ListAndWatch), not the
    // plugin's: a restart cannot cure it, and would stop listing the GPU.
    if (h.per_gpu) continue;
    std::string m = h.Message();
    if (std::find(why.begin(), why.end(), m) == why.end()) {
      why.push_back(std::move(m));
    }
  }
  return absl::StrJoin(why, "; ");
}

absl::Status Daemon::StartDra() {
  const DraConfig& d = config_.dra;
  absl::StatusOr<kube::ClientConfig> api =
      d.kubeconfig.empty() ? kube::InClusterConfig(d.api_host, d.api_port)
                           : kube::LoadKubeconfig(d.kubeconfig);
  if (!api.ok()) {
    return absl::Status(api.status().code(),
                        absl::StrCat("DRA: the API server's address and "
                                     "credentials: ",
                                     api.status().message()));
  }
  dra::DraDriverOptions o;
  o.driver_name = d.driver_name;
  o.node_name = d.node_name;
  o.registration_dir = d.registration_dir;
  o.plugins_dir = d.plugins_dir;
  o.cdi_dir = config_.cdi_spec_dir;
  o.proc_root = config_.proc_root;
  o.cdi = CdiOptions(config_);
  o.mps_root = config_.mps_root;
  o.nvml = &nvml_;  // dynamic MIG devices are made at prepare
  // Whether memory limits can be enforced: published on every device, and
  // with consumable shares on, which devices get them.
  memory_limit_node_.nvml_has_limits = nvml_.HasMemoryLimits();
  absl::StatusOr<std::optional<std::string>> cgroup2 =
      ReadCgroup2Mount(config_.proc_root);
  if (cgroup2.ok()) {
    memory_limit_node_.cgroup2_mount = *cgroup2;
  } else {
    LOG_WARN("DRA: taking this node as without cgroup v2: {}",
             cgroup2.status().message());
  }
  if (config_.ConsumableSharesOn()) {
    o.inventory.shares = config_.consumable_shares;
    // A share's consumed memory becomes its hard limit through this hook.
    o.memory_limit_hook = cdi::MemoryLimitHook{
        config_.memory_limit_hook == MemoryLimitHookKind::kNvidia
            ? cdi::MemoryLimitHook::Kind::kNvidia
            : cdi::MemoryLimitHook::Kind::kOurs,
        config_.memory_limit_hook_path, config_.driver_root};
  }
  o.inventory.dynamic_mig = config_.DynamicMigOn();
  o.inventory.unenforced = config_.unenforced_shares;
  o.inventory.nvml_has_memory_limits = memory_limit_node_.nvml_has_limits;
  o.inventory.cgroup2_mount = memory_limit_node_.cgroup2_mount;
  o.api = *std::move(api);
  absl::StatusOr<std::unique_ptr<dra::DraDriver>> driver =
      dra::DraDriver::Create(std::move(o));
  if (!driver.ok()) {
    return absl::Status(driver.status().code(),
                        absl::StrCat("DRA: ", driver.status().message()));
  }
  dra_ = *std::move(driver);
  LOG_INFO("DRA driver {} for node {} ({} access to the API server)",
           d.driver_name, d.node_name,
           d.kubeconfig.empty() ? std::string("in-cluster")
                                : absl::StrCat("kubeconfig ", d.kubeconfig));
  return absl::OkStatus();
}

std::vector<std::string> Daemon::ReadinessNotes() const {
  absl::MutexLock lock(&notes_mu_);
  return readiness_notes_;
}

std::optional<dra::DraStatus> Daemon::Dra() const {
  if (dra_ == nullptr) return std::nullopt;
  return dra_->status();
}

absl::Status Daemon::Start(NodeGpus node) {
  node_ = std::move(node);
  LOG_INFO("Health checks: {}", health_.policy().Describe());
  if (config_.ServesDra()) {
    if (absl::Status s = StartDra(); !s.ok()) return s;
  }
  health_.Restore(node_, [this] { PushHealth(); });
  if (absl::Status s = Apply(config_, node_); !s.ok()) return s;
  if (health_.enabled()) {
    HealthMonitorOptions o;
    o.sweep_interval = config_.health_probe_interval;
    o.retry_interval = config_.health_probe_interval;
    // Health signals every twelfth sweep (60 s by default): slow-changing
    // conditions, read rarely to keep the idle cost down.
    o.signals_interval = 12 * config_.health_probe_interval;
    o.nvlink_down_unhealthy = config_.nvlink_down_unhealthy;
    // Idle sweeps stay on the NVML worker: one thread wakes per sweep.
    o.quiet_rounds = true;
    // An NVLink changed state: read the topology again, so that choices
    // avoid a link that went down.
    o.on_topology_change = [this] {
      absl::MutexLock lock(&health_mu_);
      if (topology_node_ != nullptr) DiscoverTopologyLocked(topology_node_);
    };
    health_.StartMonitor(node_, std::move(o));
  }
  return absl::OkStatus();
}

void Daemon::PushHealth() {
  absl::MutexLock lock(&health_mu_);
  PushHealthLocked();
  // A GPU whose links could not be read may answer again now.
  std::shared_ptr<const NodeTopology> t = topology_->Get();
  if ((t == nullptr || t->AnyUnusable()) && topology_node_ != nullptr) {
    DiscoverTopologyLocked(topology_node_);
  }
}

void Daemon::DiscoverTopologyLocked(std::shared_ptr<const NodeGpus> node) {
  // Kept first: a read that fails (a hung NVML call) is tried again at the
  // next health change.
  topology_node_ = node;
  absl::StatusOr<NodeTopology> read = nvml_runner_.Call<NodeTopology>(
      [&nvml = nvml_, node] { return DiscoverNodeTopology(nvml, *node); });
  if (!read.ok()) {
    LOG_ERROR("Reading the topology failed, keeping the one in use: {}",
              read.status().message());
    return;
  }
  auto t = std::make_shared<const NodeTopology>(*std::move(read));
  std::shared_ptr<const NodeTopology> old = topology_->Get();
  const bool changed = old == nullptr || old->UsableCount() != t->UsableCount();
  if (changed) {
    LOG_INFO("Topology: {} of {} GPU(s) ranked by NVLink, PCIe and NUMA",
             t->UsableCount(), t->topology().num_gpus());
  }
  topology_node_ = std::move(node);
  topology_->Set(t);
  // The DRA side's NVLink domains follow (its first Apply comes after).
  if (changed && old != nullptr && dra_ != nullptr) {
    if (absl::Status s = dra_->Apply(dra_node_, std::move(t),
                                     dra_caps_ ? &*dra_caps_ : nullptr);
        !s.ok()) {
      LOG_ERROR("DRA: cannot apply the new topology: {}", s.message());
    }
  }
}

void Daemon::PushHealthLocked() {
  for (const std::string& name : manager_.Running()) {
    if (DeviceSet* set = manager_.Devices(name); set != nullptr) {
      health_.ApplyTo(*set);
    }
  }
  if (dra_ != nullptr) health_.ApplyTo(dra_->devices());
}

absl::Status Daemon::Apply(const Config& c, const NodeGpus& node) {
  absl::StatusOr<DeviceApiSplit> split = SplitDeviceApis(node, c);
  if (!split.ok()) return split.status();
  std::optional<MigCaps> caps;
  if (NeedsMigCaps(c, *split)) {
    absl::StatusOr<MigCaps> read = MigCaps::Read(c.proc_root);
    if (!read.ok()) return read.status();
    caps = *std::move(read);
  }
  absl::StatusOr<std::vector<Resource>> resources =
      c.ServesDevicePlugin()
          ? BuildResources(split->device_plugin, c,
                           caps.has_value() ? &*caps : nullptr)
          : std::vector<Resource>{};
  if (!resources.ok()) return resources.status();
  if (resources->empty() && c.ServesDevicePlugin()) {
    LOG_WARN("No devices to advertise with this configuration");
  }
  if (!UsesCdi(c) && UsesCdi(config_)) {  // CDI turned off by a reload
    if (absl::Status s = cdi::RemoveSpec(config_.cdi_spec_dir); !s.ok()) {
      LOG_WARN("Cannot remove the CDI spec: {}", s.message());
    }
  }
  if (UsesCdi(c)) {
    std::vector<Device> all;
    absl::flat_hash_map<std::string, uint64_t> share_bytes;
    for (const Resource& r : *resources) {
      all.insert(all.end(), r.devices.begin(), r.devices.end());
      if (r.memory_per_replica == 0) continue;
      for (const Device& d : r.devices) {
        if (d.replica >= 0) share_bytes[d.gpu_uuid] = r.memory_per_replica;
      }
    }
    if (!share_bytes.empty() &&
        c.memory_limit_hook == MemoryLimitHookKind::kNvidia) {
      LOG_WARN(
          "memoryPerReplica with NVIDIA's memory-limit hook: the limit "
          "travels in the container's env (NVIDIA_GPU_MEMORY_LIMIT), which "
          "a pod can override to raise its own limit; use "
          "--memory-limit-hook=gdp to carry it in the CDI spec");
    }
    if (absl::Status s = WriteCdiSpec(c, node, all, share_bytes); !s.ok()) {
      return s;
    }
  }
  std::vector<PluginSpec> specs;
  for (Resource& r : *resources) {
    for (Device& d : r.devices) {  // start with what health knows
      DeviceHealth h = health_.HealthOf(d);
      d.health = h.health;
      d.unhealthy_reason = std::move(h.reason);
      d.unhealthy_cause = h.cause;
    }
    PluginSpec s;
    s.allocator = AllocatorOptionsFor(c, r);
    s.policy = c.shared_allocation_policy;
    s.resource = std::move(r);
    specs.push_back(std::move(s));
  }
  absl::MutexLock lock(&health_mu_);
  DiscoverTopologyLocked(std::make_shared<const NodeGpus>(node));
  if (dra_ != nullptr) {
    if (absl::Status s = dra_->Apply(split->dra, topology_->Get(),
                                     caps.has_value() ? &*caps : nullptr);
        !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("DRA: ", s.message()));
    }
    dra_node_ = split->dra;
    dra_caps_ = caps;
    MemoryLimitNode limits = memory_limit_node_;
    limits.driver_version = split->dra.driver_version;
    std::vector<std::string> notes =
        SharesNotes(c.ConsumableSharesOn(), c.unenforced_shares,
                    NodeMemoryLimitSupport(limits), split->dra);
    absl::MutexLock notes_lock(&notes_mu_);
    for (const std::string& note : notes) {  // each once while it holds
      if (std::find(readiness_notes_.begin(), readiness_notes_.end(), note) ==
          readiness_notes_.end()) {
        LOG_WARN("DRA: {}", note);
      }
    }
    readiness_notes_ = std::move(notes);
  }
  absl::Status applied = manager_.Apply(std::move(specs));
  PushHealthLocked();  // catches changes made while building
  return applied;
}

void Daemon::ReloadHealthState() { health_.ReloadState(); }

absl::Status Daemon::Reload(const absl::StatusOr<Config>& loaded) {
  if (!loaded.ok()) {
    LOG_ERROR("Config reload refused, keeping the running config: {}",
              loaded.status().message());
    return loaded.status();
  }
  if (absl::Status s = CheckReloadable(config_, *loaded); !s.ok()) {
    LOG_ERROR("Config reload refused, keeping the running config: {}",
              s.message());
    return s;
  }
  absl::StatusOr<NodeGpus> found = DiscoverWith(loaded->sysfs_root);
  if (!found.ok()) {
    LOG_ERROR("Config reload refused: discovering the GPUs failed: {}",
              found.status().message());
    return found.status();
  }
  // The rule a rediscovery follows too (Follow): what NVML cannot describe
  // now stays as it was served.
  NodeGpus node = KeepUndescribed(node_, *std::move(found));
  for (const LeftOut& u : node.unusable) {
    LOG_WARN("NVML cannot describe: {} (what was served there stays listed)",
             u.error.message());
  }
  if (absl::Status s = Apply(*loaded, node); !s.ok()) {
    LOG_ERROR("Config reload failed, restoring the running config: {}",
              s.message());
    // Resources the failed attempt touched go back to the running config.
    (void)Apply(config_, node_);
    return s;
  }
  if (loaded->disable_healthchecks != config_.disable_healthchecks ||
      loaded->enable_healthchecks != config_.enable_healthchecks ||
      loaded->health_quiet_period != config_.health_quiet_period ||
      loaded->health_probe_interval != config_.health_probe_interval) {
    LOG_WARN(
        "Health check settings changed; they take effect when the "
        "plugin restarts");
  }
  config_ = *loaded;
  Adopt(std::move(node));
  LOG_INFO("Config reloaded; serving {}",
           absl::StrJoin(manager_.Running(), ", "));
  return absl::OkStatus();
}

void Daemon::Adopt(NodeGpus node) {
  health_.Follow(node_, node);
  node_ = std::move(node);
}

absl::StatusOr<NodeGpus> Daemon::Discover() {
  // node_ was discovered with config_'s sysfs root (a reload re-reads).
  return DiscoverWith(config_.sysfs_root,
                      std::make_shared<const NodeGpus>(node_));
}

absl::StatusOr<NodeGpus> Daemon::DiscoverWith(
    const std::string& sysfs_root, std::shared_ptr<const NodeGpus> known) {
  // The job gets copies: it may outlive this call (nvml/runner.h).
  absl::StatusOr<absl::StatusOr<NodeGpus>> run =
      nvml_runner_.Call<absl::StatusOr<NodeGpus>>(
          [&nvml = nvml_, root = sysfs_root, known = std::move(known),
           dynamic_mig = config_.DynamicMigOn()] {
            DiscoverOptions read;
            read.mig_profiles = dynamic_mig;
            return DiscoverGpus(nvml, root, known.get(), read);
          });
  if (!run.ok()) return run.status();
  return *std::move(run);
}

absl::StatusOr<bool> Daemon::Follow(NodeGpus found) {
  // The rule a reload follows too (Reload).
  NodeGpus node = KeepUndescribed(node_, std::move(found));
  const LayoutOptions layout = Layout();
  std::vector<std::string> changes = LayoutChanges(node_, node, layout);
  if (changes.empty()) {
    // Only instances the DRA side made or destroyed: nothing to serve anew,
    // but the health monitor watches the instances there are now.
    if (!layout.mig_on_demand.empty() && !LayoutChanges(node_, node).empty()) {
      Adopt(std::move(node));
    }
    return false;
  }
  LOG_INFO("The node's GPUs changed: {}", absl::StrJoin(changes, "; "));
  for (const LeftOut& u : node.unusable) {
    LOG_WARN("NVML cannot describe: {} (what was served there stays listed)",
             u.error.message());
  }
  if (absl::Status s = Apply(config_, node); !s.ok()) {
    LOG_ERROR("Cannot serve the changed GPUs, keeping the running ones: {}",
              s.message());
    // Resources the failed attempt touched go back to what was served.
    (void)Apply(config_, node_);
    return s;
  }
  Adopt(std::move(node));
  LOG_INFO("Serving the changed GPUs: {}",
           absl::StrJoin(manager_.Running(), ", "));
  return true;
}

LayoutOptions Daemon::Layout() {
  absl::MutexLock lock(&health_mu_);
  return MigMadeOnDemand(dra_node_, config_.DynamicMigOn());
}

}  // namespace gdp
