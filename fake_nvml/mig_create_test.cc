// MIG made at run time: creating and destroying GPU and compute instances,
// possible placements, remaining capacity, MIG mode with its pending state,
// and the MIG state shared with other processes (`fake-nvml mig`).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

using ::testing::HasSubstr;

// H100 profile IDs (nvmlGpuInstanceProfileInfo_t.id).
constexpr unsigned k1g10 = 19, k1g20 = 15, k2g20 = 14, k3g40 = 9, k4g40 = 5,
                   k7g80 = 0;

class MigCreateTest : public FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    UseControl();
    InitWith("h100-mig.yaml");  // GPU 0: MIG on and full; GPU 1: MIG off
  }

  // Turns MIG on for GPU 1 (no instances: activated at once).
  void EnableGpu1() {
    nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
    ASSERT_EQ(NVML(nvmlDeviceSetMigMode)(Device(1), NVML_DEVICE_MIG_ENABLE,
                                         &activation),
              NVML_SUCCESS);
    ASSERT_EQ(activation, NVML_SUCCESS);
  }

  // Creates a GPU instance of `profile` on GPU `gpu`, at `start` if given;
  // returns NVML's answer and the instance's ID (0 on failure).
  std::pair<nvmlReturn_t, unsigned> Create(unsigned gpu, unsigned profile,
                                           std::optional<unsigned> start,
                                           unsigned size = 0) {
    nvmlGpuInstance_t gi = nullptr;
    nvmlReturn_t r;
    if (start.has_value()) {
      nvmlGpuInstancePlacement_t placement = {*start, size};
      r = NVML(nvmlDeviceCreateGpuInstanceWithPlacement)(Device(gpu), profile,
                                                         &placement, &gi);
    } else {
      r = NVML(nvmlDeviceCreateGpuInstance)(Device(gpu), profile, &gi);
    }
    if (r != NVML_SUCCESS) return {r, 0};
    nvmlGpuInstanceInfo_t info;
    EXPECT_EQ(NVML(nvmlGpuInstanceGetInfo)(gi, &info), NVML_SUCCESS);
    return {r, info.id};
  }

  unsigned Remaining(unsigned gpu, unsigned profile) {
    unsigned count = 99;
    EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceRemainingCapacity)(Device(gpu),
                                                              profile, &count),
              NVML_SUCCESS);
    return count;
  }

  unsigned MigCount(unsigned gpu) {
    unsigned n = 0;
    nvmlDevice_t mig;
    while (NVML(nvmlDeviceGetMigDeviceHandleByIndex)(Device(gpu), n, &mig) ==
           NVML_SUCCESS) {
      ++n;
    }
    return n;
  }

  nvmlGpuInstance_t Gi(unsigned gpu, unsigned id) {
    nvmlGpuInstance_t gi = nullptr;
    EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceById)(Device(gpu), id, &gi),
              NVML_SUCCESS);
    return gi;
  }

  // What `fake-nvml mig ARGS` prints (stdout and stderr); "exit N" appended
  // when it fails.
  std::string Tool(const std::string& args) {
    const std::string command =
        absl::StrCat("FAKE_NVML_MACHINE=", ShippedMachine("h100-mig.yaml"),
                     " FAKE_NVML_CONTROL=", control_path_, " ", FAKE_NVML_TOOL,
                     " mig ", args, " 2>&1");
    FILE* pipe = popen(command.c_str(), "r");
    std::string out;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
      out.append(buffer, n);
    }
    const int status = pclose(pipe);
    if (status != 0) absl::StrAppend(&out, "exit ", WEXITSTATUS(status));
    return out;
  }
};

TEST_F(MigCreateTest, GpuInstancesFillTheGpuAsPlacementsAllow) {
  EnableGpu1();
  // Steps on GPU 1, in order: profile, placement (nullopt: NVML picks),
  // placement size (0: the profile's), expected answer and ID.
  const struct {
    unsigned profile;
    std::optional<unsigned> start;
    unsigned size;
    nvmlReturn_t want;
    unsigned want_id;
  } kSteps[] = {
      {k3g40, 4, 4, NVML_SUCCESS, 2},                       // slices 4-7
      {k3g40, 4, 4, NVML_ERROR_INSUFFICIENT_RESOURCES, 0},  // occupied
      {k4g40, 0, 2, NVML_ERROR_INVALID_ARGUMENT, 0},        // wrong size
      {k2g20, 1, 2, NVML_ERROR_INVALID_ARGUMENT, 0},        // not a start
      {k7g80, std::nullopt, 0, NVML_ERROR_INSUFFICIENT_RESOURCES, 0},
      {k1g20, 2, 2, NVML_SUCCESS, 4},             // slices 2-3
      {k1g10, std::nullopt, 0, NVML_SUCCESS, 7},  // lowest free: 0
      {k1g10, std::nullopt, 0, NVML_SUCCESS, 8},  // then 1
      {k1g10, std::nullopt, 0, NVML_ERROR_INSUFFICIENT_RESOURCES, 0},
      {12345, std::nullopt, 0, NVML_ERROR_INVALID_ARGUMENT, 0},
  };
  for (const auto& step : kSteps) {
    SCOPED_TRACE(absl::StrCat("profile ", step.profile, " at ",
                              step.start.value_or(99)));
    unsigned size = step.size;
    const auto [r, id] = Create(1, step.profile, step.start, size);
    EXPECT_EQ(r, step.want);
    EXPECT_EQ(id, step.want_id);
  }
  EXPECT_EQ(Remaining(1, k1g10), 0u);
  // Four instances, none with a compute instance: no MIG device yet.
  unsigned count = 0;
  nvmlGpuInstance_t gis[8];
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstances)(Device(1), k1g10, gis, &count),
            NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(MigCount(1), 0u);
}

TEST_F(MigCreateTest, CreateRefusals) {
  // GPU 1 has MIG off; GPU 0 is full.
  EXPECT_EQ(Create(1, k1g10, std::nullopt).first, NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(Create(0, k1g10, std::nullopt).first,
            NVML_ERROR_INSUFFICIENT_RESOURCES);
  nvmlGpuInstancePlacement_t placement = {0, 1};
  EXPECT_EQ(NVML(nvmlDeviceCreateGpuInstanceWithPlacement)(Device(0), k1g10,
                                                           &placement, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceCreateGpuInstanceWithPlacement)(Device(0), k1g10,
                                                           nullptr, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(MigCreateTest, NeedsRoot) {
  TearDown();
  FakeNvmlTest::SetUp();
  UseControl();
  setenv("FAKE_NVML_EUID", "1000", 1);
  InitWith("h100-mig.yaml");
  nvmlReturn_t activation;
  EXPECT_EQ(NVML(nvmlDeviceSetMigMode)(Device(1), NVML_DEVICE_MIG_ENABLE,
                                       &activation),
            NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(NVML(nvmlGpuInstanceDestroy)(Gi(0, 9)), NVML_ERROR_NO_PERMISSION);
}

TEST_F(MigCreateTest, PossiblePlacementsAreEveryPlacementMigOnOrOff) {
  const struct {
    unsigned gpu;
    unsigned profile;
    std::vector<unsigned> starts;
    unsigned size;
  } kCases[] = {
      {0, k1g10, {0, 1, 2, 3, 4, 5, 6}, 1},
      {1, k1g20, {0, 2, 4, 6}, 2},
      {1, k2g20, {0, 2, 4}, 2},
      {0, k3g40, {0, 4}, 4},
      {1, k4g40, {0}, 4},
      {0, k7g80, {0}, 8},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(absl::StrCat("gpu ", c.gpu, " profile ", c.profile));
    unsigned count = 0;
    ASSERT_EQ(NVML(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(
                  Device(c.gpu), c.profile, nullptr, &count),
              NVML_SUCCESS);
    ASSERT_EQ(count, c.starts.size());
    std::vector<nvmlGpuInstancePlacement_t> placements(count);
    ASSERT_EQ(NVML(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(
                  Device(c.gpu), c.profile, placements.data(), &count),
              NVML_SUCCESS);
    for (unsigned i = 0; i < count; ++i) {
      EXPECT_EQ(placements[i].start, c.starts[i]);
      EXPECT_EQ(placements[i].size, c.size);
    }
  }
  unsigned count = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(
                Device(0), 12345, nullptr, &count),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuInstancePlacement_t one[1];
  count = 1;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(
                Device(0), k3g40, one, &count),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 2u);
}

TEST_F(MigCreateTest, RemainingCapacityFollowsWhatIsFree) {
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceRemainingCapacity)(Device(1), k1g10,
                                                            nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  unsigned count = 0;
  EXPECT_EQ(
      NVML(nvmlDeviceGetGpuInstanceRemainingCapacity)(Device(1), k1g10, &count),
      NVML_ERROR_NOT_SUPPORTED)
      << "MIG off";
  EnableGpu1();
  const struct {
    unsigned profile;
    unsigned want;
  } kEmpty[] = {{k1g10, 7}, {k1g20, 4}, {k2g20, 3},
                {k3g40, 2}, {k4g40, 1}, {k7g80, 1}};
  for (const auto& c : kEmpty) EXPECT_EQ(Remaining(1, c.profile), c.want);
  ASSERT_EQ(Create(1, k4g40, std::nullopt).first, NVML_SUCCESS);
  // Slices 0-3 and 4 compute slices used: 3 compute slices left.
  const struct {
    unsigned profile;
    unsigned want;
  } kAfter[] = {{k1g10, 3}, {k1g20, 2}, {k2g20, 1},
                {k3g40, 1}, {k4g40, 0}, {k7g80, 0}};
  for (const auto& c : kAfter) {
    SCOPED_TRACE(c.profile);
    EXPECT_EQ(Remaining(1, c.profile), c.want);
  }
}

TEST_F(MigCreateTest, ComputeInstancesAndDestroyOrder) {
  EnableGpu1();
  ASSERT_EQ(Create(1, k3g40, 0u, 4).first, NVML_SUCCESS);
  nvmlGpuInstance_t gi = Gi(1, 1);
  unsigned remaining = 0;
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceRemainingCapacity)(
                gi, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, &remaining),
            NVML_SUCCESS);
  EXPECT_EQ(remaining, 3u);
  // Placements of a 1-slice compute instance in a 3-slice GPU instance.
  unsigned count = 0;
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstancePossiblePlacements)(
                gi, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, nullptr, &count),
            NVML_SUCCESS);
  EXPECT_EQ(count, 3u);
  const struct {
    unsigned profile;
    std::optional<unsigned> start;
    nvmlReturn_t want;
    unsigned want_id;
  } kSteps[] = {
      {NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 1u, NVML_SUCCESS, 0},
      {NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 1u,
       NVML_ERROR_INSUFFICIENT_RESOURCES, 0},
      {NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, std::nullopt,
       NVML_ERROR_INSUFFICIENT_RESOURCES, 0},  // 0-1 and 2-3 overlap/exceed
      {NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, std::nullopt, NVML_SUCCESS, 1},
      {NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, std::nullopt, NVML_SUCCESS, 2},
      {NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, std::nullopt,
       NVML_ERROR_INSUFFICIENT_RESOURCES, 0},
      {NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, std::nullopt,
       NVML_ERROR_NOT_SUPPORTED, 0},  // larger than the GPU instance
  };
  std::vector<nvmlComputeInstance_t> made;
  for (const auto& step : kSteps) {
    SCOPED_TRACE(absl::StrCat("profile ", step.profile));
    nvmlComputeInstance_t ci = nullptr;
    nvmlReturn_t r;
    if (step.start.has_value()) {
      nvmlComputeInstancePlacement_t p = {*step.start, 1};
      r = NVML(nvmlGpuInstanceCreateComputeInstanceWithPlacement)(
          gi, step.profile, &p, &ci);
    } else {
      r = NVML(nvmlGpuInstanceCreateComputeInstance)(gi, step.profile, &ci);
    }
    ASSERT_EQ(r, step.want);
    if (r != NVML_SUCCESS) continue;
    nvmlComputeInstanceInfo_t info;
    ASSERT_EQ(NVML(nvmlComputeInstanceGetInfo_v2)(ci, &info), NVML_SUCCESS);
    EXPECT_EQ(info.id, step.want_id);
    made.push_back(ci);
  }
  EXPECT_EQ(MigCount(1), 3u);
  EXPECT_EQ(NVML(nvmlGpuInstanceDestroy)(gi), NVML_ERROR_IN_USE)
      << "compute instances left";
  // A handle follows its instance: destroying the first leaves the others'
  // handles valid, and its own invalid.
  ASSERT_EQ(NVML(nvmlComputeInstanceDestroy)(made[0]), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlComputeInstanceDestroy)(made[0]),
            NVML_ERROR_INVALID_ARGUMENT);
  nvmlComputeInstanceInfo_t info;
  ASSERT_EQ(NVML(nvmlComputeInstanceGetInfo_v2)(made[2], &info), NVML_SUCCESS);
  EXPECT_EQ(info.id, 2u);
  ASSERT_EQ(NVML(nvmlComputeInstanceDestroy)(made[1]), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlComputeInstanceDestroy)(made[2]), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlGpuInstanceDestroy)(gi), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlGpuInstanceGetInfo)(gi, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Remaining(1, k7g80), 1u);
}

TEST_F(MigCreateTest, BusyComputeInstanceIsInUse) {
  // GPU 0's MIG devices come from the machine file; another process marks
  // one busy.
  EXPECT_THAT(Tool("-i 0 --busy --gi 9 --ci 0"), HasSubstr("gi 9 ci 0 busy"));
  nvmlComputeInstance_t ci = nullptr;
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceById)(Gi(0, 9), 0, &ci),
            NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlComputeInstanceDestroy)(ci), NVML_ERROR_IN_USE);
  EXPECT_THAT(Tool("-i 0 --idle --gi 9 --ci 0"), HasSubstr("idle"));
  EXPECT_EQ(NVML(nvmlComputeInstanceDestroy)(ci), NVML_SUCCESS);
  EXPECT_EQ(MigCount(0), 3u);
}

TEST_F(MigCreateTest, MigModeIsPendingUntilTheGpuIsIdleAndReset) {
  // GPU 0 has instances: disabling stays pending.
  nvmlReturn_t activation = NVML_SUCCESS;
  ASSERT_EQ(NVML(nvmlDeviceSetMigMode)(Device(0), NVML_DEVICE_MIG_DISABLE,
                                       &activation),
            NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_ERROR_IN_USE);
  unsigned current = 9, pending = 9;
  ASSERT_EQ(NVML(nvmlDeviceGetMigMode)(Device(0), &current, &pending),
            NVML_SUCCESS);
  EXPECT_EQ(current, 1u);
  EXPECT_EQ(pending, 0u);
  EXPECT_EQ(MigCount(0), 4u);
  // A GPU reset makes it current, and the instances are gone.
  Control("reset 0");
  EXPECT_TRUE(Eventually([&] {
    NVML(nvmlDeviceGetMigMode)(Device(0), &current, &pending);
    return current == 0;
  }));
  EXPECT_EQ(pending, 0u);
  unsigned max = 9;
  ASSERT_EQ(NVML(nvmlDeviceGetMaxMigDeviceCount)(Device(0), &max),
            NVML_SUCCESS);
  EXPECT_EQ(max, 0u);
  EXPECT_EQ(NVML(nvmlDeviceSetMigMode)(Device(0), 7, &activation),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(MigCreateTest, ProcessesShareOneLayout) {
  // Made by the library, seen by the tool; made by the tool, seen by the
  // library (at its next call).
  EnableGpu1();
  ASSERT_EQ(Create(1, k3g40, 4u, 4).first, NVML_SUCCESS);
  EXPECT_THAT(Tool("-i 1 --lgi"),
              HasSubstr("gpu 1 gi 2 profile 3g.40gb id 9 placement 4:4"));
  EXPECT_THAT(Tool("-i 1 --cci --gi 2"), HasSubstr("gpu 1 gi 2 created ci 0"));
  EXPECT_EQ(MigCount(1), 1u);
  EXPECT_THAT(Tool("-i 1 --cgi 4g.40gb:0 -C"), HasSubstr("created gi 1"));
  EXPECT_EQ(MigCount(1), 2u);
  EXPECT_THAT(Tool("-i 1 --cgi 1g.10gb"),
              HasSubstr("INSUFFICIENT_RESOURCES (nothing changed)\nexit 1"));
  EXPECT_THAT(Tool("-i 1 --dgi --gi 2"), HasSubstr("IN_USE"));
  EXPECT_THAT(Tool("-i 1 --dci --gi 2"), HasSubstr("destroyed ci 0"));
  EXPECT_THAT(Tool("-i 1 --dgi --gi 2"), HasSubstr("destroyed gi 2"));
  EXPECT_EQ(MigCount(1), 1u);
  EXPECT_EQ(Remaining(1, k3g40), 1u);
  EXPECT_THAT(Tool("-i 1 --lgip"),
              HasSubstr("profile 3g.40gb id 9 free 1/2 placements 0:4,4:4"));
  EXPECT_THAT(Tool("--lgi --lci"), HasSubstr("exactly one"));
}

TEST_F(MigCreateTest, StateFileIsCheckedAndABadOneChangesNothing) {
  const std::string gpu0 = "GPU-7c3d1e5a-42b8-9f06-d1a3-5e8b2c4f6a90";
  const struct {
    const char* name;
    std::string text;
    unsigned want_migs;  // GPU 0's MIG devices after it was written
  } kCases[] = {
      {"one 7g with its compute instance",
       absl::StrCat("gpu ", gpu0, " 1 1\ngi ", gpu0, " 0 0 0\nci ", gpu0,
                    " 0 0 4 0 0\n"),
       1},
      {"GPU instance ID not its placement's",
       absl::StrCat("gpu ", gpu0, " 1 1\ngi ", gpu0, " 5 0 0\n"), 4},
      {"unknown profile",
       absl::StrCat("gpu ", gpu0, " 1 1\ngi ", gpu0, " 0 77 0\n"), 4},
      {"compute instance larger than its GPU instance",
       absl::StrCat("gpu ", gpu0, " 1 1\ngi ", gpu0, " 7 19 0\nci ", gpu0,
                    " 7 0 4 0 0\n"),
       4},
      {"gi before its gpu", absl::StrCat("gi ", gpu0, " 0 0 0\n"), 4},
      {"not a number", absl::StrCat("gpu ", gpu0, " one 1\n"), 4},
      {"unknown entry", absl::StrCat("mig ", gpu0, " 1 1\n"), 4},
      {"unknown GPU: ignored", "gpu GPU-nope 1 1\n", 4},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    // Replaced by rename, as writers do; the next call reads it.
    const std::string tmp = WriteFile("mig-state.new", c.text);
    ASSERT_EQ(rename(tmp.c_str(), (dir_ + "/mig-state").c_str()), 0);
    EXPECT_EQ(MigCount(0), c.want_migs);
    // Back to the machine file's layout for the next case.
    unlink((dir_ + "/mig-state").c_str());
    TearDown();
    SetUp();
  }
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
