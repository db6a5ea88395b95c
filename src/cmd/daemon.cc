#include "cmd/daemon.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cdi/spec.h"
#include "cdi/write_spec.h"
#include "device/mig_caps.h"
#include "health/apply.h"
#include "health/xid_policy.h"
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

bool NeedsMigCaps(const Config& c, const NodeGpus& node) {
  return c.mig_strategy != MigStrategy::kNone &&
         std::any_of(node.gpus.begin(), node.gpus.end(), [](const GpuInfo& g) {
           return g.mig_enabled && !g.migs.empty();
         });
}

// Writes the CDI spec for `devices` (all resources together) into
// config.cdi_spec_dir, or removes it when there are none.
absl::Status WriteCdiSpec(const Config& c, const NodeGpus& node,
                          const std::vector<Device>& devices) {
  if (devices.empty()) return cdi::RemoveSpec(c.cdi_spec_dir);
  cdi::CdiSpecOptions o;
  o.host_driver_root = c.driver_root;
  std::error_code ec;
  o.lookup_root = std::filesystem::is_directory(c.container_driver_root, ec)
                      ? c.container_driver_root
                      : c.driver_root;
  o.dev_root = c.DevRoot();
  o.driver_version = node.driver_version;
  absl::StatusOr<nlohmann::json> spec = cdi::GenerateSpec(o, devices);
  if (!spec.ok()) return spec.status();
  if (absl::Status s = cdi::WriteSpec(c.cdi_spec_dir, *spec); !s.ok()) {
    return s;
  }
  LOG_INFO("Wrote the CDI spec for {} device(s) to {}/{}",
           (*spec)["devices"].size(), c.cdi_spec_dir, cdi::SpecFileName());
  return absl::OkStatus();
}

// Settings that can only change with a restart of the process.
absl::Status CheckReloadable(const Config& running, const Config& next) {
  struct Fixed {
    const char* name;
    bool changed;
  } fixed[] = {
      {"kubelet socket", running.kubelet_socket != next.kubelet_socket},
      {"driver root", running.driver_root != next.driver_root},
  };
  for (const Fixed& f : fixed) {
    if (f.changed) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the ", f.name, " cannot change on reload; restart the plugin"));
    }
  }
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
  return o;
}

Daemon::Daemon(const Nvml& nvml, Config config)
    : nvml_(nvml),
      config_(std::move(config)),
      health_(XidPolicy::FromEnvironment(config_.disable_healthchecks,
                                         config_.enable_healthchecks),
              TrackerOptions(config_)),
      topology_(std::make_shared<SharedTopology>()),
      manager_(LifecycleOptions{.kubelet_socket = config_.kubelet_socket,
                                .socket_name = "",
                                .resource_name = ""},
               topology_) {}

Daemon::~Daemon() {
  if (monitor_ != nullptr) monitor_->Stop();
  if (monitor_thread_.joinable()) monitor_thread_.join();
  health_.SetOnChange(nullptr);
  absl::MutexLock lock(&health_mu_);
  manager_.StopAll();
}

absl::Status Daemon::Start(NodeGpus node) {
  node_ = std::move(node);
  LOG_INFO("Health checks: {}", health_.policy().Describe());
  health_.SetOnChange([this] { PushHealth(); });
  if (absl::Status s = Apply(config_, node_); !s.ok()) return s;
  if (!health_.policy().monitoring_disabled()) {
    HealthMonitorOptions o;
    o.sweep_interval = config_.health_probe_interval;
    o.retry_interval = config_.health_probe_interval;
    monitor_ =
        std::make_unique<HealthMonitor>(nvml_, health_, GpuRefs(node_), o);
    monitor_thread_ = std::thread([m = monitor_.get()] { m->Run(); });
  }
  return absl::OkStatus();
}

void Daemon::PushHealth() {
  absl::MutexLock lock(&health_mu_);
  PushHealthLocked();
  // A GPU whose links could not be read may answer again now.
  std::shared_ptr<const NodeTopology> t = topology_->Get();
  if (t != nullptr && t->AnyUnusable() && topology_node_ != nullptr) {
    DiscoverTopologyLocked(topology_node_);
  }
}

void Daemon::DiscoverTopologyLocked(std::shared_ptr<const NodeGpus> node) {
  auto t =
      std::make_shared<const NodeTopology>(DiscoverNodeTopology(nvml_, *node));
  std::shared_ptr<const NodeTopology> old = topology_->Get();
  if (old == nullptr || old->UsableCount() != t->UsableCount()) {
    LOG_INFO("Topology: {} of {} GPU(s) ranked by NVLink, PCIe and NUMA",
             t->UsableCount(), t->topology().num_gpus());
  }
  topology_node_ = std::move(node);
  topology_->Set(std::move(t));
}

void Daemon::PushHealthLocked() {
  for (const std::string& name : manager_.Running()) {
    if (DeviceSet* set = manager_.Devices(name); set != nullptr) {
      ApplyHealth(health_, *set);
    }
  }
}

absl::Status Daemon::Apply(const Config& c, const NodeGpus& node) {
  std::optional<MigCaps> caps;
  if (NeedsMigCaps(c, node)) {
    absl::StatusOr<MigCaps> read = MigCaps::Read(c.proc_root);
    if (!read.ok()) return read.status();
    caps = *std::move(read);
  }
  absl::StatusOr<std::vector<Resource>> resources =
      BuildResources(node, c, caps.has_value() ? &*caps : nullptr);
  if (!resources.ok()) return resources.status();
  if (resources->empty()) {
    LOG_WARN("No devices to advertise with this configuration");
  }
  if (!UsesCdi(c) && UsesCdi(config_)) {  // CDI turned off by a reload
    if (absl::Status s = cdi::RemoveSpec(config_.cdi_spec_dir); !s.ok()) {
      LOG_WARN("Cannot remove the CDI spec: {}", s.message());
    }
  }
  if (UsesCdi(c)) {
    std::vector<Device> all;
    for (const Resource& r : *resources) {
      all.insert(all.end(), r.devices.begin(), r.devices.end());
    }
    if (absl::Status s = WriteCdiSpec(c, node, all); !s.ok()) return s;
  }
  std::vector<PluginSpec> specs;
  for (Resource& r : *resources) {
    for (Device& d : r.devices) {  // start with what health knows
      DeviceHealth h = health_.HealthOf(d);
      d.health = h.health;
      d.unhealthy_reason = std::move(h.reason);
    }
    PluginSpec s;
    s.allocator = AllocatorOptionsFor(c, r);
    s.policy = c.shared_allocation_policy;
    s.resource = std::move(r);
    specs.push_back(std::move(s));
  }
  absl::MutexLock lock(&health_mu_);
  DiscoverTopologyLocked(std::make_shared<const NodeGpus>(node));
  absl::Status applied = manager_.Apply(std::move(specs));
  PushHealthLocked();  // catches changes made while building
  return applied;
}

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
  absl::StatusOr<NodeGpus> node = DiscoverGpus(nvml_, loaded->sysfs_root);
  if (!node.ok()) {
    LOG_ERROR("Config reload refused: discovering the GPUs failed: {}",
              node.status().message());
    return node.status();
  }
  if (absl::Status s = Apply(*loaded, *node); !s.ok()) {
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
  // A GPU that vanished from discovery and is back was reset.
  for (const GpuRef& now : GpuRefs(*node)) {
    bool before =
        std::any_of(node_.gpus.begin(), node_.gpus.end(),
                    [&](const GpuInfo& g) { return g.uuid == now.uuid; });
    if (!before)
      health_.OnReset(now, "it reappeared in discovery", absl::Now());
  }
  if (monitor_ != nullptr) monitor_->Watch(GpuRefs(*node));
  config_ = *loaded;
  node_ = *std::move(node);
  LOG_INFO("Config reloaded; serving {}",
           absl::StrJoin(manager_.Running(), ", "));
  return absl::OkStatus();
}

}  // namespace gdp
