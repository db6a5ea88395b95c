#include "device_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "test_support.h"

namespace gdp::dpctl {
namespace {

using ::gdp::dpctl::testing::MakeDevice;
using ::gdp::dpctl::testing::RecordingSink;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A DevicePluginApi without gRPC that records requests.
class FakeApi : public DevicePluginApi {
 public:
  absl::StatusOr<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const v1beta1::PreferredAllocationRequest& request) override {
    absl::MutexLock lock(&mu_);
    preferred_requests.push_back(request);
    if (!preferred_error.ok()) return preferred_error;
    v1beta1::PreferredAllocationResponse response;
    auto* container = response.add_container_responses();
    for (const std::string& id : preferred) container->add_deviceids(id);
    return response;
  }
  absl::StatusOr<v1beta1::AllocateResponse> Allocate(
      const v1beta1::AllocateRequest& request) override {
    absl::MutexLock lock(&mu_);
    allocate_requests.push_back(request);
    if (!allocate_error.ok()) return allocate_error;
    v1beta1::AllocateResponse response;
    (*response.add_container_responses()->mutable_envs())["N"] = "1";
    return response;
  }
  absl::Status PreStartContainer(
      const v1beta1::PreStartContainerRequest& request) override {
    absl::MutexLock lock(&mu_);
    prestart_requests.push_back(request);
    return absl::OkStatus();
  }
  void Cancel() override {
    absl::MutexLock lock(&mu_);
    ++cancels;
  }

  absl::Mutex mu_;
  std::vector<std::string> preferred;
  absl::Status preferred_error;
  absl::Status allocate_error;
  std::vector<v1beta1::PreferredAllocationRequest> preferred_requests;
  std::vector<v1beta1::AllocateRequest> allocate_requests;
  std::vector<v1beta1::PreStartContainerRequest> prestart_requests;
  int cancels = 0;
};

std::vector<std::string> Ids(
    const google::protobuf::RepeatedPtrField<std::string>& ids) {
  return {ids.begin(), ids.end()};
}

class DeviceManagerTest : public ::testing::Test {
 protected:
  // Registers `api` for nvidia.com/gpu with devices a (Healthy), b
  // (Unhealthy), c, d (Healthy).
  uint64_t AddGpus(bool preferred, bool prestart = false) {
    v1beta1::DevicePluginOptions options;
    options.set_get_preferred_allocation_available(preferred);
    options.set_pre_start_required(prestart);
    uint64_t generation = manager_.AddPlugin(kGpu, options, api_);
    manager_.UpdateDevices(
        kGpu, generation,
        {MakeDevice("a", "Healthy", {0}), MakeDevice("b", "Unhealthy", {0}),
         MakeDevice("c", "Healthy", {1}), MakeDevice("d", "Healthy", {1})});
    return generation;
  }

  static constexpr char kGpu[] = "nvidia.com/gpu";
  RecordingSink sink_;
  DeviceManager manager_{&sink_};
  std::shared_ptr<FakeApi> api_ = std::make_shared<FakeApi>();
};

TEST_F(DeviceManagerTest, DevicesEventCountsHealthy) {
  AddGpus(false);
  Json devices = sink_.WaitForEvent("devices");
  EXPECT_EQ(devices["total"], 4);
  EXPECT_EQ(devices["healthy"], 3);
  EXPECT_EQ(devices["devices"][1].dump(),
            R"({"id":"b","health":"Unhealthy","numa":[0]})");
  EXPECT_EQ(manager_.HealthyFreeCount(kGpu), 3);
  EXPECT_EQ(manager_.HealthyFreeCount("example.com/none"), 0);
}

TEST_F(DeviceManagerTest, WithoutPreferenceTakesFirstHealthyFree) {
  AddGpus(false);
  auto got = manager_.Allocate(kGpu, 2, "p1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre("a", "c"));
  EXPECT_THAT(api_->preferred_requests, IsEmpty());
  ASSERT_EQ(api_->allocate_requests.size(), 1u);
  ASSERT_EQ(api_->allocate_requests[0].container_requests_size(), 1);
  EXPECT_THAT(
      Ids(api_->allocate_requests[0].container_requests(0).devices_ids()),
      ElementsAre("a", "c"));
  Json allocate = sink_.WaitForEvent("allocate");
  EXPECT_EQ(allocate["pod"], "p1");
  EXPECT_EQ(allocate["response"]["envs"]["N"], "1");
  EXPECT_EQ(manager_.HealthyFreeCount(kGpu), 1);
}

TEST_F(DeviceManagerTest, PreferredAnswerIsIntersectedAndFilled) {
  AddGpus(true);
  // "b" is unhealthy and "zz" unknown: both dropped; one more is filled in
  // from the available devices in order.
  api_->preferred = {"b", "zz", "d"};
  auto got = manager_.Allocate(kGpu, 2, "p1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre("d", "a"));
  ASSERT_EQ(api_->preferred_requests.size(), 1u);
  const auto& request = api_->preferred_requests[0].container_requests(0);
  EXPECT_THAT(Ids(request.available_deviceids()), ElementsAre("a", "c", "d"));
  EXPECT_THAT(Ids(request.must_include_deviceids()), IsEmpty());
  EXPECT_EQ(request.allocation_size(), 2);
  Json preferred = sink_.WaitForEvent("preferred");
  EXPECT_EQ(preferred.dump(),
            R"({"event":"preferred","resource":"nvidia.com/gpu","pod":"p1",)"
            R"("available":["a","c","d"],"size":2,"devices":["b","zz","d"]})");
}

TEST_F(DeviceManagerTest, PreferredAnswerTooLongIsCut) {
  AddGpus(true);
  api_->preferred = {"d", "c", "a"};
  auto got = manager_.Allocate(kGpu, 2, "p1");
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre("d", "c"));
}

TEST_F(DeviceManagerTest, TakenDevicesAreNotOfferedAgain) {
  AddGpus(true);
  api_->preferred = {"a"};
  ASSERT_TRUE(manager_.Allocate(kGpu, 1, "p1").ok());
  auto got = manager_.Allocate(kGpu, 1, "p2");
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre("c"));
  EXPECT_THAT(Ids(api_->preferred_requests[1]
                      .container_requests(0)
                      .available_deviceids()),
              ElementsAre("c", "d"));
}

TEST_F(DeviceManagerTest, RefusesWhenTooFewHealthyFree) {
  AddGpus(false);
  ASSERT_TRUE(manager_.Allocate(kGpu, 2, "p1").ok());
  auto got = manager_.Allocate(kGpu, 2, "p2");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted);
  Json failed = sink_.WaitForEvent("allocate_failed");
  EXPECT_EQ(failed.dump(),
            R"({"event":"allocate_failed","resource":"nvidia.com/gpu",)"
            R"("pod":"p2","error":"only 1 healthy free device, 2 wanted"})");
  EXPECT_EQ(api_->allocate_requests.size(), 1u);

  EXPECT_EQ(manager_.Allocate("example.com/x", 1, "p3").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(manager_.Allocate(kGpu, 0, "p4").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(DeviceManagerTest, FreeReturnsDevices) {
  AddGpus(false);
  ASSERT_TRUE(manager_.Allocate(kGpu, 3, "p1").ok());
  EXPECT_EQ(manager_.HealthyFreeCount(kGpu), 0);
  ASSERT_TRUE(manager_.Free("p1").ok());
  Json freed = sink_.WaitForEvent("freed");
  EXPECT_EQ(freed.dump(),
            R"({"event":"freed","resource":"nvidia.com/gpu","pod":"p1",)"
            R"("devices":["a","c","d"]})");
  EXPECT_EQ(manager_.HealthyFreeCount(kGpu), 3);
  EXPECT_EQ(manager_.Free("p1").code(), absl::StatusCode::kNotFound);
}

TEST_F(DeviceManagerTest, PluginErrorsFailTheAllocation) {
  AddGpus(true);
  api_->preferred_error = absl::UnavailableError("down");
  EXPECT_EQ(manager_.Allocate(kGpu, 1, "p1").status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(sink_.WaitForEvent("preferred")["error"].dump(),
            R"({"code":"UNAVAILABLE","message":"down"})");
  EXPECT_EQ(sink_.WaitForEvent("allocate_failed")["error"],
            "GetPreferredAllocation failed: UNAVAILABLE: down");

  api_->preferred_error = absl::OkStatus();
  api_->allocate_error = absl::InvalidArgumentError("bad id");
  EXPECT_EQ(manager_.Allocate(kGpu, 1, "p1").status().code(),
            absl::StatusCode::kInvalidArgument);
  Json allocate = sink_.WaitForEvent("allocate");
  EXPECT_EQ(allocate["error"].dump(),
            R"({"code":"INVALID_ARGUMENT","message":"bad id"})");
  EXPECT_FALSE(allocate.contains("response"));
  EXPECT_EQ(manager_.HealthyFreeCount(kGpu), 3);
}

TEST_F(DeviceManagerTest, PreStartFollowsAllocateWhenRequired) {
  AddGpus(false, /*prestart=*/true);
  ASSERT_TRUE(manager_.Allocate(kGpu, 1, "p1").ok());
  ASSERT_EQ(api_->prestart_requests.size(), 1u);
  EXPECT_THAT(Ids(api_->prestart_requests[0].devices_ids()), ElementsAre("a"));
  EXPECT_EQ(sink_.WaitForEvent("prestart")["ok"], true);
}

TEST_F(DeviceManagerTest, StreamCloseMarksEverythingUnhealthy) {
  uint64_t generation = AddGpus(false);
  manager_.StreamClosed(kGpu, generation, absl::UnavailableError("gone"));
  EXPECT_EQ(sink_.WaitForEvent("stream_closed")["error"], "UNAVAILABLE: gone");
  std::vector<Json> devices = sink_.Events("devices");
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[1]["healthy"], 0);
  EXPECT_EQ(devices[1]["total"], 4);
  for (const Json& d : devices[1]["devices"])
    EXPECT_EQ(d["health"], "Unhealthy");
  EXPECT_EQ(manager_.HealthyFreeCount(kGpu), 0);
}

TEST_F(DeviceManagerTest, ReplacedRegistrationIsIgnoredAndCancelled) {
  uint64_t old_generation = AddGpus(false);
  auto replacement = std::make_shared<FakeApi>();
  uint64_t generation =
      manager_.AddPlugin(kGpu, v1beta1::DevicePluginOptions(), replacement);
  EXPECT_NE(generation, old_generation);
  EXPECT_EQ(api_->cancels, 1);
  // The old stream's end and messages change nothing.
  manager_.StreamClosed(kGpu, old_generation, absl::CancelledError());
  manager_.UpdateDevices(kGpu, old_generation, {});
  EXPECT_THAT(sink_.Events("stream_closed"), IsEmpty());
  EXPECT_EQ(manager_.HealthyFreeCount(kGpu), 3);
  // The new plugin's first list replaces the old one.
  manager_.UpdateDevices(kGpu, generation, {MakeDevice("x")});
  auto got = manager_.Allocate(kGpu, 1, "p1");
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre("x"));
  EXPECT_EQ(replacement->allocate_requests.size(), 1u);
}

TEST_F(DeviceManagerTest, StopWakesWaitersAndCancelsPlugins) {
  AddGpus(false);
  const uint64_t seen = manager_.version();
  bool changed = true;
  std::thread waiter([&] { changed = manager_.AwaitChange(seen); });
  manager_.Stop();
  waiter.join();
  EXPECT_FALSE(changed);
  EXPECT_EQ(api_->cancels, 1);
  EXPECT_EQ(manager_.Allocate(kGpu, 1, "p1").status().code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(manager_.AddPlugin(kGpu, {}, std::make_shared<FakeApi>()), 0u);
}

TEST_F(DeviceManagerTest, AwaitChangeSeesUpdates) {
  const uint64_t seen = manager_.version();
  std::thread updater([&] { AddGpus(false); });
  EXPECT_TRUE(manager_.AwaitChange(seen));
  updater.join();
}

}  // namespace
}  // namespace gdp::dpctl
