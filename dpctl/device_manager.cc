#include "device_manager.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gdp::dpctl {

DeviceManager::DeviceManager(EventSink* events) : events_(events) {}

DeviceManager::~DeviceManager() { Stop(); }

uint64_t DeviceManager::AddPlugin(const std::string& resource,
                                  const v1beta1::DevicePluginOptions& options,
                                  std::shared_ptr<DevicePluginApi> plugin) {
  std::shared_ptr<DevicePluginApi> old;
  uint64_t generation = 0;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      old = std::move(plugin);
    } else {
      Resource& r = resources_[resource];
      old = std::exchange(r.plugin, std::move(plugin));
      r.options = options;
      r.generation = generation = next_generation_++;
      Changed();
    }
  }
  if (old != nullptr) old->Cancel();
  return generation;
}

void DeviceManager::UpdateDevices(const std::string& resource,
                                  uint64_t generation,
                                  const std::vector<v1beta1::Device>& devices) {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource);
  if (stopped_ || it == resources_.end() ||
      it->second.generation != generation) {
    return;
  }
  it->second.devices = devices;
  Changed();
  events_->Emit(DevicesEvent(resource, devices));
}

void DeviceManager::StreamClosed(const std::string& resource,
                                 uint64_t generation,
                                 const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource);
  if (stopped_ || it == resources_.end() ||
      it->second.generation != generation) {
    return;
  }
  for (v1beta1::Device& device : it->second.devices) {
    device.set_health(std::string(kUnhealthy));
  }
  Changed();
  events_->Emit(StreamClosedEvent(resource, status));
  events_->Emit(DevicesEvent(resource, it->second.devices));
}

std::vector<std::string> DeviceManager::HealthyFreeLocked(
    const std::string& resource, const Resource& r) const {
  std::set<std::string> seen;
  for (const auto& [pod, by_resource] : taken_) {
    auto it = by_resource.find(resource);
    if (it != by_resource.end())
      seen.insert(it->second.begin(), it->second.end());
  }
  std::vector<std::string> free;
  for (const v1beta1::Device& device : r.devices) {
    if (device.health() == kHealthy && seen.insert(device.id()).second) {
      free.push_back(device.id());
    }
  }
  return free;
}

int DeviceManager::HealthyFreeCount(const std::string& resource) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = resources_.find(resource);
  if (it == resources_.end()) return 0;
  return static_cast<int>(HealthyFreeLocked(resource, it->second).size());
}

absl::StatusOr<DeviceManager::Choice> DeviceManager::Available(
    const std::string& resource, int count, const std::string& pod) {
  absl::MutexLock lock(&mu_);
  absl::Status error;
  Choice choice;
  auto it = resources_.find(resource);
  if (stopped_) {
    error = absl::CancelledError("the kubelet is stopping");
  } else if (count < 1) {
    error = absl::InvalidArgumentError(
        absl::StrCat("cannot allocate ", count, " devices"));
  } else if (it == resources_.end()) {
    error = absl::NotFoundError(absl::StrCat("unknown resource ", resource));
  } else {
    choice.available = HealthyFreeLocked(resource, it->second);
    choice.options = it->second.options;
    choice.plugin = it->second.plugin;
    const size_t n = choice.available.size();
    if (n < static_cast<size_t>(count)) {
      error = absl::ResourceExhaustedError(
          absl::StrCat("only ", n, " healthy free device", n == 1 ? "" : "s",
                       ", ", count, " wanted"));
    }
  }
  if (!error.ok()) {
    events_->Emit(AllocateFailedEvent(resource, pod, error.message()));
    return error;
  }
  return choice;
}

absl::StatusOr<std::vector<std::string>> DeviceManager::Choose(
    const std::string& resource, int count, const std::string& pod,
    const Choice& choice) {
  std::vector<std::string> chosen;
  std::set<std::string> picked;
  const std::set<std::string> available(choice.available.begin(),
                                        choice.available.end());
  auto take = [&](const std::string& id) {
    if (static_cast<int>(chosen.size()) < count && available.count(id) > 0 &&
        picked.insert(id).second) {
      chosen.push_back(id);
    }
  };
  if (choice.options.get_preferred_allocation_available()) {
    v1beta1::PreferredAllocationRequest request;
    v1beta1::ContainerPreferredAllocationRequest* container =
        request.add_container_requests();
    for (const std::string& id : choice.available) {
      container->add_available_deviceids(id);
    }
    container->set_allocation_size(count);
    absl::StatusOr<v1beta1::PreferredAllocationResponse> response =
        choice.plugin->GetPreferredAllocation(request);
    absl::StatusOr<std::vector<std::string>> answer =
        std::vector<std::string>();
    if (!response.ok()) {
      answer = response.status();
    } else if (response->container_responses_size() > 0) {
      for (const std::string& id :
           response->container_responses(0).deviceids()) {
        answer->push_back(id);
      }
    }
    absl::MutexLock lock(&mu_);
    events_->Emit(
        PreferredEvent(resource, pod, choice.available, count, answer));
    if (!answer.ok()) {
      events_->Emit(
          AllocateFailedEvent(resource, pod,
                              absl::StrCat("GetPreferredAllocation failed: ",
                                           StatusText(answer.status()))));
      return answer.status();
    }
    for (const std::string& id : *answer) take(id);
  }
  for (const std::string& id : choice.available) take(id);
  return chosen;
}

absl::StatusOr<std::vector<std::string>> DeviceManager::Allocate(
    const std::string& resource, int count, const std::string& pod) {
  absl::MutexLock serial(&allocate_mu_);
  absl::StatusOr<Choice> choice = Available(resource, count, pod);
  if (!choice.ok()) return choice.status();
  absl::StatusOr<std::vector<std::string>> chosen =
      Choose(resource, count, pod, *choice);
  if (!chosen.ok()) return chosen.status();

  v1beta1::AllocateRequest request;
  v1beta1::ContainerAllocateRequest* container =
      request.add_container_requests();
  for (const std::string& id : *chosen) container->add_devices_ids(id);
  absl::StatusOr<v1beta1::AllocateResponse> response =
      choice->plugin->Allocate(request);
  // Like the kubelet, use the first container response and insist on one.
  absl::StatusOr<v1beta1::ContainerAllocateResponse> result;
  if (!response.ok()) {
    result = response.status();
  } else if (response->container_responses_size() == 0) {
    result = absl::InternalError(
        "the plugin's AllocateResponse has no container responses");
  } else {
    result = response->container_responses(0);
  }
  {
    absl::MutexLock lock(&mu_);
    if (result.ok()) {
      std::vector<std::string>& held = taken_[pod][resource];
      held.insert(held.end(), chosen->begin(), chosen->end());
      Changed();
    }
    events_->Emit(AllocateEvent(resource, pod, *chosen, result));
  }
  if (!result.ok()) return result.status();

  if (choice->options.pre_start_required()) {
    v1beta1::PreStartContainerRequest prestart;
    for (const std::string& id : *chosen) prestart.add_devices_ids(id);
    absl::Status status = choice->plugin->PreStartContainer(prestart);
    absl::MutexLock lock(&mu_);
    events_->Emit(PreStartEvent(resource, pod, *chosen, status));
    if (!status.ok()) return status;
  }
  return chosen;
}

absl::Status DeviceManager::Free(const std::string& pod) {
  absl::MutexLock lock(&mu_);
  auto it = taken_.find(pod);
  if (it == taken_.end()) {
    return absl::NotFoundError(absl::StrCat("pod ", pod, " holds no devices"));
  }
  for (const auto& [resource, devices] : it->second) {
    events_->Emit(FreedEvent(pod, resource, devices));
  }
  taken_.erase(it);
  Changed();
  return absl::OkStatus();
}

void DeviceManager::List() {
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [name, r] : resources_) {
    events_->Emit(DevicesEvent(name, r.devices));
  }
}

uint64_t DeviceManager::version() const {
  absl::ReaderMutexLock lock(&mu_);
  return version_;
}

bool DeviceManager::AwaitChange(uint64_t seen) const {
  auto changed = [this, seen]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return stopped_ || version_ != seen;
  };
  absl::ReaderMutexLock lock(&mu_);
  mu_.Await(absl::Condition(&changed));
  return !stopped_;
}

void DeviceManager::Stop() {
  std::vector<std::shared_ptr<DevicePluginApi>> plugins;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    for (const auto& [name, r] : resources_) plugins.push_back(r.plugin);
  }
  for (const auto& plugin : plugins) {
    if (plugin != nullptr) plugin->Cancel();
  }
}

}  // namespace gdp::dpctl
