#include "device/device_set.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace gdp {
namespace {

std::vector<Device> TwoDevices() {
  Device a, b;
  a.id = "GPU-a";
  b.id = "GPU-b";
  return {a, b};
}

TEST(DeviceSetTest, SetHealthPublishesNewGenerationAndNotifies) {
  DeviceSet set(TwoDevices());
  int calls = 0;
  uint64_t token = set.Subscribe([&] { ++calls; });
  auto before = set.Get();

  EXPECT_TRUE(set.SetHealth("GPU-b", Health::kUnhealthy, "XID 79"));
  auto after = set.Get();
  EXPECT_GT(after->generation, before->generation);
  EXPECT_EQ(after->Find("GPU-b")->health, Health::kUnhealthy);
  EXPECT_EQ(after->Find("GPU-b")->unhealthy_reason, "XID 79");
  EXPECT_EQ(before->Find("GPU-b")->health, Health::kHealthy);  // immutable
  EXPECT_EQ(calls, 1);

  // No change, unknown ID: no notification.
  EXPECT_FALSE(set.SetHealth("GPU-b", Health::kUnhealthy, "XID 79"));
  EXPECT_FALSE(set.SetHealth("GPU-z", Health::kUnhealthy, "x"));
  EXPECT_EQ(calls, 1);

  // Health goes back to healthy and the reason is cleared.
  EXPECT_TRUE(set.SetHealth("GPU-b", Health::kHealthy, "ignored"));
  EXPECT_EQ(set.Get()->Find("GPU-b")->health, Health::kHealthy);
  EXPECT_EQ(set.Get()->Find("GPU-b")->unhealthy_reason, "");
  EXPECT_EQ(calls, 2);

  set.Unsubscribe(token);
  set.Replace(TwoDevices());
  EXPECT_EQ(calls, 2);
}

TEST(DeviceSetTest, ConcurrentHealthChangesAreNotLost) {
  std::vector<Device> devices;
  for (int i = 0; i < 16; ++i) {
    Device d;
    d.id = "GPU-" + std::to_string(i);
    devices.push_back(d);
  }
  DeviceSet set(devices);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&set, t] {
      for (int i = t; i < 16; i += 4) {
        set.SetHealth("GPU-" + std::to_string(i), Health::kUnhealthy, "x");
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const Device& d : set.Get()->devices) {
    EXPECT_EQ(d.health, Health::kUnhealthy) << d.id;
  }
  EXPECT_EQ(set.Get()->generation, 17u);
}

TEST(DeviceSetTest, UnsubscribeWaitsForRunningCallback) {
  DeviceSet set(TwoDevices());
  std::atomic<bool> in_callback{false}, release{false}, finished{false};
  uint64_t token = set.Subscribe([&] {
    in_callback = true;
    while (!release) std::this_thread::yield();
    finished = true;
  });
  std::thread changer([&] { set.SetHealth("GPU-a", Health::kUnhealthy, "x"); });
  while (!in_callback) std::this_thread::yield();
  std::thread unsubscriber([&] {
    set.Unsubscribe(token);
    EXPECT_TRUE(finished.load());
  });
  release = true;
  unsubscriber.join();
  changer.join();
}

}  // namespace
}  // namespace gdp
