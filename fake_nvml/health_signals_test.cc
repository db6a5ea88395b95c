// Health signals: row remapping (Ampere and later), retired pages pending
// (before Ampere), PCIe link, clock throttle reasons and NVLink state, from
// the machine file and changed by control commands; strict machine fields.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kHead[] =
    "driver_version: \"550.54.15\"\ncuda_driver_version: 12040\ngpus:\n";

// A one-line GPU entry (line 4 for the first) of compute capability `cc`
// with `extra` fields appended.
std::string Gpu(int i, const std::string& cc, const std::string& extra = "") {
  return absl::StrCat(
      "  - {name: Some GPU, uuid: GPU-0000000", i,
      "-0000-0000-0000-000000000000, minor: ", i, ", bus_id: \"0000:0", i,
      ":00.0\", pci_device_id: 0x20B210DE, pci_subsystem_id: 0x146310DE, "
      "memory_mib: 1024, compute_capability: \"",
      cc, "\", numa_node: 0, host_bridge: 0", extra.empty() ? "" : ", ", extra,
      "}\n");
}

struct Rows {
  unsigned corrected = 0, uncorrectable = 0, pending = 0, failure = 0;
};

class HealthSignalsTest : public FakeNvmlTest {
 protected:
  nvmlReturn_t ReadRows(nvmlDevice_t d, Rows* rows) {
    return NVML(nvmlDeviceGetRemappedRows)(d, &rows->corrected,
                                           &rows->uncorrectable, &rows->pending,
                                           &rows->failure);
  }
  nvmlReturn_t PagesPending(nvmlDevice_t d, nvmlEnableState_t* state) {
    return NVML(nvmlDeviceGetRetiredPagesPendingStatus)(d, state);
  }
  // "gen/max_gen xwidth/max_width", or the error.
  std::string Pcie(nvmlDevice_t d) {
    unsigned gen = 0, max_gen = 0, width = 0, max_width = 0;
    nvmlReturn_t r = NVML(nvmlDeviceGetCurrPcieLinkGeneration)(d, &gen);
    if (r == NVML_SUCCESS) {
      r = NVML(nvmlDeviceGetMaxPcieLinkGeneration)(d, &max_gen);
    }
    if (r == NVML_SUCCESS) r = NVML(nvmlDeviceGetCurrPcieLinkWidth)(d, &width);
    if (r == NVML_SUCCESS) {
      r = NVML(nvmlDeviceGetMaxPcieLinkWidth)(d, &max_width);
    }
    if (r != NVML_SUCCESS) return absl::StrCat("error ", r);
    return absl::StrCat(gen, "/", max_gen, " x", width, "/", max_width);
  }
  unsigned long long Throttle(nvmlDevice_t d) {
    unsigned long long reasons = ~0ULL;
    EXPECT_EQ(NVML(nvmlDeviceGetCurrentClocksThrottleReasons)(d, &reasons),
              NVML_SUCCESS);
    return reasons;
  }
  bool LinkActive(nvmlDevice_t d, unsigned link) {
    nvmlEnableState_t state = NVML_FEATURE_DISABLED;
    EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(d, link, &state), NVML_SUCCESS);
    return state == NVML_FEATURE_ENABLED;
  }
};

TEST_F(HealthSignalsTest, ShippedMachinesFollowTheirArchitecture) {
  InitWith("dgx-a100.yaml");
  Rows rows{9, 9, 9, 9};
  ASSERT_EQ(ReadRows(Device(0), &rows), NVML_SUCCESS);
  EXPECT_EQ(rows.corrected + rows.uncorrectable + rows.pending + rows.failure,
            0u);
  nvmlEnableState_t state;
  EXPECT_EQ(PagesPending(Device(0), &state), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(Pcie(Device(0)), "4/4 x16/16");
  // Idle, as a real GPU without load reports (H100, driver 580.159.04).
  EXPECT_EQ(Throttle(Device(0)), nvmlClocksThrottleReasonGpuIdle);
  unsigned a = 0, b = 0, c = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetRemappedRows)(Device(0), &a, &b, &c, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);

  InitWith("dgx1-v100.yaml");
  EXPECT_EQ(ReadRows(Device(0), &rows), NVML_ERROR_NOT_SUPPORTED);
  state = NVML_FEATURE_ENABLED;
  ASSERT_EQ(PagesPending(Device(0), &state), NVML_SUCCESS);
  EXPECT_EQ(state, NVML_FEATURE_DISABLED);
  EXPECT_EQ(PagesPending(Device(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Pcie(Device(0)), "3/3 x16/16");
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);

  InitWith("hgx-h100.yaml");
  EXPECT_EQ(Pcie(Device(0)), "5/5 x16/16");
}

TEST_F(HealthSignalsTest, MachineFileSetsThem) {
  UseMachine(WriteFile(
      "m.yaml",
      absl::StrCat(kHead,
                   Gpu(0, "8.0",
                       "remapped_rows: {corrected: 2, uncorrectable: 1, "
                       "pending: true, failure: true}, pcie: {gen: 3, "
                       "max_gen: 4, width: 8}, throttle_reasons: 0x48"),
                   Gpu(1, "7.0", "retired_pages_pending: true"))));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  Rows rows;
  ASSERT_EQ(ReadRows(Device(0), &rows), NVML_SUCCESS);
  EXPECT_EQ(rows.corrected, 2u);
  EXPECT_EQ(rows.uncorrectable, 1u);
  EXPECT_EQ(rows.pending, 1u);
  EXPECT_EQ(rows.failure, 1u);
  EXPECT_EQ(Pcie(Device(0)), "3/4 x8/16");
  EXPECT_EQ(Throttle(Device(0)), 0x48u);  // replaces the idle default
  nvmlEnableState_t state;
  ASSERT_EQ(PagesPending(Device(1), &state), NVML_SUCCESS);
  EXPECT_EQ(state, NVML_FEATURE_ENABLED);
}

TEST_F(HealthSignalsTest, MigDevicesHaveNone) {
  InitWith("h100-mig.yaml");
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(Device(0), 0, &mig),
            NVML_SUCCESS);
  Rows rows;
  EXPECT_EQ(ReadRows(mig, &rows), NVML_ERROR_NOT_SUPPORTED);
  unsigned long long reasons = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetCurrentClocksThrottleReasons)(mig, &reasons),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(Pcie(mig), absl::StrCat("error ", NVML_ERROR_NOT_SUPPORTED));
}

TEST_F(HealthSignalsTest, ControlCommandsChangeThem) {
  UseControl();
  InitWith("dgx-a100.yaml");
  const nvmlDevice_t gpu3 = Device(3);
  Control("remap-pending 3");
  Rows rows;
  ASSERT_TRUE(Eventually([&] {
    return ReadRows(gpu3, &rows) == NVML_SUCCESS && rows.pending == 1;
  }));
  EXPECT_EQ(rows.uncorrectable, 1u);
  Control("remap-failure 3");
  Control("pcie 2 3 8");
  Control("throttle 1 0x20");
  Control("nvlink 4 5 inactive");
  ASSERT_TRUE(Eventually([&] { return !LinkActive(Device(4), 5); }));
  EXPECT_TRUE(LinkActive(Device(4), 4));
  EXPECT_EQ(Pcie(Device(2)), "3/4 x8/16");
  EXPECT_EQ(Throttle(Device(1)), 0x20u);
  Control("reset 3");
  Control("nvlink 4 5 active");
  ASSERT_TRUE(Eventually([&] { return LinkActive(Device(4), 5); }));
  ASSERT_EQ(ReadRows(gpu3, &rows), NVML_SUCCESS);
  EXPECT_EQ(rows.pending, 0u);
  EXPECT_EQ(rows.uncorrectable, 1u);
  EXPECT_EQ(rows.failure, 1u);  // a failure stays until the GPU is replaced
  Control("recover");           // faults end; the signals are the GPU's state
  Control("throttle 1 0");
  ASSERT_TRUE(Eventually([&] { return Throttle(Device(1)) == 0; }));
  EXPECT_EQ(Pcie(Device(2)), "3/4 x8/16");
}

TEST_F(HealthSignalsTest, PagesPendingUntilReset) {
  UseControl();
  InitWith("dgx1-v100.yaml");
  const nvmlDevice_t gpu = Device(6);
  auto pending = [&] {
    nvmlEnableState_t state = NVML_FEATURE_DISABLED;
    EXPECT_EQ(PagesPending(gpu, &state), NVML_SUCCESS);
    return state == NVML_FEATURE_ENABLED;
  };
  Control("pages-pending 6");
  ASSERT_TRUE(Eventually(pending));
  Control("reset 6");
  ASSERT_TRUE(Eventually([&] { return !pending(); }));
}

TEST_F(HealthSignalsTest, CommandsTheGpuCannotTakeAreReported) {
  UseControl();
  InitWith("dgx1-v100.yaml");
  ::testing::internal::CaptureStderr();
  Control("remap-pending 0");      // 1: Volta retires pages
  Control("pcie 0 4 16");          // 2: above gen 3
  Control("pcie 0 3 12");          // 3: no such width
  Control("throttle 0 0x400");     // 4: no such reason
  Control("nvlink 0 6 inactive");  // 5: links 0-5 only
  Control("nvlink 0 1 down");      // 6
  Control("reset");                // 7
  Control("pages-pending 5");
  const bool applied = Eventually([&] {
    nvmlEnableState_t state = NVML_FEATURE_DISABLED;
    return PagesPending(Device(5), &state) == NVML_SUCCESS &&
           state == NVML_FEATURE_ENABLED;
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(applied);
  EXPECT_THAT(err, HasSubstr("control line 1: GPU 0 does not remap rows"));
  EXPECT_THAT(err, HasSubstr("control line 2: GPU 0's PCIe link is at most "
                             "gen 3 x16"));
  EXPECT_THAT(err, HasSubstr("control line 3: a PCIe link width is"));
  EXPECT_THAT(err, HasSubstr("control line 4: throttle needs a mask"));
  EXPECT_THAT(err, HasSubstr("control line 5: GPU 0 has no NVLink 6"));
  EXPECT_THAT(err, HasSubstr("control line 6: an NVLink state is active or "
                             "inactive"));
  EXPECT_THAT(err, HasSubstr("control line 7: wrong number of arguments"));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 7) << err;
  EXPECT_TRUE(LinkActive(Device(0), 1));
}

// nvmlDeviceGetFieldValues of the recovery action and volatile ECC totals:
// {recovery action or -1 when NOT_SUPPORTED, single-bit, double-bit}.
struct Fields {
  long long action = -2;
  unsigned long long sbe = ~0ULL, dbe = ~0ULL;
  bool operator==(const Fields&) const = default;
};

Fields ReadFields(nvmlDevice_t d) {
  nvmlFieldValue_t v[4] = {};
  v[0].fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
  v[1].fieldId = NVML_FI_DEV_ECC_SBE_VOL_TOTAL;
  v[2].fieldId = NVML_FI_DEV_ECC_DBE_VOL_TOTAL;
  v[3].fieldId = 1;  // NVML_FI_DEV_ECC_CURRENT: not modelled
  Fields f;
  EXPECT_EQ(NVML(nvmlDeviceGetFieldValues)(d, 4, v), NVML_SUCCESS);
  EXPECT_EQ(v[3].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  if (v[0].nvmlReturn == NVML_ERROR_NOT_SUPPORTED) {
    f.action = -1;
  } else if (v[0].nvmlReturn == NVML_SUCCESS &&
             v[0].valueType == NVML_VALUE_TYPE_UNSIGNED_INT) {
    f.action = v[0].value.uiVal;
  }
  for (int i : {1, 2}) {
    EXPECT_EQ(v[i].nvmlReturn, NVML_SUCCESS);
    EXPECT_EQ(v[i].valueType, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
    EXPECT_GT(v[i].timestamp, 0);
  }
  f.sbe = v[1].value.ullVal;
  f.dbe = v[2].value.ullVal;
  return f;
}

TEST_F(HealthSignalsTest, RecoveryActionNeedsAnR565Driver) {
  InitWith("dgx-a100.yaml");  // 550.54.15
  EXPECT_EQ(ReadFields(Device(0)), (Fields{-1, 0, 0}));
  nvmlFieldValue_t v{};
  EXPECT_EQ(NVML(nvmlDeviceGetFieldValues)(Device(0), 1, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetFieldValues)(nullptr, 1, &v),
            NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  UseMachine(
      WriteFile("m.yaml", absl::StrCat("driver_version: \"565.57.01\"\n"
                                       "cuda_driver_version: 12070\ngpus:\n",
                                       Gpu(0, "9.0"))));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  EXPECT_EQ(ReadFields(Device(0)),
            (Fields{NVML_GPU_RECOVERY_ACTION_NONE, 0, 0}));
}

TEST_F(HealthSignalsTest, ErrorsSetTheFieldsAndAResetClearsThem) {
  UseControl();
  UseMachine(
      WriteFile("m.yaml", absl::StrCat("driver_version: \"570.124.06\"\n"
                                       "cuda_driver_version: 12080\ngpus:\n",
                                       Gpu(0, "9.0"), Gpu(1, "9.0"))));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  const nvmlDevice_t gpu0 = Device(0), gpu1 = Device(1);
  Control("ecc 0 single");
  Control("ecc 0 double");
  Control("xid 0 13");  // an application error: no action asked
  ASSERT_TRUE(Eventually([&] { return ReadFields(gpu0).dbe == 1; }));
  EXPECT_EQ(ReadFields(gpu0), (Fields{NVML_GPU_RECOVERY_ACTION_NONE, 1, 1}));
  Control("xid 0 119");  // GSP RPC timeout: catalogue RESET_GPU
  Control("recovery-action 1 drain-p2p");
  ASSERT_TRUE(Eventually([&] {
    return ReadFields(gpu1).action == NVML_GPU_RECOVERY_ACTION_DRAIN_P2P;
  }));
  EXPECT_EQ(ReadFields(gpu0),
            (Fields{NVML_GPU_RECOVERY_ACTION_GPU_RESET, 1, 1}));
  Control("reset 0");
  ASSERT_TRUE(Eventually([&] { return ReadFields(gpu0).dbe == 0; }));
  EXPECT_EQ(ReadFields(gpu0), (Fields{NVML_GPU_RECOVERY_ACTION_NONE, 0, 0}));
  // A GPU that fell off the bus comes back through a reset too.
  Control("ecc 1 double");
  Control("lose 1");
  ASSERT_TRUE(Eventually([&] {
    nvmlFieldValue_t v{};
    return NVML(nvmlDeviceGetFieldValues)(gpu1, 1, &v) ==
           NVML_ERROR_GPU_IS_LOST;
  }));
  Control("restore 1");
  ASSERT_TRUE(Eventually([&] {
    nvmlFieldValue_t v{};
    return NVML(nvmlDeviceGetFieldValues)(gpu1, 1, &v) == NVML_SUCCESS;
  }));
  EXPECT_EQ(ReadFields(gpu1), (Fields{NVML_GPU_RECOVERY_ACTION_NONE, 0, 0}));
}

// A GPU keeps its state when its NVML client goes: lines already in the
// control file at init set the GPU's state again, without their events.
TEST_F(HealthSignalsTest, TheGpuKeepsItsStateAcrossInits) {
  UseControl();
  UseMachine(
      WriteFile("m.yaml", absl::StrCat("driver_version: \"570.124.06\"\n"
                                       "cuda_driver_version: 12080\ngpus:\n",
                                       Gpu(0, "9.0"), Gpu(1, "9.0"))));
  WriteFile("control",
            "xid 0 46\necc 0 double\nremap-pending 0\nlose 1\n"
            "ecc 1 single\nreset 1\necc 1 double\nbogus\nxid 7 46\n");
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "")
      << "history is not reported again";
  EXPECT_EQ(ReadFields(Device(0)),
            (Fields{NVML_GPU_RECOVERY_ACTION_GPU_RESET, 0, 1}));
  EXPECT_EQ(ReadFields(Device(1)),
            (Fields{NVML_GPU_RECOVERY_ACTION_NONE, 0, 1}));
  Rows rows;
  ASSERT_EQ(ReadRows(Device(0), &rows), NVML_SUCCESS);
  EXPECT_EQ(rows.pending, 1u);
  // No event was queued for the history.
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(NVML(nvmlEventSetCreate)(&set), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(0),
                                           nvmlEventTypeXidCriticalError, set),
            NVML_SUCCESS);
  nvmlEventData_t data;
  EXPECT_EQ(NVML(nvmlEventSetWait_v2)(set, &data, 0), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(NVML(nvmlEventSetFree)(set), NVML_SUCCESS);
}

struct BadField {
  const char* name;
  std::string gpu;
  const char* field;
  const char* problem;
};

class BadHealthFieldTest : public FakeNvmlTest,
                           public ::testing::WithParamInterface<BadField> {};

void PrintTo(const BadField& c, std::ostream* os) { *os << c.name; }

TEST_P(BadHealthFieldTest, IsRejectedNamingTheField) {
  const BadField& c = GetParam();
  const std::string path = WriteFile("m.yaml", absl::StrCat(kHead, c.gpu));
  UseMachine(path);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr(absl::StrCat(path, ":4: ", c.field, ": ")));
  EXPECT_THAT(err, HasSubstr(c.problem));
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, BadHealthFieldTest,
    ::testing::Values(
        BadField{"remap_on_volta", Gpu(0, "7.0", "remapped_rows: {}"),
                 "gpus[0].remapped_rows", "needs an Ampere or later GPU"},
        BadField{"pages_on_ampere",
                 Gpu(0, "8.0", "retired_pages_pending: false"),
                 "gpus[0].retired_pages_pending", "remap rows instead"},
        BadField{"remap_unknown_key",
                 Gpu(0, "9.0", "remapped_rows: {pending: true, rows: 1}"),
                 "gpus[0].remapped_rows.rows", "unknown key"},
        BadField{"remap_not_bool", Gpu(0, "9.0", "remapped_rows: {failure: 1}"),
                 "gpus[0].remapped_rows.failure", ""},
        BadField{"pcie_gen_zero", Gpu(0, "8.0", "pcie: {gen: 0}"),
                 "gpus[0].pcie.gen", "1 to 6"},
        BadField{"pcie_width", Gpu(0, "8.0", "pcie: {width: 12}"),
                 "gpus[0].pcie.width", "1, 2, 4, 8, 16 or 32"},
        BadField{"pcie_above_max", Gpu(0, "8.0", "pcie: {gen: 4, max_gen: 3}"),
                 "gpus[0].pcie.gen", "above max_gen 3"},
        BadField{"throttle_bits", Gpu(0, "8.0", "throttle_reasons: 0x200"),
                 "gpus[0].throttle_reasons", "bits outside"}),
    [](const ::testing::TestParamInfo<BadField>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace gdp::fake_nvml::testing
