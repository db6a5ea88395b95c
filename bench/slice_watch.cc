#include "bench/slice_watch.h"

#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gdp::bench {

using json = nlohmann::json;

namespace {
constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";
}  // namespace

SliceWatch::SliceWatch(std::unique_ptr<kube::Client> api,
                       const std::string& node)
    : api_(std::move(api)), node_(node) {
  thread_ = std::thread([this] { Loop(); });
}

SliceWatch::~SliceWatch() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  api_->Cancel();
  thread_.join();
}

void SliceWatch::Loop() {
  kube::ListOptions options;
  options.field_selector = absl::StrCat("spec.nodeName=", node_);
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      slices_.clear();
    }
    absl::Status s = api_->Watch(
        kSlices, options, absl::Minutes(10), [this](const kube::WatchEvent& e) {
          const absl::Time now = absl::Now();
          if (e.type == "BOOKMARK") return true;
          const std::string name =
              e.object.value("metadata", json::object()).value("name", "");
          absl::MutexLock lock(&mu_);
          if (e.type == "DELETED") {
            slices_.erase(name);
          } else {
            slices_[name] = e.object.value("spec", json::object())
                                .value("devices", json::array());
          }
          ++events_;
          if (armed_ && !HitLocked() && armed_(DevicesLocked())) hit_ = now;
          return !stopping_;
        });
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    if (!s.ok()) {
      std::cerr << "slice watch: " << s.message() << "; watching again\n";
      mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                           absl::Milliseconds(100));
    }
  }
}

SliceDevices SliceWatch::DevicesLocked() const {
  SliceDevices out;
  for (const auto& [slice, devices] : slices_) {
    for (const json& d : devices) out[d.value("name", "")] = d;
  }
  return out;
}

SliceDevices SliceWatch::Devices() const {
  absl::MutexLock lock(&mu_);
  return DevicesLocked();
}

void SliceWatch::Arm(SlicePredicate pred) {
  absl::MutexLock lock(&mu_);
  armed_ = std::move(pred);
  hit_ = absl::InfinitePast();
}

absl::Time SliceWatch::Await(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(this, &SliceWatch::HitLocked), timeout);
  const absl::Time hit = hit_;
  armed_ = nullptr;
  hit_ = absl::InfinitePast();
  return hit;
}

bool SliceWatch::WaitUntil(const SlicePredicate& pred, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::MutexLock lock(&mu_);
  for (;;) {
    if (pred(DevicesLocked())) return true;
    struct Changed {
      const uint64_t* events;
      uint64_t seen;
      bool operator()() const { return *events != seen; }
    } changed{&events_, events_};
    if (!mu_.AwaitWithDeadline(absl::Condition(&changed), deadline)) {
      return pred(DevicesLocked());
    }
  }
}

SlicePredicate DeviceCountIs(size_t n) {
  return [n](const SliceDevices& d) { return d.size() == n; };
}

SlicePredicate HasTaint(const std::string& name, const std::string& key) {
  return [name, key](const SliceDevices& d) {
    auto it = d.find(name);
    if (it == d.end()) return false;
    for (const json& t : it->second.value("taints", json::array())) {
      if (t.value("key", "") == key) return true;
    }
    return false;
  };
}

SlicePredicate HasNoTaint(const std::string& name) {
  return [name](const SliceDevices& d) {
    auto it = d.find(name);
    return it != d.end() && it->second.value("taints", json::array()).empty();
  };
}

}  // namespace gdp::bench
