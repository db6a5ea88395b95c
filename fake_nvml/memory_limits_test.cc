// Per-cgroup GPU memory limits (nvmlDevice{Set,Get}MemoryLimits_v1): the
// library's answers, the file other processes share, `fake-nvml
// memory-limits`, and the library variant without the entry points.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "fake_nvml/test_client.h"
#include "testing/test_cgroup.h"

namespace gdp::fake_nvml::testing {
namespace {

constexpr unsigned long long kMiB = 1ull << 20;
constexpr unsigned long long kMax = NVML_DEVICE_MEMORY_LIMIT_MAX;

// GPU 0: 1024 MiB; GPU 1: an A100 with MIG enabled (one 7g.80gb); GPU 2:
// 2048 MiB, for losing. `driver` is the driver version.
std::string Machine(const std::string& driver) {
  return absl::StrCat(
      "driver_version: \"", driver,
      "\"\ncuda_driver_version: 13040\ngpus:\n"
      "  - {name: Some GPU, uuid: GPU-00000000-0000-0000-0000-000000000000, "
      "minor: 0, bus_id: \"0000:01:00.0\", pci_device_id: 0x20B010DE, "
      "pci_subsystem_id: 0x134F10DE, memory_mib: 1024, compute_capability: "
      "\"8.0\", numa_node: 0, host_bridge: 0}\n"
      "  - name: NVIDIA A100-SXM4-80GB\n"
      "    uuid: GPU-11111111-0000-0000-0000-000000000000\n"
      "    minor: 1\n    bus_id: \"0000:02:00.0\"\n"
      "    pci_device_id: 0x20B210DE\n    pci_subsystem_id: 0x146310DE\n"
      "    memory_mib: 81920\n    compute_capability: \"8.0\"\n"
      "    numa_node: 0\n    host_bridge: 0\n    mig_capable: true\n"
      "    mig_mode: enabled\n    gpu_instances: [{profile: 7g.80gb}]\n"
      "  - {name: Some GPU, uuid: GPU-22222222-0000-0000-0000-000000000000, "
      "minor: 2, bus_id: \"0000:03:00.0\", pci_device_id: 0x20B010DE, "
      "pci_subsystem_id: 0x134F10DE, memory_mib: 2048, compute_capability: "
      "\"8.0\", numa_node: 0, host_bridge: 0}\n");
}

class MemoryLimitsTest : public FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    if (!cgroup_.ok()) GTEST_SKIP() << cgroup_.error();
    limits_ = dir_ + "/memory-limits";
    setenv("FAKE_NVML_MEMORY_LIMITS", limits_.c_str(), 1);
  }

  // Inits with Machine(driver).
  void Init(const std::string& driver = "615.20.01") {
    UseMachine(WriteFile("machine.yaml", Machine(driver)));
    ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  }

  nvmlReturn_t Set(nvmlDevice_t device, const char* cgroup,
                   unsigned long long soft, unsigned long long hard) {
    nvmlSetMemoryLimits_v1_t limits{cgroup, soft, hard};
    return NVML(nvmlDeviceSetMemoryLimits_v1)(device, &limits);
  }

  // {soft, hard} of `cgroup` on `device`, or {code, code} on failure.
  std::pair<unsigned long long, unsigned long long> Get(nvmlDevice_t device,
                                                        const char* cgroup) {
    nvmlGetMemoryLimits_v1_t limits{cgroup, 1, 1, 1};
    const nvmlReturn_t r = NVML(nvmlDeviceGetMemoryLimits_v1)(device, &limits);
    if (r != NVML_SUCCESS) return {r, r};
    EXPECT_EQ(limits.currentUsed, 0u);
    return {limits.softLimit, limits.hardLimit};
  }

  // What `fake-nvml memory-limits ARGS` prints; "exit N" appended when it
  // fails.
  std::string Tool(const std::string& args) {
    const std::string command =
        absl::StrCat(FAKE_NVML_TOOL, " memory-limits ", args, " 2>&1");
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

  ::gdp::testing::TestCgroup cgroup_{"gdp-fake-nvml"};
  std::string limits_;
};

TEST_F(MemoryLimitsTest, SetGetClearPerGpuAndCgroup) {
  Init();
  const std::string a = cgroup_.Child("a");
  const std::string b = cgroup_.Child("b");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  using Limits = std::pair<unsigned long long, unsigned long long>;
  EXPECT_EQ(Get(Device(0), a.c_str()), Limits(0, kMax)) << "nothing set";

  ASSERT_EQ(Set(Device(0), a.c_str(), 0, 512 * kMiB), NVML_SUCCESS);
  ASSERT_EQ(Set(Device(2), a.c_str(), 256 * kMiB, 1024 * kMiB), NVML_SUCCESS);
  ASSERT_EQ(Set(Device(0), b.c_str(), 128 * kMiB, 128 * kMiB), NVML_SUCCESS);
  EXPECT_EQ(Get(Device(0), a.c_str()), Limits(0, 512 * kMiB));
  EXPECT_EQ(Get(Device(2), a.c_str()), Limits(256 * kMiB, 1024 * kMiB));
  EXPECT_EQ(Get(Device(0), b.c_str()), Limits(128 * kMiB, 128 * kMiB));
  EXPECT_EQ(Get(Device(2), b.c_str()), Limits(0, kMax));
  EXPECT_EQ(Get(Device(0), cgroup_.path().c_str()), Limits(0, kMax))
      << "a parent's limits are its own";
  EXPECT_EQ(Get(Device(0), (a + "/").c_str()), Limits(0, 512 * kMiB))
      << "another spelling of the same directory";

  // Setting again replaces; soft 0 with hard max clears.
  ASSERT_EQ(Set(Device(0), a.c_str(), 64 * kMiB, kMax), NVML_SUCCESS);
  EXPECT_EQ(Get(Device(0), a.c_str()), Limits(64 * kMiB, kMax));
  ASSERT_EQ(Set(Device(0), a.c_str(), 0, kMax), NVML_SUCCESS);
  EXPECT_EQ(Get(Device(0), a.c_str()), Limits(0, kMax));
  // The whole GPU as the hard limit is a limit like any other.
  ASSERT_EQ(Set(Device(0), a.c_str(), 0, 1024 * kMiB), NVML_SUCCESS);
  EXPECT_EQ(Get(Device(0), a.c_str()), Limits(0, 1024 * kMiB));

  // Another process sees them.
  const std::string kGpu0 =
      "{\"gpu\": 0, \"uuid\": \"GPU-00000000-0000-0000-0000-000000000000\", ";
  const std::string kGpu2 =
      "{\"gpu\": 2, \"uuid\": \"GPU-22222222-0000-0000-0000-000000000000\", ";
  EXPECT_EQ(
      Tool("--get --json"),
      absl::StrCat("[\n  ", kGpu0, "\"cgroup\": \"", a,
                   "\", \"soft\": 0, \"hard\": 1073741824},\n  ", kGpu0,
                   "\"cgroup\": \"", b,
                   "\", \"soft\": 134217728, \"hard\": 134217728},\n  ", kGpu2,
                   "\"cgroup\": \"", a,
                   "\", \"soft\": 268435456, \"hard\": 1073741824}\n]\n"));
  EXPECT_EQ(
      Tool(absl::StrCat("--get -i 2 -n ", a)),
      absl::StrCat("gpu: 2\nuuid: GPU-22222222-0000-0000-0000-000000000000"
                   "\nnamespace: ",
                   a, "\nsoft limit: 256 MiB\nhard limit: 1024 MiB\n"));
  EXPECT_EQ(Tool(absl::StrCat("--get --json -i 1")), "[]\n");
}

TEST_F(MemoryLimitsTest, BadArguments) {
  Init();
  const std::string a = cgroup_.Child("a");
  ASSERT_FALSE(a.empty());
  const std::string file = WriteFile("plain-file", "x");
  const std::string long_path = "/" + std::string(5000, 'x');
  const struct {
    const char* what;
    const char* cgroup;
    unsigned long long soft, hard;
    nvmlReturn_t want_set;
    nvmlReturn_t want_get;
  } kCases[] = {
      {"null", nullptr, 0, kMax, NVML_ERROR_INVALID_ARGUMENT,
       NVML_ERROR_INVALID_ARGUMENT},
      {"empty", "", 0, kMax, NVML_ERROR_INVALID_ARGUMENT,
       NVML_ERROR_INVALID_ARGUMENT},
      {"relative", "sys/fs/cgroup", 0, kMax, NVML_ERROR_INVALID_ARGUMENT,
       NVML_ERROR_INVALID_ARGUMENT},
      {"too long", long_path.c_str(), 0, kMax, NVML_ERROR_INVALID_ARGUMENT,
       NVML_ERROR_INVALID_ARGUMENT},
      {"missing", "/sys/fs/cgroup/no-such-cgroup-here", 0, kMax,
       NVML_ERROR_NOT_FOUND, NVML_ERROR_NOT_FOUND},
      {"not a cgroup2 directory", dir_.c_str(), 0, kMax, NVML_ERROR_NOT_FOUND,
       NVML_ERROR_NOT_FOUND},
      {"a file", file.c_str(), 0, kMax, NVML_ERROR_NOT_FOUND,
       NVML_ERROR_NOT_FOUND},
      {"soft above hard", a.c_str(), 2 * kMiB, kMiB,
       NVML_ERROR_INVALID_ARGUMENT, NVML_SUCCESS},
      {"soft max, hard not", a.c_str(), kMax, kMiB, NVML_ERROR_INVALID_ARGUMENT,
       NVML_SUCCESS},
      {"hard above the GPU", a.c_str(), 0, 1025 * kMiB,
       NVML_ERROR_INVALID_ARGUMENT, NVML_SUCCESS},
      {"soft above the GPU", a.c_str(), 1025 * kMiB, kMax,
       NVML_ERROR_INVALID_ARGUMENT, NVML_SUCCESS},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(Set(Device(0), c.cgroup, c.soft, c.hard), c.want_set) << c.what;
    nvmlGetMemoryLimits_v1_t got{c.cgroup, 0, 0, 0};
    EXPECT_EQ(NVML(nvmlDeviceGetMemoryLimits_v1)(Device(0), &got), c.want_get)
        << c.what;
  }
  EXPECT_EQ(NVML(nvmlDeviceSetMemoryLimits_v1)(Device(0), nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetMemoryLimits_v1)(Device(0), nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Tool("--get --json"), "[]\n") << "nothing was set";
}

TEST_F(MemoryLimitsTest, DevicesThatCannot) {
  // Without FAKE_NVML_MEMORY_LIMITS the limits go beside the control file.
  unsetenv("FAKE_NVML_MEMORY_LIMITS");
  UseControl();
  Init();
  const std::string a = cgroup_.Child("a");
  ASSERT_FALSE(a.empty());
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(Device(1), 0, &mig),
            NVML_SUCCESS);
  nvmlDevice_t lost = Device(2);
  Control("lose 2");
  ASSERT_TRUE(Eventually([&] {
    unsigned minor = 0;
    return NVML(nvmlDeviceGetMinorNumber)(lost, &minor) ==
           NVML_ERROR_GPU_IS_LOST;
  }));
  int garbage = 0;
  const struct {
    const char* what;
    nvmlDevice_t device;
    nvmlReturn_t want;
  } kCases[] = {
      {"MIG device handle", mig, NVML_ERROR_NOT_SUPPORTED},
      {"GPU with MIG enabled", Device(1), NVML_ERROR_NOT_SUPPORTED},
      {"lost GPU", lost, NVML_ERROR_GPU_IS_LOST},
      {"null handle", nullptr, NVML_ERROR_INVALID_ARGUMENT},
      {"garbage handle", reinterpret_cast<nvmlDevice_t>(&garbage),
       NVML_ERROR_INVALID_ARGUMENT},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(Set(c.device, a.c_str(), 0, kMiB), c.want) << c.what;
    EXPECT_EQ(Get(c.device, a.c_str()).first, c.want) << c.what;
  }
  EXPECT_EQ(Set(Device(0), a.c_str(), 0, kMiB), NVML_SUCCESS);
  EXPECT_EQ(
      Tool(absl::StrCat("--get --json --limits ", dir_, "/memory-limits")),
      absl::StrCat("[\n  {\"gpu\": 0, \"uuid\": "
                   "\"GPU-00000000-0000-0000-0000-000000000000\", "
                   "\"cgroup\": \"",
                   a, "\", \"soft\": 0, \"hard\": 1048576}\n]\n"));
}

TEST_F(MemoryLimitsTest, DriverBeforeR615) {
  Init("610.43.02");
  const std::string a = cgroup_.Child("a");
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(Set(Device(0), a.c_str(), 0, kMiB), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(Get(Device(0), a.c_str()).first, NVML_ERROR_NOT_SUPPORTED);
  const std::string machine = dir_ + "/machine.yaml";
  EXPECT_EQ(Tool(absl::StrCat("--set -n ", a,
                              " -i 0 --soft-limit 0 "
                              "--hard-limit 1 --machine ",
                              machine)),
            "fake-nvml: driver 610.43.02 has no memory limits (R615 and "
            "later)\nexit 1");
}

TEST_F(MemoryLimitsTest, UnprivilegedCallerReadsOnly) {
  setenv("FAKE_NVML_EUID", "1000", 1);
  Init();
  const std::string a = cgroup_.Child("a");
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(Set(Device(0), a.c_str(), 0, kMiB), NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(Get(Device(0), a.c_str()),
            std::make_pair(0ull, static_cast<unsigned long long>(kMax)));
}

TEST_F(MemoryLimitsTest, BadEuidFailsInit) {
  setenv("FAKE_NVML_EUID", "root", 1);
  UseMachine(WriteFile("machine.yaml", Machine("615.20.01")));
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
}

TEST_F(MemoryLimitsTest, RemovedCgroupHasNoLimits) {
  Init();
  const std::string a = cgroup_.Child("a");
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(Set(Device(0), a.c_str(), kMiB, 2 * kMiB), NVML_SUCCESS);
  ASSERT_TRUE(cgroup_.RemoveChild("a"));
  EXPECT_EQ(Get(Device(0), a.c_str()).first, NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(Tool("--get --json"), "[]\n");
  // Made again under the same path: a new cgroup, without limits.
  ASSERT_EQ(cgroup_.Child("a"), a);
  EXPECT_EQ(Get(Device(0), a.c_str()),
            std::make_pair(0ull, static_cast<unsigned long long>(kMax)));
  // The stale entry goes at the next update.
  ASSERT_EQ(Set(Device(2), a.c_str(), 0, kMiB), NVML_SUCCESS);
  EXPECT_EQ(Tool("--get --json"),
            absl::StrCat("[\n  {\"gpu\": 2, \"uuid\": "
                         "\"GPU-22222222-0000-0000-0000-000000000000\", "
                         "\"cgroup\": \"",
                         a, "\", \"soft\": 0, \"hard\": 1048576}\n]\n"));
}

TEST_F(MemoryLimitsTest, ToolSetIsSeenByTheLibrary) {
  Init();
  const std::string a = cgroup_.Child("a");
  ASSERT_FALSE(a.empty());
  const std::string machine = dir_ + "/machine.yaml";
  const struct {
    std::string args;
    std::string want;
  } kCases[] = {
      {absl::StrCat("--set -n ", a,
                    " -i 2 --soft-limit 100 --hard-limit 200 "
                    "--machine ",
                    machine),
       ""},
      {absl::StrCat("--set -n ", a,
                    " -i 2 --soft-limit 300 --hard-limit 200 "
                    "--machine ",
                    machine),
       "fake-nvml: soft limit 314572800 is above the hard limit 209715200\n"
       "exit 1"},
      {absl::StrCat("--set -n ", a,
                    " -i 1 --soft-limit 0 --hard-limit max --machine ",
                    machine),
       "fake-nvml: GPU 1 has MIG enabled: memory limits are not supported\n"
       "exit 1"},
      {absl::StrCat("--set -n ", a,
                    " -i 3 --soft-limit 0 --hard-limit max --machine ",
                    machine),
       "fake-nvml: no GPU 3\nexit 1"},
      {absl::StrCat("--set -n ", dir_,
                    " -i 0 --soft-limit 0 --hard-limit max --machine ",
                    machine),
       absl::StrCat("fake-nvml: cgroup ", dir_,
                    ": not on a cgroup2 filesystem\nexit 1")},
      {absl::StrCat("--set -n ", a, " -i 0 --soft-limit x --hard-limit 1 "),
       "fake-nvml: limits are whole MiB or 'max'\nexit 1"},
      {"--get --set", "fake-nvml: give one of --get and --set\nexit 1"},
  };
  for (const auto& c : kCases) EXPECT_EQ(Tool(c.args), c.want) << c.args;
  EXPECT_EQ(Get(Device(2), a.c_str()), std::make_pair(100 * kMiB, 200 * kMiB));
}

TEST_F(MemoryLimitsTest, NowhereToKeepThem) {
  unsetenv("FAKE_NVML_MEMORY_LIMITS");
  Init();
  const std::string a = cgroup_.Child("a");
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(Set(Device(0), a.c_str(), 0, kMiB), NVML_ERROR_UNKNOWN);
  EXPECT_EQ(Get(Device(0), a.c_str()),
            std::make_pair(0ull, static_cast<unsigned long long>(kMax)));
  EXPECT_EQ(Tool("--get"),
            "fake-nvml: no limits file: give --limits, or set "
            "FAKE_NVML_MEMORY_LIMITS or FAKE_NVML_CONTROL as for the "
            "library\nexit 1");
}

TEST_F(MemoryLimitsTest, MemoryInfoInsideALimitedCgroup) {
  Init();
  const std::string a = cgroup_.Child("a");
  const std::string b = cgroup_.Child("a/b");
  ASSERT_FALSE(b.empty());
  ASSERT_EQ(Set(Device(0), a.c_str(), 0, 300 * kMiB), NVML_SUCCESS);
  ASSERT_EQ(Set(Device(2), b.c_str(), 0, 100 * kMiB), NVML_SUCCESS);
  const auto total = [&](unsigned gpu) {
    nvmlMemory_v2_t memory{};
    memory.version = nvmlMemory_v2;
    EXPECT_EQ(NVML(nvmlDeviceGetMemoryInfo_v2)(Device(gpu), &memory),
              NVML_SUCCESS);
    EXPECT_EQ(memory.free + memory.used, memory.total) << gpu;
    return memory.total;
  };
  const struct {
    std::string where;
    unsigned long long gpu0, gpu2;
  } kCases[] = {
      {"", 1024 * kMiB, 2048 * kMiB},
      {a, 300 * kMiB, 2048 * kMiB},
      {b, 1024 * kMiB, 100 * kMiB},  // a's limit is not b's
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.where);
    std::optional<::gdp::testing::InCgroup> in;
    if (!c.where.empty()) {
      in.emplace(c.where);
      ASSERT_TRUE(in->ok());
    }
    EXPECT_EQ(total(0), c.gpu0);
    EXPECT_EQ(total(2), c.gpu2);
    nvmlMemory_t v1{};
    ASSERT_EQ(NVML(nvmlDeviceGetMemoryInfo)(Device(0), &v1), NVML_SUCCESS);
    EXPECT_EQ(v1.total, 1024 * kMiB) << "v1 is not adjusted";
  }
}

TEST(PreLimitsLibraryTest, LacksTheEntryPoints) {
  void* lib = dlopen(FAKE_NVML_PRE_LIMITS_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  EXPECT_EQ(dlsym(lib, "nvmlDeviceSetMemoryLimits_v1"), nullptr);
  EXPECT_EQ(dlsym(lib, "nvmlDeviceGetMemoryLimits_v1"), nullptr);
  EXPECT_NE(dlsym(lib, "nvmlDeviceGetMigMode"), nullptr);
  dlclose(lib);
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
