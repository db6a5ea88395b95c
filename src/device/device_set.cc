#include "device/device_set.h"

#include <utility>

namespace gdp {

DeviceSet::DeviceSet(std::vector<Device> devices)
    : list_(std::make_shared<const DeviceList>(std::move(devices), 1)) {}

std::shared_ptr<const DeviceList> DeviceSet::Get() const {
  absl::MutexLock lock(&mu_);
  return list_;
}

void DeviceSet::Replace(std::vector<Device> devices) {
  {
    absl::MutexLock lock(&mu_);
    list_ = std::make_shared<const DeviceList>(std::move(devices),
                                               list_->generation + 1);
  }
  Notify();
}

bool DeviceSet::SetHealth(const std::string& id, Health health,
                          const std::string& reason) {
  {
    absl::MutexLock lock(&mu_);
    const Device* d = list_->Find(id);
    if (d == nullptr) return false;
    std::string why = health == Health::kHealthy ? "" : reason;
    if (d->health == health && d->unhealthy_reason == why) return false;
    std::vector<Device> next = list_->devices;
    Device& changed = next[list_->by_id.at(id)];
    changed.health = health;
    changed.unhealthy_reason = std::move(why);
    if (health == Health::kHealthy) changed.unhealthy_cause = {};
    list_ = std::make_shared<const DeviceList>(std::move(next),
                                               list_->generation + 1);
  }
  Notify();
  return true;
}

void DeviceSet::Notify() {
  absl::MutexLock lock(&subs_mu_);
  for (auto& [token, fn] : subs_) fn();
}

uint64_t DeviceSet::Subscribe(std::function<void()> on_change) {
  absl::MutexLock lock(&subs_mu_);
  uint64_t token = next_token_++;
  subs_.emplace(token, std::move(on_change));
  return token;
}

void DeviceSet::Unsubscribe(uint64_t token) {
  absl::MutexLock lock(&subs_mu_);
  subs_.erase(token);
}

}  // namespace gdp
