#include "plugin/manager.h"

#include <filesystem>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/service.h"
#include "plugin/status_service.h"
#include "util/logging.h"
#include "util/thread_name.h"

namespace gdp {

struct PluginManager::Plugin {
  // The spec it was made from, without its devices: those live (once) in
  // `devices`, which is what a new spec's devices are compared with.
  PluginSpec spec;
  std::unique_ptr<DeviceSet> devices;
  std::unique_ptr<Allocator> allocator;
  std::unique_ptr<PluginLifecycle> lifecycle;
  std::thread thread;
  // ListAndWatch streams open now, counted by the services.
  std::shared_ptr<std::atomic<int>> open_streams =
      std::make_shared<std::atomic<int>>(0);

  ~Plugin() {
    if (lifecycle != nullptr) lifecycle->Stop();
    if (thread.joinable()) thread.join();
    lifecycle.reset();  // stops serving, removes the socket
  }
};

bool PluginSpec::SameDefinition(const PluginSpec& o) const {
  return resource.SameDefinition(o.resource) && allocator == o.allocator &&
         policy == o.policy;
}

PluginManager::PluginManager(LifecycleOptions lifecycle,
                             std::shared_ptr<const SharedTopology> topology)
    : lifecycle_(std::move(lifecycle)), topology_(std::move(topology)) {}

PluginManager::~PluginManager() { StopAll(); }

absl::StatusOr<std::unique_ptr<PluginManager::Plugin>> PluginManager::Start(
    PluginSpec spec, const Plugin* previous) {
  auto p = std::make_unique<Plugin>();
  std::vector<Device> devices = spec.resource.devices;
  if (previous != nullptr) {  // keep what health monitoring learned
    std::shared_ptr<const DeviceList> old = previous->devices->Get();
    for (Device& d : devices) {
      if (const Device* o = old->Find(d.id); o != nullptr) {
        d.health = o->health;
        d.unhealthy_reason = o->unhealthy_reason;
        d.unhealthy_cause = o->unhealthy_cause;
      }
    }
  }
  p->devices = std::make_unique<DeviceSet>(std::move(devices));
  p->allocator = std::make_unique<Allocator>(spec.allocator);
  LifecycleOptions options = lifecycle_;
  options.socket_name = spec.resource.socket_name;
  options.resource_name = spec.resource.name;
  DeviceSet* set = p->devices.get();
  const Allocator* allocator = p->allocator.get();
  ServiceOptions service{.shared_allocation_policy = spec.policy,
                         .topology = topology_,
                         .resource_name = spec.resource.name,
                         .open_streams = p->open_streams};
  std::string resource_name = spec.resource.name;
  // The kubelet's DevicePlugin service and our DeviceStatus service (health
  // reasons for dpctl) share the socket.
  auto lifecycle = PluginLifecycle::Create(
      options, [set, allocator, service, resource_name] {
        ServiceList services;
        services.push_back(
            std::make_unique<DevicePluginService>(*set, *allocator, service));
        services.push_back(
            std::make_unique<DeviceStatusService>(*set, resource_name));
        return services;
      });
  if (!lifecycle.ok()) return lifecycle.status();
  p->lifecycle = *std::move(lifecycle);
  LOG_INFO("Starting {} with {} device(s)", spec.resource.name,
           spec.resource.devices.size());
  spec.resource.devices = {};
  p->spec = std::move(spec);
  PluginLifecycle* l = p->lifecycle.get();
  p->thread = std::thread([l] {
    NameThisThread("gdp-lifecycle");
    l->Run();
  });
  return p;
}

absl::Status PluginManager::Apply(std::vector<PluginSpec> specs) {
  std::filesystem::path dir =
      std::filesystem::path(lifecycle_.kubelet_socket).parent_path();
  std::set<std::string> names;
  for (const PluginSpec& s : specs) {
    const std::string& name = s.resource.name;
    if (!names.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("resource ", name, " is defined twice"));
    }
    std::string path = (dir / s.resource.socket_name).string();
    if (path.size() > 107) {
      return absl::InvalidArgumentError(absl::StrCat(
          "resource ", name, ": socket path '", path,
          "' is longer than the 107 bytes a unix socket address holds"));
    }
  }
  absl::MutexLock lock(&mu_);
  for (auto it = plugins_.begin(); it != plugins_.end();) {
    if (names.count(it->first) == 0) {
      LOG_INFO("Stopping {}: no longer configured or no devices", it->first);
      it = plugins_.erase(it);
    } else {
      ++it;
    }
  }
  absl::Status result = absl::OkStatus();
  for (PluginSpec& s : specs) {
    std::string name = s.resource.name;
    auto it = plugins_.find(name);
    std::unique_ptr<Plugin> previous;
    if (it != plugins_.end()) {
      Resource running = it->second->spec.resource;
      running.devices = it->second->devices->Get()->devices;
      PluginSpec current{std::move(running), it->second->spec.allocator,
                         it->second->spec.policy};
      if (current.SameDefinition(s)) {
        VLOG(1, "{} unchanged", name);
        continue;
      }
      LOG_INFO("Restarting {}: its definition changed", name);
      previous = std::move(it->second);
      plugins_.erase(it);
      // Stop serving before the new server takes the socket name.
      previous->lifecycle->Stop();
      previous->thread.join();
      previous->lifecycle.reset();
    }
    auto started = Start(std::move(s), previous.get());
    if (!started.ok()) {
      LOG_ERROR("Cannot start {}: {}", name, started.status().message());
      if (result.ok()) result = started.status();
      continue;
    }
    plugins_[name] = *std::move(started);
  }
  return result;
}

void PluginManager::StopAll() {
  absl::MutexLock lock(&mu_);
  plugins_.clear();
}

std::vector<std::string> PluginManager::Running() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [name, p] : plugins_) out.push_back(name);
  return out;
}

DeviceSet* PluginManager::Devices(const std::string& resource) const {
  absl::MutexLock lock(&mu_);
  auto it = plugins_.find(resource);
  return it == plugins_.end() ? nullptr : it->second->devices.get();
}

bool PluginManager::AllRegistered() const {
  absl::MutexLock lock(&mu_);
  for (const auto& [name, p] : plugins_) {
    if (!p->lifecycle->registered()) return false;
  }
  return true;
}

std::vector<PluginStatus> PluginManager::Statuses() const {
  absl::MutexLock lock(&mu_);
  std::vector<PluginStatus> out;
  for (const auto& [name, p] : plugins_) {
    PluginStatus s{.resource = name,
                   .registered = p->lifecycle->registered(),
                   .open_streams = p->open_streams->load()};
    for (const Device& d : p->devices->Get()->devices) {
      ++(d.health == Health::kHealthy ? s.healthy : s.unhealthy);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gdp
