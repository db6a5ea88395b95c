// Malformed machine files: each kind of error gives NVML_ERROR_UNKNOWN and
// one stderr line naming the file, the line and the field; never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The document head; GPU entries start on line 4, one per line.
constexpr char kHead[] =
    "driver_version: \"550.54.15\"\ncuda_driver_version: 12040\ngpus:\n";

// A valid one-line GPU entry with index `i`, edited by `from` -> `to`.
std::string Gpu(int i, const std::string& from = "",
                const std::string& to = "") {
  std::string line = absl::StrCat(
      "  - {name: Tesla V100-SXM2-32GB, uuid: GPU-0000000", i,
      "-0000-0000-0000-000000000000, minor: ", i, ", bus_id: \"0000:0", i,
      ":00.0\", pci_device_id: 0x1DB510DE, pci_subsystem_id: 0x124910DE, "
      "memory_mib: 32768, compute_capability: \"7.0\", numa_node: 0, "
      "host_bridge: 0}\n");
  return from.empty() ? line : absl::StrReplaceAll(line, {{from, to}});
}

// A valid one-line MIG-enabled A100-SXM4-40GB entry (line 4) with
// `instances` as its gpu_instances.
std::string MigGpu(const std::string& instances,
                   const std::string& name = "NVIDIA A100-SXM4-40GB",
                   const std::string& mode = "enabled") {
  return absl::StrCat(
      "  - {name: ", name,
      ", uuid: GPU-00000000-0000-0000-0000-000000000000, minor: 0, bus_id: "
      "\"0000:07:00.0\", pci_device_id: 0x20B010DE, pci_subsystem_id: "
      "0x134F10DE, memory_mib: 40960, compute_capability: \"8.0\", "
      "numa_node: 0, host_bridge: 0, mig_capable: true, mig_mode: ",
      mode, ", gpu_instances: ", instances, "}\n");
}

struct BadMachineCase {
  const char* name;
  std::string yaml;
  int line;
  const char* field;
  const char* problem;
};

using MachineFileTest = FakeNvmlTest;

// Names the case in test listings instead of dumping its bytes.
void PrintTo(const BadMachineCase& c, std::ostream* os) { *os << c.name; }

class BadMachineTest : public FakeNvmlTest,
                       public ::testing::WithParamInterface<BadMachineCase> {};

TEST_P(BadMachineTest, FailsWithUnknownAndOneLine) {
  const BadMachineCase& c = GetParam();
  const std::string path = WriteFile(absl::StrCat(c.name, ".yaml"), c.yaml);
  UseMachine(path);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, StartsWith(absl::StrCat("fake NVML: ", path, ":", c.line,
                                           ": ", c.field, ": ")));
  EXPECT_THAT(err, HasSubstr(c.problem));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  unsigned count = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_ERROR_UNINITIALIZED);
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, BadMachineTest,
    ::testing::Values(
        BadMachineCase{"syntax", std::string(kHead) + "  - {name: [oops\n", 5,
                       "(syntax)", "invalid YAML"},
        BadMachineCase{"empty", "", 1, "(document)", "must be a mapping"},
        BadMachineCase{"list_root", "- 1\n- 2\n", 1, "(document)",
                       "must be a mapping"},
        BadMachineCase{"unknown_top_key",
                       "driver_version: \"1\"\ncuda_driver_version: 1\n"
                       "colour: blue\ngpus: []\n",
                       3, "colour", "unknown key"},
        BadMachineCase{"unknown_gpu_key",
                       kHead + Gpu(0, "host_bridge: 0", "host_bridge: 0, x: 1"),
                       4, "gpus[0].x", "unknown key"},
        BadMachineCase{"missing_top_field",
                       "cuda_driver_version: 12040\ngpus: []\n", 1,
                       "driver_version", "missing required field"},
        BadMachineCase{
            "missing_uuid",
            kHead +
                Gpu(0, "uuid: GPU-00000000-0000-0000-0000-000000000000, ", ""),
            4, "gpus[0].uuid", "missing required field"},
        BadMachineCase{"wrong_type_int",
                       kHead + Gpu(0, "memory_mib: 32768", "memory_mib: lots"),
                       4, "gpus[0].memory_mib", "must be an integer"},
        BadMachineCase{"wrong_type_top",
                       "driver_version: \"1\"\ncuda_driver_version: 12.4\n"
                       "gpus: []\n",
                       2, "cuda_driver_version", "must be an integer"},
        BadMachineCase{
            "wrong_type_list",
            kHead + Gpu(0, "host_bridge: 0", "host_bridge: 0, nvlinks: 3"), 4,
            "gpus[0].nvlinks", "must be a list"},
        BadMachineCase{"negative_minor",
                       kHead + Gpu(0, "minor: 0", "minor: -1"), 4,
                       "gpus[0].minor", "must be an integer"},
        BadMachineCase{"bad_bus_id",
                       kHead + Gpu(0, "0000:00:00.0", "0000:00:00"), 4,
                       "gpus[0].bus_id", "PCI address"},
        BadMachineCase{"bad_uuid", kHead + Gpu(0, "GPU-00000000", "GPU-0000"),
                       4, "gpus[0].uuid", "must look like"},
        BadMachineCase{"bad_compute_capability",
                       kHead + Gpu(0, "\"7.0\"", "seven"), 4,
                       "gpus[0].compute_capability", "MAJOR.MINOR"},
        BadMachineCase{"compute_capability_three_digits",
                       kHead + Gpu(0, "\"7.0\"", "\"100.0\""), 4,
                       "gpus[0].compute_capability", "MAJOR.MINOR"},
        BadMachineCase{
            "unknown_brand",
            kHead + Gpu(0, "host_bridge: 0", "host_bridge: 0, brand: Tesla"), 4,
            "gpus[0].brand",
            "unknown brand \"Tesla\" (unknown, quadro, tesla,"},
        BadMachineCase{
            "unknown_architecture",
            kHead +
                Gpu(0, "host_bridge: 0", "host_bridge: 0, architecture: rubin"),
            4, "gpus[0].architecture",
            "unknown architecture \"rubin\" (kepler, maxwell, pascal, volta, "
            "turing, ampere, ada, hopper, blackwell, orin, unknown)"},
        BadMachineCase{
            "brand_not_a_string",
            kHead + Gpu(0, "host_bridge: 0", "host_bridge: 0, brand: [tesla]"),
            4, "gpus[0].brand", "must be a string"},
        BadMachineCase{"host_bridge_past_a_bus_number",
                       kHead + Gpu(0, "host_bridge: 0", "host_bridge: 256"), 4,
                       "gpus[0].host_bridge", "255"},
        BadMachineCase{"host_bridge_in_two_domains",
                       kHead + Gpu(0) + Gpu(1, "\"0000:01", "\"0001:01"), 5,
                       "gpus[1].host_bridge", "is in PCI domain 0000"},
        BadMachineCase{"duplicate_key",
                       kHead + Gpu(0, "minor: 0", "minor: 0, minor: 1"), 4,
                       "gpus[0].minor", "duplicate key"},
        BadMachineCase{"duplicate_uuid",
                       kHead + Gpu(0) + Gpu(1, "GPU-00000001", "GPU-00000000"),
                       5, "gpus[1].uuid", "duplicate UUID"},
        BadMachineCase{"duplicate_minor",
                       kHead + Gpu(0) + Gpu(1, "minor: 1", "minor: 0"), 5,
                       "gpus[1].minor", "duplicate minor"},
        BadMachineCase{"duplicate_bus_id",
                       kHead + Gpu(0) + Gpu(1, "0000:01:00.0", "0:0:0.0"), 5,
                       "gpus[1].bus_id", "duplicate bus id"},
        BadMachineCase{"mig_without_capability",
                       kHead + Gpu(0, "host_bridge: 0",
                                   "host_bridge: 0, mig_mode: enabled"),
                       4, "gpus[0].mig_mode", "mig_capable"},
        BadMachineCase{"unknown_event",
                       kHead + Gpu(0, "host_bridge: 0",
                                   "host_bridge: 0, supported_events: [fire]"),
                       4, "gpus[0].supported_events[0]", "unknown event"},
        BadMachineCase{"link_peer_missing",
                       kHead + Gpu(0, "host_bridge: 0",
                                   "host_bridge: 0, nvlinks: [{peer_gpu: 5}]"),
                       4, "gpus[0].nvlinks[0].peer_gpu", "no GPU with index 5"},
        BadMachineCase{"link_to_itself",
                       kHead + Gpu(0, "host_bridge: 0",
                                   "host_bridge: 0, nvlinks: [{peer_gpu: 0}]"),
                       4, "gpus[0].nvlinks[0].peer_gpu", "itself"},
        BadMachineCase{
            "link_to_missing_switch",
            kHead + Gpu(0, "host_bridge: 0",
                        "host_bridge: 0, nvlinks: [{peer_switch: 0}]"),
            4, "gpus[0].nvlinks[0].peer_switch", "no NVSwitch"},
        BadMachineCase{"link_not_symmetric",
                       kHead +
                           Gpu(0, "host_bridge: 0",
                               "host_bridge: 0, nvlinks: [{peer_gpu: 1}]") +
                           Gpu(1),
                       4, "gpus[0].nvlinks[0].peer_gpu", "has 0 back"},
        BadMachineCase{"host_bridge_on_two_nodes",
                       kHead + Gpu(0) + Gpu(1, "numa_node: 0", "numa_node: 1"),
                       5, "gpus[1].host_bridge", "NUMA node"},
        BadMachineCase{"mig_instances_without_mig_mode",
                       kHead + MigGpu("[{profile: 1g.5gb}]",
                                      "NVIDIA A100-SXM4-40GB", "disabled"),
                       4, "gpus[0].gpu_instances", "mig_mode: enabled"},
        BadMachineCase{"mig_unknown_product",
                       kHead + MigGpu("[{profile: 1g.5gb}]", "NVIDIA A30"), 4,
                       "gpus[0].gpu_instances", "no MIG profiles for"},
        BadMachineCase{"mig_instances_not_a_list", kHead + MigGpu("3"), 4,
                       "gpus[0].gpu_instances", "must be a list"},
        BadMachineCase{"mig_unknown_key",
                       kHead + MigGpu("[{profile: 1g.5gb, colour: red}]"), 4,
                       "gpus[0].gpu_instances[0].colour", "unknown key"},
        BadMachineCase{
            "mig_missing_profile", kHead + MigGpu("[{placement: 0}]"), 4,
            "gpus[0].gpu_instances[0].profile", "missing required field"},
        BadMachineCase{"mig_unknown_profile",
                       kHead + MigGpu("[{profile: 1g.10gb+me}]"), 4,
                       "gpus[0].gpu_instances[0].profile",
                       "unknown GPU instance profile \"1g.10gb+me\" for "
                       "NVIDIA A100-SXM4-40GB (known: 1g.5gb, 1g.5gb+me,"},
        BadMachineCase{"mig_invalid_placement",
                       kHead + MigGpu("[{profile: 2g.10gb, placement: 6}]"), 4,
                       "gpus[0].gpu_instances[0].placement",
                       "placement 6 is not valid for 2g.10gb (valid: 0, 2, 4)"},
        BadMachineCase{"mig_placement_out_of_range",
                       kHead + MigGpu("[{profile: 1g.5gb, placement: 8}]"), 4,
                       "gpus[0].gpu_instances[0].placement", "from 0 to 7"},
        BadMachineCase{"mig_overlapping_placements",
                       kHead + MigGpu("[{profile: 3g.20gb, placement: 4}, "
                                      "{profile: 1g.5gb, placement: 5}]"),
                       4, "gpus[0].gpu_instances[1].placement",
                       "placement 5 overlaps gpus[0].gpu_instances[0] "
                       "(memory slices 4-7)"},
        BadMachineCase{"mig_too_many_of_a_profile",
                       kHead + MigGpu("[{profile: 1g.5gb+me}, "
                                      "{profile: 1g.5gb+me}]"),
                       4, "gpus[0].gpu_instances[1].profile",
                       "at most 1 GPU instance(s) of 1g.5gb+me"},
        BadMachineCase{"mig_too_many_instances",
                       kHead + MigGpu("[{profile: 1g.5gb}, {profile: 1g.5gb}, "
                                      "{profile: 1g.5gb}, {profile: 1g.5gb}, "
                                      "{profile: 1g.5gb}, {profile: 1g.5gb}, "
                                      "{profile: 1g.5gb}, {profile: 1g.5gb}]"),
                       4, "gpus[0].gpu_instances", "at most 7 GPU instances"},
        BadMachineCase{
            "mig_too_many_compute_slices",
            kHead + MigGpu("[{profile: 7g.40gb}, {profile: 1g.5gb}]"), 4,
            "gpus[0].gpu_instances", "need 8 compute slices; the GPU has 7"},
        BadMachineCase{
            "mig_memory_does_not_fit",
            kHead + MigGpu("[{profile: 3g.20gb}, {profile: 3g.20gb}, "
                           "{profile: 1g.5gb}]"),
            4, "gpus[0].gpu_instances", "do not fit the GPU's 8 memory slices"},
        BadMachineCase{"mig_unknown_compute_profile",
                       kHead + MigGpu("[{profile: 3g.20gb, compute_instances: "
                                      "[{profile: 4c.3g.20gb}]}]"),
                       4,
                       "gpus[0].gpu_instances[0].compute_instances[0].profile",
                       "unknown compute instance profile \"4c.3g.20gb\" for "
                       "a 3g.20gb GPU instance (known: 1c.3g.20gb, "
                       "2c.3g.20gb, 3g.20gb)"},
        BadMachineCase{"mig_compute_instances_overflow",
                       kHead + MigGpu("[{profile: 3g.20gb, compute_instances: "
                                      "[{profile: 2c.3g.20gb}, "
                                      "{profile: 2c.3g.20gb}]}]"),
                       4,
                       "gpus[0].gpu_instances[0].compute_instances[1].profile",
                       "need 4 compute slices; a 3g.20gb GPU instance has 3"}),
    [](const ::testing::TestParamInfo<BadMachineCase>& info) {
      return std::string(info.param.name);
    });

TEST_F(MachineFileTest, DirectoryIsNotADriver) {
  UseMachine(dir_);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr(dir_));
}

TEST_F(MachineFileTest, GoodFileAfterBadFileLoads) {
  UseMachine(WriteFile("bad.yaml", "gpus: [\n"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
  ::testing::internal::GetCapturedStderr();
  UseMachine(WriteFile("good.yaml", kHead + Gpu(0)));
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
