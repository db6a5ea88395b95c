// Multi-Instance GPU: MIG device handles, GPU and compute instances,
// profiles, and the argument and handle rules of every MIG call.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

using ::testing::MatchesRegex;

constexpr char kH100Gpu0Uuid[] = "GPU-7c3d1e5a-42b8-9f06-d1a3-5e8b2c4f6a90";

class MigTest : public FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    UseControl();
    InitWith("h100-mig.yaml");
  }

  // MIG device `index` of GPU `gpu`; fails the test on error.
  nvmlDevice_t Mig(unsigned gpu, unsigned index) {
    nvmlDevice_t mig = nullptr;
    EXPECT_EQ(
        NVML(nvmlDeviceGetMigDeviceHandleByIndex)(Device(gpu), index, &mig),
        NVML_SUCCESS);
    return mig;
  }

  std::string Uuid(nvmlDevice_t device) {
    char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    EXPECT_EQ(NVML(nvmlDeviceGetUUID)(device, text, sizeof(text)),
              NVML_SUCCESS);
    return text;
  }

  nvmlGpuInstance_t GpuInstance(unsigned id) {
    nvmlGpuInstance_t gi = nullptr;
    EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceById)(Device(0), id, &gi),
              NVML_SUCCESS);
    return gi;
  }
};

TEST_F(MigTest, MaxMigDeviceCount) {
  unsigned count = 99;
  ASSERT_EQ(NVML(nvmlDeviceGetMaxMigDeviceCount)(Device(0), &count),
            NVML_SUCCESS);
  EXPECT_EQ(count, 7u);
  ASSERT_EQ(NVML(nvmlDeviceGetMaxMigDeviceCount)(Device(1), &count),
            NVML_SUCCESS);
  EXPECT_EQ(count, 0u) << "MIG disabled";
  EXPECT_EQ(NVML(nvmlDeviceGetMaxMigDeviceCount)(Device(0), nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetMaxMigDeviceCount)(Mig(0, 0), &count),
            NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(MigTest, MigDeviceHandleByIndex) {
  const struct {
    unsigned gpu;
    unsigned index;
    bool null_out;
    nvmlReturn_t want;
  } kCases[] = {
      {0, 0, false, NVML_SUCCESS},
      {0, 3, false, NVML_SUCCESS},
      {0, 4, false, NVML_ERROR_NOT_FOUND},
      {0, 6, false, NVML_ERROR_NOT_FOUND},
      {0, 7, false, NVML_ERROR_INVALID_ARGUMENT},
      {0, 0, true, NVML_ERROR_INVALID_ARGUMENT},
      {1, 0, false, NVML_ERROR_NOT_SUPPORTED},
  };
  for (const auto& c : kCases) {
    nvmlDevice_t mig = nullptr;
    EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(
                  Device(c.gpu), c.index, c.null_out ? nullptr : &mig),
              c.want)
        << "GPU " << c.gpu << " index " << c.index;
  }
  EXPECT_EQ(Mig(0, 2), Mig(0, 2)) << "stable within a session";
  EXPECT_NE(Mig(0, 0), Device(0));
  nvmlDevice_t mig = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(Mig(0, 0), 0, &mig),
            NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(MigTest, EveryMigDeviceDescribesItself) {
  const struct {
    const char* name;
    unsigned gi;
    unsigned multiprocessors;
    unsigned copy, decoders, jpegs, ofas;
    unsigned gi_slices;
    unsigned long long memory_mib;
  } kDevices[] = {
      {"NVIDIA H100 80GB HBM3 MIG 3g.40gb", 2, 60, 3, 3, 3, 0, 3, 40448},
      {"NVIDIA H100 80GB HBM3 MIG 2g.20gb", 3, 32, 2, 2, 2, 0, 2, 20096},
      {"NVIDIA H100 80GB HBM3 MIG 1g.10gb", 9, 16, 1, 1, 1, 0, 1, 9984},
      {"NVIDIA H100 80GB HBM3 MIG 1g.10gb", 10, 16, 1, 1, 1, 0, 1, 9984},
  };
  std::set<std::string> uuids;
  for (unsigned j = 0; j < 4; ++j) {
    SCOPED_TRACE(j);
    const auto& want = kDevices[j];
    const nvmlDevice_t mig = Mig(0, j);
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    ASSERT_EQ(NVML(nvmlDeviceGetName)(mig, name, sizeof(name)), NVML_SUCCESS);
    EXPECT_STREQ(name, want.name);
    const std::string uuid = Uuid(mig);
    EXPECT_THAT(uuid, MatchesRegex("MIG-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-"
                                   "[89ab][0-9a-f]{3}-[0-9a-f]{12}"));
    uuids.insert(uuid);
    unsigned value = 99;
    ASSERT_EQ(NVML(nvmlDeviceIsMigDeviceHandle)(mig, &value), NVML_SUCCESS);
    EXPECT_EQ(value, 1u);
    ASSERT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(mig, &value), NVML_SUCCESS);
    EXPECT_EQ(value, want.gi);
    ASSERT_EQ(NVML(nvmlDeviceGetComputeInstanceId)(mig, &value), NVML_SUCCESS);
    EXPECT_EQ(value, 0u);
    ASSERT_EQ(NVML(nvmlDeviceGetIndex)(mig, &value), NVML_SUCCESS);
    EXPECT_EQ(value, j);
    nvmlDevice_t parent = nullptr;
    ASSERT_EQ(NVML(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(mig, &parent),
              NVML_SUCCESS);
    EXPECT_EQ(parent, Device(0));
    nvmlDeviceAttributes_t attributes;
    ASSERT_EQ(NVML(nvmlDeviceGetAttributes_v2)(mig, &attributes), NVML_SUCCESS);
    EXPECT_EQ(attributes.multiprocessorCount, want.multiprocessors);
    EXPECT_EQ(attributes.sharedCopyEngineCount, want.copy);
    EXPECT_EQ(attributes.sharedDecoderCount, want.decoders);
    EXPECT_EQ(attributes.sharedEncoderCount, 0u);
    EXPECT_EQ(attributes.sharedJpegCount, want.jpegs);
    EXPECT_EQ(attributes.sharedOfaCount, want.ofas);
    EXPECT_EQ(attributes.gpuInstanceSliceCount, want.gi_slices);
    EXPECT_EQ(attributes.computeInstanceSliceCount, want.gi_slices);
    EXPECT_EQ(attributes.memorySizeMB, want.memory_mib);
    nvmlMemory_t memory;
    ASSERT_EQ(NVML(nvmlDeviceGetMemoryInfo)(mig, &memory), NVML_SUCCESS);
    EXPECT_EQ(memory.total, want.memory_mib << 20);
    EXPECT_EQ(memory.free, memory.total);
    nvmlMemory_v2_t v2;
    v2.version = nvmlMemory_v2;
    ASSERT_EQ(NVML(nvmlDeviceGetMemoryInfo_v2)(mig, &v2), NVML_SUCCESS);
    EXPECT_EQ(v2.total, want.memory_mib << 20);
    int major = 0;
    int minor = 0;
    ASSERT_EQ(NVML(nvmlDeviceGetCudaComputeCapability)(mig, &major, &minor),
              NVML_SUCCESS);
    EXPECT_EQ(major, 9);
    // The UUID finds the same handle, as does the older MIG-GPU-... form.
    nvmlDevice_t found = nullptr;
    ASSERT_EQ(NVML(nvmlDeviceGetHandleByUUID)(uuid.c_str(), &found),
              NVML_SUCCESS);
    EXPECT_EQ(found, mig);
    const std::string legacy = std::string("MIG-") + kH100Gpu0Uuid + "/" +
                               std::to_string(want.gi) + "/0";
    ASSERT_EQ(NVML(nvmlDeviceGetHandleByUUID)(legacy.c_str(), &found),
              NVML_SUCCESS);
    EXPECT_EQ(found, mig);
  }
  EXPECT_EQ(uuids.size(), 4u) << "MIG UUIDs are not distinct";
}

TEST_F(MigTest, MigUuidsAreStableAcrossSessions) {
  const std::string before = Uuid(Mig(0, 1));
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  InitWith("h100-mig.yaml");
  EXPECT_EQ(Uuid(Mig(0, 1)), before);
}

TEST_F(MigTest, GpuHandlesOnMigDeviceQueries) {
  unsigned value = 99;
  ASSERT_EQ(NVML(nvmlDeviceIsMigDeviceHandle)(Device(0), &value), NVML_SUCCESS);
  EXPECT_EQ(value, 0u);
  EXPECT_EQ(NVML(nvmlDeviceIsMigDeviceHandle)(Device(0), nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(Device(0), &value),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetComputeInstanceId)(Device(1), &value),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(Mig(0, 0), nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  nvmlDevice_t parent = nullptr;
  EXPECT_EQ(
      NVML(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(Device(0), &parent),
      NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(
      NVML(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(Mig(0, 0), nullptr),
      NVML_ERROR_INVALID_ARGUMENT);
  nvmlDeviceAttributes_t attributes;
  EXPECT_EQ(NVML(nvmlDeviceGetAttributes_v2)(Device(0), &attributes),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetAttributes_v2)(Mig(0, 0), nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(MigTest, MigHandlesOnGpuOnlyQueries) {
  const nvmlDevice_t mig = Mig(0, 0);
  unsigned value = 0;
  unsigned pending = 0;
  nvmlPciInfo_t pci;
  unsigned long long events = 0;
  nvmlEnableState_t state;
  nvmlIntNvLinkDeviceType_t link_type;
  nvmlGpuTopologyLevel_t level;
  nvmlGpuInstanceProfileInfo_t profile;
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(NVML(nvmlEventSetCreate)(&set), NVML_SUCCESS);
  const struct {
    const char* call;
    nvmlReturn_t got;
  } kCases[] = {
      {"GetMinorNumber", NVML(nvmlDeviceGetMinorNumber)(mig, &value)},
      {"GetPciInfo_v3", NVML(nvmlDeviceGetPciInfo_v3)(mig, &pci)},
      {"GetMigMode", NVML(nvmlDeviceGetMigMode)(mig, &value, &pending)},
      {"GetSupportedEventTypes",
       NVML(nvmlDeviceGetSupportedEventTypes)(mig, &events)},
      {"RegisterEvents",
       NVML(nvmlDeviceRegisterEvents)(mig, nvmlEventTypeXidCriticalError, set)},
      {"GetNvLinkState", NVML(nvmlDeviceGetNvLinkState)(mig, 0, &state)},
      {"GetNvLinkRemotePciInfo_v2",
       NVML(nvmlDeviceGetNvLinkRemotePciInfo_v2)(mig, 0, &pci)},
      {"GetNvLinkRemoteDeviceType",
       NVML(nvmlDeviceGetNvLinkRemoteDeviceType)(mig, 0, &link_type)},
      {"Topology(mig, gpu)",
       NVML(nvmlDeviceGetTopologyCommonAncestor)(mig, Device(1), &level)},
      {"Topology(gpu, mig)",
       NVML(nvmlDeviceGetTopologyCommonAncestor)(Device(1), mig, &level)},
      {"GetGpuInstanceProfileInfo",
       NVML(nvmlDeviceGetGpuInstanceProfileInfo)(
           mig, NVML_GPU_INSTANCE_PROFILE_1_SLICE, &profile)},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(c.got, NVML_ERROR_NOT_SUPPORTED) << c.call;
  }
  EXPECT_EQ(NVML(nvmlEventSetFree)(set), NVML_SUCCESS);
}

TEST_F(MigTest, GpuInstanceProfileInfo) {
  const struct {
    unsigned profile;
    unsigned id, slices, instances, sms, copy, decoders, jpegs, ofas;
    unsigned long long memory_mib;
  } kProfiles[] = {
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 7, 16, 1, 1, 1, 0, 9984},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 1, 16, 1, 1, 1, 1, 9984},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, 1, 4, 26, 1, 1, 1, 0, 20096},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 3, 32, 2, 2, 2, 0, 20096},
      {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 2, 60, 3, 3, 3, 0, 40448},
      {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 1, 64, 4, 4, 4, 0, 40448},
      {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 1, 132, 8, 7, 7, 1, 81152},
  };
  for (const auto& p : kProfiles) {
    SCOPED_TRACE(p.profile);
    // Known whether MIG is enabled (GPU 0) or not (GPU 1).
    for (unsigned gpu : {0u, 1u}) {
      nvmlGpuInstanceProfileInfo_t info;
      ASSERT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfo)(Device(gpu),
                                                          p.profile, &info),
                NVML_SUCCESS);
      EXPECT_EQ(info.id, p.id);
      EXPECT_EQ(info.sliceCount, p.slices);
      EXPECT_EQ(info.instanceCount, p.instances);
      EXPECT_EQ(info.multiprocessorCount, p.sms);
      EXPECT_EQ(info.copyEngineCount, p.copy);
      EXPECT_EQ(info.decoderCount, p.decoders);
      EXPECT_EQ(info.encoderCount, 0u);
      EXPECT_EQ(info.jpegCount, p.jpegs);
      EXPECT_EQ(info.ofaCount, p.ofas);
      EXPECT_EQ(info.memorySizeMB, p.memory_mib);
      EXPECT_EQ(info.isP2pSupported, 0u);
    }
  }
  nvmlGpuInstanceProfileInfo_t info;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfo)(
                Device(0), NVML_GPU_INSTANCE_PROFILE_8_SLICE, &info),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfo)(
                Device(0), NVML_GPU_INSTANCE_PROFILE_COUNT, &info),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfo)(
                Device(0), NVML_GPU_INSTANCE_PROFILE_1_SLICE, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(MigTest, ProfileIndexesTheDriverDoesNotKnow) {
  // NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX came with R595: driver
  // 580.159.04 answered INVALID_ARGUMENT for it on an H100, and
  // NOT_SUPPORTED for the other profiles the H100 lacks. A driver that
  // knows the index answers NOT_SUPPORTED for a GPU without the profile.
  const struct {
    const char* machine;
    nvmlReturn_t gfx3;
  } kCases[] = {
      {"h100-vm-580.yaml", NVML_ERROR_INVALID_ARGUMENT},
      {"h100-mig.yaml", NVML_ERROR_INVALID_ARGUMENT},    // R550
      {"hgx-h100-r615.yaml", NVML_ERROR_NOT_SUPPORTED},  // R615
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.machine);
    ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
    InitWith(c.machine);
    nvmlGpuInstanceProfileInfo_t info;
    EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfo)(
                  Device(0), NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX, &info),
              c.gfx3);
    for (unsigned p = NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX;
         p < NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX; ++p) {
      EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfo)(Device(0), p, &info),
                NVML_ERROR_NOT_SUPPORTED)
          << p;
    }
  }
}

TEST_F(MigTest, GpuInstances) {
  const struct {
    unsigned profile_id;
    std::vector<unsigned> ids;
  } kCases[] = {{9, {2}}, {14, {3}}, {19, {9, 10}}, {15, {}}, {0, {}}};
  for (const auto& c : kCases) {
    nvmlGpuInstance_t gis[7];
    unsigned count = 99;
    ASSERT_EQ(
        NVML(nvmlDeviceGetGpuInstances)(Device(0), c.profile_id, gis, &count),
        NVML_SUCCESS);
    ASSERT_EQ(count, c.ids.size()) << c.profile_id;
    for (unsigned k = 0; k < count; ++k) {
      nvmlGpuInstanceInfo_t info;
      ASSERT_EQ(NVML(nvmlGpuInstanceGetInfo)(gis[k], &info), NVML_SUCCESS);
      EXPECT_EQ(info.id, c.ids[k]);
      EXPECT_EQ(info.profileId, c.profile_id);
      EXPECT_EQ(info.device, Device(0));
      EXPECT_EQ(gis[k], GpuInstance(c.ids[k]));
    }
  }
  nvmlGpuInstance_t gis[7];
  unsigned count = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstances)(Device(0), 99, gis, &count),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstances)(Device(0), 9, nullptr, &count),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstances)(Device(0), 9, gis, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstances)(Device(1), 9, gis, &count),
            NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(MigTest, GpuInstanceByIdAndInfo) {
  const struct {
    unsigned id;
    unsigned profile_id;
    unsigned start, size;
  } kInstances[] = {{2, 9, 4, 4}, {3, 14, 0, 2}, {9, 19, 2, 1}, {10, 19, 3, 1}};
  for (const auto& want : kInstances) {
    nvmlGpuInstanceInfo_t info;
    ASSERT_EQ(NVML(nvmlGpuInstanceGetInfo)(GpuInstance(want.id), &info),
              NVML_SUCCESS);
    EXPECT_EQ(info.device, Device(0));
    EXPECT_EQ(info.id, want.id);
    EXPECT_EQ(info.profileId, want.profile_id);
    EXPECT_EQ(info.placement.start, want.start);
    EXPECT_EQ(info.placement.size, want.size);
  }
  nvmlGpuInstance_t gi = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceById)(Device(0), 0, &gi),
            NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceById)(Device(0), 2, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceById)(Device(1), 2, &gi),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceById)(Mig(0, 0), 2, &gi),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuInstanceInfo_t info;
  EXPECT_EQ(NVML(nvmlGpuInstanceGetInfo)(GpuInstance(2), nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  // Not a GPU instance handle: a device handle's address, null, garbage.
  for (nvmlGpuInstance_t bad : {reinterpret_cast<nvmlGpuInstance_t>(Device(0)),
                                static_cast<nvmlGpuInstance_t>(nullptr),
                                reinterpret_cast<nvmlGpuInstance_t>(&info)}) {
    EXPECT_EQ(NVML(nvmlGpuInstanceGetInfo)(bad, &info),
              NVML_ERROR_INVALID_ARGUMENT);
  }
}

TEST_F(MigTest, ComputeInstanceProfileInfo) {
  const nvmlGpuInstance_t gi = GpuInstance(2);  // 3g.40gb
  const struct {
    unsigned profile;
    nvmlReturn_t want;
    unsigned slices = 0, instances = 0, sms = 0;
  } kCases[] = {
      {NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, NVML_SUCCESS, 1, 3, 20},
      {NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, NVML_SUCCESS, 2, 1, 40},
      {NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, NVML_SUCCESS, 3, 1, 60},
      {NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, NVML_ERROR_NOT_SUPPORTED},
      {NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE, NVML_ERROR_NOT_SUPPORTED},
      {NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1, NVML_ERROR_NOT_SUPPORTED},
      {NVML_COMPUTE_INSTANCE_PROFILE_COUNT, NVML_ERROR_INVALID_ARGUMENT},
  };
  for (const auto& c : kCases) {
    nvmlComputeInstanceProfileInfo_t info;
    ASSERT_EQ(
        NVML(nvmlGpuInstanceGetComputeInstanceProfileInfo)(
            gi, c.profile, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info),
        c.want)
        << c.profile;
    if (c.want != NVML_SUCCESS) continue;
    EXPECT_EQ(info.id, c.profile);
    EXPECT_EQ(info.sliceCount, c.slices);
    EXPECT_EQ(info.instanceCount, c.instances);
    EXPECT_EQ(info.multiprocessorCount, c.sms);
    EXPECT_EQ(info.sharedCopyEngineCount, 3u);
    EXPECT_EQ(info.sharedDecoderCount, 3u);
    EXPECT_EQ(info.sharedJpegCount, 3u);
  }
  nvmlComputeInstanceProfileInfo_t info;
  EXPECT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceProfileInfo)(
                gi, 0, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT, &info),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(
      NVML(nvmlGpuInstanceGetComputeInstanceProfileInfo)(gi, 0, 0, nullptr),
      NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(MigTest, ComputeInstances) {
  const nvmlGpuInstance_t gi = GpuInstance(9);  // 1g.10gb, second from last
  nvmlComputeInstance_t cis[7];
  unsigned count = 99;
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstances)(
                gi, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, cis, &count),
            NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  nvmlComputeInstance_t by_id = nullptr;
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceById)(gi, 0, &by_id),
            NVML_SUCCESS);
  EXPECT_EQ(by_id, cis[0]);
  nvmlComputeInstanceInfo_t info;
  ASSERT_EQ(NVML(nvmlComputeInstanceGetInfo_v2)(cis[0], &info), NVML_SUCCESS);
  EXPECT_EQ(info.device, Device(0));
  EXPECT_EQ(info.gpuInstance, gi);
  EXPECT_EQ(info.id, 0u);
  EXPECT_EQ(info.profileId, unsigned{NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE});
  EXPECT_EQ(info.placement.start, 0u);
  EXPECT_EQ(info.placement.size, 1u);

  EXPECT_EQ(NVML(nvmlGpuInstanceGetComputeInstances)(
                gi, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, cis, &count),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlGpuInstanceGetComputeInstances)(gi, 0, nullptr, &count),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceById)(gi, 1, &by_id),
            NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceById)(gi, 0, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlComputeInstanceGetInfo_v2)(cis[0], nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlComputeInstanceGetInfo_v2)(
                reinterpret_cast<nvmlComputeInstance_t>(gi), &info),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(MigTest, LostGpuTakesItsInstancesAlong) {
  const nvmlDevice_t mig = Mig(0, 1);
  const nvmlGpuInstance_t gi = GpuInstance(3);
  nvmlComputeInstance_t ci = nullptr;
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceById)(gi, 0, &ci),
            NVML_SUCCESS);
  const std::string uuid = Uuid(mig);
  Control("lose 0");
  nvmlGpuInstanceInfo_t gi_info;
  ASSERT_TRUE(Eventually([&] {
    return NVML(nvmlGpuInstanceGetInfo)(gi, &gi_info) == NVML_ERROR_GPU_IS_LOST;
  }));
  unsigned value = 0;
  nvmlComputeInstanceInfo_t ci_info;
  nvmlDevice_t found = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(mig, &value),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(NVML(nvmlComputeInstanceGetInfo_v2)(ci, &ci_info),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByUUID)(uuid.c_str(), &found),
            NVML_ERROR_GPU_IS_LOST);
  Control("restore 0");
  ASSERT_TRUE(Eventually([&] {
    return NVML(nvmlDeviceGetGpuInstanceId)(mig, &value) == NVML_SUCCESS;
  }));
  EXPECT_EQ(value, 3u);
}

TEST_F(MigTest, FailMigFailsOneMigDeviceUntilRecover) {
  const nvmlDevice_t mig1 = Mig(0, 1);
  const nvmlDevice_t mig2 = Mig(0, 2);
  nvmlComputeInstance_t ci = nullptr;
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceById)(GpuInstance(3), 0, &ci),
            NVML_SUCCESS);
  Control("fail-mig 0 1 4");
  unsigned value = 0;
  ASSERT_TRUE(Eventually([&] {
    return NVML(nvmlDeviceGetGpuInstanceId)(mig1, &value) ==
           NVML_ERROR_NO_PERMISSION;
  }));
  char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  nvmlComputeInstanceInfo_t info;
  EXPECT_EQ(NVML(nvmlDeviceGetUUID)(mig1, text, sizeof(text)),
            NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(NVML(nvmlComputeInstanceGetInfo_v2)(ci, &info),
            NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(Mig(0, 1), mig1) << "the handle is still found";
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(mig2, &value), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetUUID)(Device(0), text, sizeof(text)),
            NVML_SUCCESS);
  Control("recover");
  ASSERT_TRUE(Eventually([&] {
    return NVML(nvmlDeviceGetGpuInstanceId)(mig1, &value) == NVML_SUCCESS;
  }));
}

TEST_F(MigTest, BadFailMigLinesAreReportedAndSkipped) {
  const nvmlDevice_t gpu1 = Device(1);
  ::testing::internal::CaptureStderr();
  Control("fail-mig 0 4 999");
  Control("fail-mig 1 0 999");
  Control("fail-mig 0 1");
  Control("fail-mig 0 1 0");
  Control("fail-mig 0 x 999");
  Control("lose 1");
  const bool lost = Eventually([&] {
    unsigned minor = 0;
    return NVML(nvmlDeviceGetMinorNumber)(gpu1, &minor) ==
           NVML_ERROR_GPU_IS_LOST;
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(lost);
  EXPECT_THAT(
      err, ::testing::HasSubstr("control line 1: no MIG device 4 on GPU 0\n"));
  EXPECT_THAT(
      err, ::testing::HasSubstr("control line 2: no MIG device 0 on GPU 1\n"));
  EXPECT_THAT(err, ::testing::HasSubstr("control line 3: wrong number"));
  EXPECT_THAT(err, ::testing::HasSubstr("control line 4: fail-mig needs"));
  EXPECT_THAT(err,
              ::testing::HasSubstr("control line 5: bad MIG device index"));
  unsigned value = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(Mig(0, 0), &value), NVML_SUCCESS);
}

TEST_F(MigTest, HandlesDieWithTheirSession) {
  const nvmlDevice_t mig = Mig(0, 0);
  const nvmlGpuInstance_t gi = GpuInstance(2);
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  InitWith("h100-mig.yaml");
  unsigned value = 0;
  nvmlGpuInstanceInfo_t info;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(mig, &value),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlGpuInstanceGetInfo)(gi, &info),
            NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(mig, &value),
            NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(NVML(nvmlGpuInstanceGetInfo)(gi, &info), NVML_ERROR_UNINITIALIZED);
  InitWith("h100-mig.yaml");
}

TEST_F(MigTest, GpusWithoutMig) {
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  InitWith("pcie-t4.yaml");
  unsigned value = 99;
  ASSERT_EQ(NVML(nvmlDeviceGetMaxMigDeviceCount)(Device(0), &value),
            NVML_SUCCESS);
  EXPECT_EQ(value, 0u);
  nvmlDevice_t mig = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(Device(0), 0, &mig),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuInstanceProfileInfo_t info;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfo)(
                Device(0), NVML_GPU_INSTANCE_PROFILE_1_SLICE, &info),
            NVML_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(NVML(nvmlDeviceIsMigDeviceHandle)(Device(0), &value), NVML_SUCCESS);
  EXPECT_EQ(value, 0u);
}

TEST_F(MigTest, XidEventsNameTheInstance) {
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(NVML(nvmlEventSetCreate)(&set), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(0),
                                           nvmlEventTypeXidCriticalError, set),
            NVML_SUCCESS);
  Control("xid 0 43 9 0");
  nvmlEventData_t data;
  ASSERT_EQ(NVML(nvmlEventSetWait_v2)(set, &data, 2000), NVML_SUCCESS);
  EXPECT_EQ(data.device, Device(0));
  EXPECT_EQ(data.eventData, 43u);
  EXPECT_EQ(data.gpuInstanceId, 9u);
  EXPECT_EQ(data.computeInstanceId, 0u);
  EXPECT_EQ(NVML(nvmlEventSetFree)(set), NVML_SUCCESS);
}

// Machines written inline: compute instance sub-profiles, automatic
// placement and a GPU instance without compute instances.
std::string MigGpu(const std::string& name, unsigned memory_mib,
                   const std::string& instances) {
  return "driver_version: \"550.54.15\"\ncuda_driver_version: 12040\ngpus:\n"
         "  - name: " +
         name +
         "\n"
         "    uuid: GPU-11111111-2222-3333-4444-555555555555\n"
         "    minor: 0\n"
         "    bus_id: \"0000:07:00.0\"\n"
         "    pci_device_id: 0x20B010DE\n"
         "    pci_subsystem_id: 0x134F10DE\n"
         "    memory_mib: " +
         std::to_string(memory_mib) +
         "\n"
         "    compute_capability: \"8.0\"\n"
         "    numa_node: 0\n"
         "    host_bridge: 0\n"
         "    mig_capable: true\n"
         "    mig_mode: enabled\n"
         "    gpu_instances: " +
         instances + "\n";
}

TEST_F(MigTest, ComputeInstanceSubProfiles) {
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  UseMachine(WriteFile(
      "sub.yaml",
      MigGpu("NVIDIA A100-SXM4-40GB", 40960,
             "[{profile: 7g.40gb, compute_instances: [{profile: 4c.7g.40gb}, "
             "{profile: 2c.7g.40gb}, {profile: 1c.7g.40gb}]}]")));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  const struct {
    const char* name;
    unsigned ci, start, slices, sms;
  } kDevices[] = {
      {"NVIDIA A100-SXM4-40GB MIG 4c.7g.40gb", 0, 0, 4, 56},
      {"NVIDIA A100-SXM4-40GB MIG 2c.7g.40gb", 1, 4, 2, 28},
      {"NVIDIA A100-SXM4-40GB MIG 1c.7g.40gb", 2, 6, 1, 14},
  };
  const nvmlGpuInstance_t gi = [&] {
    nvmlGpuInstance_t out = nullptr;
    EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceById)(Device(0), 0, &out),
              NVML_SUCCESS);
    return out;
  }();
  for (unsigned j = 0; j < 3; ++j) {
    const auto& want = kDevices[j];
    const nvmlDevice_t mig = Mig(0, j);
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    ASSERT_EQ(NVML(nvmlDeviceGetName)(mig, name, sizeof(name)), NVML_SUCCESS);
    EXPECT_STREQ(name, want.name);
    unsigned value = 99;
    ASSERT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(mig, &value), NVML_SUCCESS);
    EXPECT_EQ(value, 0u);
    ASSERT_EQ(NVML(nvmlDeviceGetComputeInstanceId)(mig, &value), NVML_SUCCESS);
    EXPECT_EQ(value, want.ci);
    nvmlDeviceAttributes_t attributes;
    ASSERT_EQ(NVML(nvmlDeviceGetAttributes_v2)(mig, &attributes), NVML_SUCCESS);
    EXPECT_EQ(attributes.gpuInstanceSliceCount, 7u);
    EXPECT_EQ(attributes.computeInstanceSliceCount, want.slices);
    EXPECT_EQ(attributes.multiprocessorCount, want.sms);
    EXPECT_EQ(attributes.memorySizeMB, 40192u) << "the whole GPU instance's";
    nvmlComputeInstance_t ci = nullptr;
    ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceById)(gi, want.ci, &ci),
              NVML_SUCCESS);
    nvmlComputeInstanceInfo_t info;
    ASSERT_EQ(NVML(nvmlComputeInstanceGetInfo_v2)(ci, &info), NVML_SUCCESS);
    EXPECT_EQ(info.placement.start, want.start);
    EXPECT_EQ(info.placement.size, want.slices);
  }
  nvmlDevice_t mig = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(Device(0), 3, &mig),
            NVML_ERROR_NOT_FOUND);
}

TEST_F(MigTest, AutomaticPlacementAndEmptyGpuInstances) {
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  // The 1g instance first would take slice 0 that the 4g instance needs.
  UseMachine(WriteFile(
      "auto.yaml",
      MigGpu("NVIDIA A100-SXM4-80GB", 81920,
             "[{profile: 1g.10gb, compute_instances: []}, {profile: 4g.40gb},"
             " {profile: 1g.20gb}]")));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  const struct {
    unsigned id, profile_id, start;
  } kInstances[] = {{1, 5, 0}, {6, 15, 6}, {11, 19, 4}};
  for (const auto& want : kInstances) {
    nvmlGpuInstance_t gi = nullptr;
    ASSERT_EQ(NVML(nvmlDeviceGetGpuInstanceById)(Device(0), want.id, &gi),
              NVML_SUCCESS)
        << want.id;
    nvmlGpuInstanceInfo_t info;
    ASSERT_EQ(NVML(nvmlGpuInstanceGetInfo)(gi, &info), NVML_SUCCESS);
    EXPECT_EQ(info.profileId, want.profile_id);
    EXPECT_EQ(info.placement.start, want.start);
  }
  // Two MIG devices: the 1g.10gb instance has no compute instance.
  const char* kNames[] = {"NVIDIA A100-SXM4-80GB MIG 4g.40gb",
                          "NVIDIA A100-SXM4-80GB MIG 1g.20gb"};
  for (unsigned j = 0; j < 2; ++j) {
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    ASSERT_EQ(NVML(nvmlDeviceGetName)(Mig(0, j), name, sizeof(name)),
              NVML_SUCCESS);
    EXPECT_STREQ(name, kNames[j]);
  }
  nvmlDevice_t mig = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(Device(0), 2, &mig),
            NVML_ERROR_NOT_FOUND);
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
