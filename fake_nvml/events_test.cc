// Event sets: registration, delivery of injected XID and ECC events to
// waiters, timeouts and the v1 wait.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <future>
#include <thread>

#include "absl/strings/str_cat.h"
#include "fake_nvml/machine.h"
#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

class EventsTest : public FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    UseControl();
    InitWith("dgx-a100.yaml");
    ASSERT_EQ(NVML(nvmlEventSetCreate)(&set_), NVML_SUCCESS);
  }

  void TearDown() override {
    NVML(nvmlEventSetFree)(set_);
    FakeNvmlTest::TearDown();
  }

  // Waits for one event with the v2 call.
  nvmlReturn_t Wait(nvmlEventData_t* data, unsigned timeout_ms) {
    return NVML(nvmlEventSetWait_v2)(set_, data, timeout_ms);
  }

  nvmlEventSet_t set_ = nullptr;
};

constexpr unsigned long long kAll = nvmlEventTypeXidCriticalError |
                                    nvmlEventTypeSingleBitEccError |
                                    nvmlEventTypeDoubleBitEccError;

TEST_F(EventsTest, XidWakesAWaiterOnAnotherThreadPromptly) {
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(3), kAll, set_),
            NVML_SUCCESS);
  auto waiter = std::async(std::launch::async, [this] {
    nvmlEventData_t data;
    std::memset(&data, 0, sizeof(data));
    const nvmlReturn_t result = Wait(&data, 5000);
    return std::make_tuple(result, data, steady_clock::now());
  });
  std::this_thread::sleep_for(milliseconds(20));  // let it block
  const auto injected = steady_clock::now();
  Control("xid 3 79");
  const auto [result, data, woke] = waiter.get();
  ASSERT_EQ(result, NVML_SUCCESS);
  EXPECT_LT(woke - injected, milliseconds(100));
  EXPECT_EQ(data.device, Device(3));
  EXPECT_EQ(data.eventType,
            static_cast<unsigned long long>(nvmlEventTypeXidCriticalError));
  EXPECT_EQ(data.eventData, 79u);
  EXPECT_EQ(data.gpuInstanceId, 0xFFFFFFFFu);
  EXPECT_EQ(data.computeInstanceId, 0xFFFFFFFFu);
}

TEST_F(EventsTest, EventsArriveInOrderWithTheirData) {
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(0), kAll, set_),
            NVML_SUCCESS);
  Control("xid 0 48 1 2");
  Control("ecc 0 single");
  Control("ecc 0 double");
  const struct {
    unsigned long long type;
    unsigned long long data;
    unsigned gi;
    unsigned ci;
  } kExpected[] = {
      {nvmlEventTypeXidCriticalError, 48, 1, 2},
      {nvmlEventTypeSingleBitEccError, 0, 0xFFFFFFFF, 0xFFFFFFFF},
      {nvmlEventTypeDoubleBitEccError, 0, 0xFFFFFFFF, 0xFFFFFFFF},
  };
  for (const auto& e : kExpected) {
    nvmlEventData_t data;
    ASSERT_EQ(Wait(&data, 2000), NVML_SUCCESS);
    EXPECT_EQ(data.device, Device(0));
    EXPECT_EQ(data.eventType, e.type);
    EXPECT_EQ(data.eventData, e.data);
    EXPECT_EQ(data.gpuInstanceId, e.gi);
    EXPECT_EQ(data.computeInstanceId, e.ci);
  }
  nvmlEventData_t data;
  EXPECT_EQ(Wait(&data, 0), NVML_ERROR_TIMEOUT);
}

TEST_F(EventsTest, OnlyRegisteredDevicesAndTypesAreQueued) {
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(
                Device(1), nvmlEventTypeDoubleBitEccError, set_),
            NVML_SUCCESS);
  nvmlEventSet_t other = nullptr;
  ASSERT_EQ(NVML(nvmlEventSetCreate)(&other), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(2), kAll, other),
            NVML_SUCCESS);
  Control("xid 1 31");      // type not registered on set_
  Control("ecc 2 double");  // device not registered on set_
  Control("ecc 1 double");  // the only one for set_
  nvmlEventData_t data;
  ASSERT_EQ(Wait(&data, 2000), NVML_SUCCESS);
  EXPECT_EQ(data.device, Device(1));
  EXPECT_EQ(data.eventType,
            static_cast<unsigned long long>(nvmlEventTypeDoubleBitEccError));
  EXPECT_EQ(Wait(&data, 0), NVML_ERROR_TIMEOUT);
  ASSERT_EQ(NVML(nvmlEventSetWait_v2)(other, &data, 2000), NVML_SUCCESS);
  EXPECT_EQ(data.device, Device(2));
  EXPECT_EQ(NVML(nvmlEventSetFree)(other), NVML_SUCCESS);
}

TEST_F(EventsTest, EachSetQueuesItsOwnEvents) {
  // As NVML: an event goes to every set recording its GPU and type at the
  // time, into each set's own queue; taking or freeing one set's events
  // leaves the other's.
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(0), kAll, set_),
            NVML_SUCCESS);
  Control("xid 0 31");
  nvmlEventData_t data;
  ASSERT_EQ(Wait(&data, 2000), NVML_SUCCESS);
  EXPECT_EQ(data.eventData, 31u);
  nvmlEventSet_t other = nullptr;
  ASSERT_EQ(NVML(nvmlEventSetCreate)(&other), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(0), kAll, other),
            NVML_SUCCESS);
  // The XID before `other` recorded GPU 0 is not queued there.
  EXPECT_EQ(NVML(nvmlEventSetWait_v2)(other, &data, 0), NVML_ERROR_TIMEOUT);
  Control("xid 0 43");  // queued on both
  ASSERT_EQ(NVML(nvmlEventSetWait_v2)(other, &data, 2000), NVML_SUCCESS);
  EXPECT_EQ(data.eventData, 43u);
  ASSERT_EQ(Wait(&data, 2000), NVML_SUCCESS);
  EXPECT_EQ(data.eventData, 43u);
  Control("xid 0 13");
  ASSERT_EQ(Wait(&data, 2000), NVML_SUCCESS);
  EXPECT_EQ(data.eventData, 13u);
  // Freed with the XID still queued on it: set_ goes on.
  EXPECT_EQ(NVML(nvmlEventSetFree)(other), NVML_SUCCESS);
  EXPECT_EQ(Wait(&data, 0), NVML_ERROR_TIMEOUT);
  Control("xid 0 45");
  ASSERT_EQ(Wait(&data, 2000), NVML_SUCCESS);
  EXPECT_EQ(data.eventData, 45u);
}

TEST_F(EventsTest, LosingAGpuQueuesXid79ThenWaitsAnswerGpuIsLost) {
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(1), kAll, set_),
            NVML_SUCCESS);
  const nvmlDevice_t gpu2 = Device(2);  // lookups fail once it is lost
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(gpu2, kAll, set_), NVML_SUCCESS);
  // A set without the GPU waits as before.
  nvmlEventSet_t other = nullptr;
  ASSERT_EQ(NVML(nvmlEventSetCreate)(&other), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(3), kAll, other),
            NVML_SUCCESS);
  // A waiter blocked before the loss sees the XID at once.
  auto waiter = std::async(std::launch::async, [this] {
    nvmlEventData_t data;
    std::memset(&data, 0, sizeof(data));
    const nvmlReturn_t result = Wait(&data, 5000);
    return std::make_pair(result, data);
  });
  std::this_thread::sleep_for(milliseconds(20));
  Control("lose 2");
  const auto [result, data] = waiter.get();
  ASSERT_EQ(result, NVML_SUCCESS);
  EXPECT_EQ(data.device, gpu2);
  EXPECT_EQ(data.eventType,
            static_cast<unsigned long long>(nvmlEventTypeXidCriticalError));
  EXPECT_EQ(data.eventData, 79u);
  nvmlEventData_t next;
  EXPECT_EQ(Wait(&next, 0), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(Wait(&next, 1000), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(NVML(nvmlEventSetWait_v2)(other, &next, 0), NVML_ERROR_TIMEOUT);
  Control("lose 2");  // again: nothing more is queued
  Control("restore 2");
  // The lines apply in order: once the GPU answers, both were applied.
  ASSERT_TRUE(Eventually([&] {
    nvmlDevice_t device = nullptr;
    return NVML(nvmlDeviceGetHandleByIndex_v2)(2, &device) == NVML_SUCCESS;
  }));
  EXPECT_EQ(Wait(&next, 10), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(NVML(nvmlEventSetFree)(other), NVML_SUCCESS);
}

TEST_F(EventsTest, WaitTimesOut) {
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(0), kAll, set_),
            NVML_SUCCESS);
  nvmlEventData_t data;
  const auto start = steady_clock::now();
  EXPECT_EQ(Wait(&data, 30), NVML_ERROR_TIMEOUT);
  const auto waited = steady_clock::now() - start;
  EXPECT_GE(waited, milliseconds(30));
  EXPECT_LT(waited, milliseconds(1000));
}

TEST_F(EventsTest, UnsupportedTypesAreNotRegistered) {
  // The SBE storm event came with R560: the R550 driver of dgx-a100 lacks it.
  EXPECT_EQ(NVML(nvmlDeviceRegisterEvents)(
                Device(0), kAll | kEventSingleBitEccErrorStorm, set_),
            NVML_ERROR_NOT_SUPPORTED);
  Control("xid 0 13");  // nothing was registered
  nvmlEventData_t data;
  EXPECT_EQ(Wait(&data, 50), NVML_ERROR_TIMEOUT);
}

TEST_F(EventsTest, SupportedTypesComeFromTheFile) {
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  UseMachine(WriteFile("events.yaml", R"(driver_version: "550.54.15"
cuda_driver_version: 12040
gpus:
  - name: Tesla T4
    uuid: GPU-11111111-2222-3333-4444-555555555555
    minor: 0
    bus_id: "0000:3B:00.0"
    pci_device_id: 0x1EB810DE
    pci_subsystem_id: 0x12A210DE
    memory_mib: 15360
    compute_capability: "7.5"
    numa_node: 0
    host_bridge: 0
    supported_events: [xid, pstate]
)"));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlEventSetCreate)(&set_), NVML_SUCCESS);
  unsigned long long types = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetSupportedEventTypes)(Device(0), &types),
            NVML_SUCCESS);
  EXPECT_EQ(types, static_cast<unsigned long long>(
                       nvmlEventTypeXidCriticalError | nvmlEventTypePState));
  EXPECT_EQ(NVML(nvmlDeviceRegisterEvents)(
                Device(0), nvmlEventTypeSingleBitEccError, set_),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(
      NVML(nvmlDeviceRegisterEvents)(Device(0), nvmlEventTypePState, set_),
      NVML_SUCCESS);
}

TEST_F(EventsTest, DefaultTypesAreThoseTheDriverKnows) {
  // What nvmlDeviceGetSupportedEventTypes answered on an H100 with driver
  // 580.159.04 (nvmlEventTypeAll), and the R550 set; MigConfigChange only
  // for MIG-capable GPUs.
  const struct {
    const char* driver;
    bool mig_capable;
    unsigned long long events;
  } kCases[] = {
      {"580.159.04", true, 0xFF9F}, {"565.57.01", true, 0xFF9F},
      {"560.35.03", true, 0x3F9F},  {"560.35.03", false, 0x3E9F},
      {"550.54.15", true, 0x19F},   {"550.54.15", false, 0x9F},
      {"440.33.01", true, 0x9F},    {"615.20.01", false, 0xFE9F},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(absl::StrCat(c.driver, c.mig_capable ? " MIG" : ""));
    ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
    UseMachine(WriteFile("events.yaml",
                         absl::StrCat("driver_version: \"", c.driver, R"("
cuda_driver_version: 12040
gpus:
  - name: NVIDIA H100 80GB HBM3
    uuid: GPU-11111111-2222-3333-4444-555555555555
    minor: 0
    bus_id: "0000:3B:00.0"
    pci_device_id: 0x233010DE
    pci_subsystem_id: 0x16C110DE
    memory_mib: 81559
    compute_capability: "9.0"
    numa_node: -1
    host_bridge: 0
    mig_capable: )",
                                      c.mig_capable ? "true" : "false", "\n")));
    ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
    ASSERT_EQ(NVML(nvmlEventSetCreate)(&set_), NVML_SUCCESS);
    unsigned long long types = 0;
    ASSERT_EQ(NVML(nvmlDeviceGetSupportedEventTypes)(Device(0), &types),
              NVML_SUCCESS);
    EXPECT_EQ(types, c.events);
    // All of them register; the fake delivers only XIDs and ECC errors.
    EXPECT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(0), types, set_),
              NVML_SUCCESS);
  }
}

TEST_F(EventsTest, EveryNvmlTypeCanBeNamed) {
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  UseMachine(WriteFile("events.yaml", R"(driver_version: "550.54.15"
cuda_driver_version: 12040
gpus:
  - name: Tesla T4
    uuid: GPU-11111111-2222-3333-4444-555555555555
    minor: 0
    bus_id: "0000:3B:00.0"
    pci_device_id: 0x1EB810DE
    pci_subsystem_id: 0x12A210DE
    memory_mib: 15360
    compute_capability: "7.5"
    numa_node: 0
    host_bridge: 0
    supported_events: [single_bit_ecc, double_bit_ecc, pstate, xid, clock,
                       power_source_change, mig_config_change,
                       single_bit_ecc_storm, dram_retirement,
                       dram_retirement_failure, non_fatal_poison,
                       fatal_poison, gpu_unavailable, gpu_recovery_action]
)"));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlEventSetCreate)(&set_), NVML_SUCCESS);
  unsigned long long types = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetSupportedEventTypes)(Device(0), &types),
            NVML_SUCCESS);
  EXPECT_EQ(types, 0xFF9Fu);  // nvmlEventTypeAll
}

TEST_F(EventsTest, V1WaitWritesOnlyTheV1Struct) {
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(5), kAll, set_),
            NVML_SUCCESS);
  Control("xid 5 94 3 4");
  unsigned char bytes[sizeof(nvmlEventData_t)];
  std::memset(bytes, 0xAB, sizeof(bytes));
  auto* data = reinterpret_cast<nvmlEventData_t*>(bytes);
  ASSERT_EQ(NVML(nvmlEventSetWait)(set_, data, 2000), NVML_SUCCESS);
  EXPECT_EQ(data->device, Device(5));
  EXPECT_EQ(data->eventData, 94u);
  for (size_t i = offsetof(nvmlEventData_t, gpuInstanceId); i < sizeof(bytes);
       ++i) {
    ASSERT_EQ(bytes[i], 0xAB) << "byte " << i << " was written";
  }
}

TEST_F(EventsTest, BadArguments) {
  nvmlEventData_t data;
  EXPECT_EQ(NVML(nvmlEventSetCreate)(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(0), kAll, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceRegisterEvents)(nullptr, kAll, set_),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Wait(nullptr, 0), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlEventSetWait_v2)(nullptr, &data, 0),
            NVML_ERROR_INVALID_ARGUMENT);
  nvmlEventSet_t freed = nullptr;
  ASSERT_EQ(NVML(nvmlEventSetCreate)(&freed), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlEventSetFree)(freed), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlEventSetFree)(freed), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(EventsTest, ShutdownEndsAWait) {
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(0), kAll, set_),
            NVML_SUCCESS);
  auto waiter = std::async(std::launch::async, [this] {
    nvmlEventData_t data;
    return Wait(&data, 5000);
  });
  std::this_thread::sleep_for(milliseconds(20));
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  EXPECT_EQ(waiter.get(), NVML_ERROR_UNINITIALIZED);
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
