#include "config/config_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "config/load.h"
#include "config/names.h"
#include "util/fifo_testing.h"

namespace gdp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Per test: ctest may run the tests of this binary in parallel processes.
std::string Dir() {
  return ::testing::TempDir() + "/config_file_test_" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/";
}

// Writes `text` to cfg.yaml in a temporary directory and loads it as the
// daemon would, over the defaults with no flags given.
absl::StatusOr<Config> Load(const std::string& text) {
  std::filesystem::create_directories(Dir());
  Config flags;
  flags.config_file = Dir() + "cfg.yaml";
  std::ofstream(flags.config_file) << text;
  return LoadConfig(flags, {});
}

// The error message with the temporary directory cut off: "cfg.yaml:3: ...".
std::string LoadError(const std::string& text) {
  absl::StatusOr<Config> c = Load(text);
  if (c.ok()) return "accepted";
  return absl::StrReplaceAll(c.status().message(), {{Dir(), ""}});
}

absl::StatusOr<ConfigFile> Parse(const std::string& text) {
  return ParseConfigFile(text, "cfg.yaml");
}

SharedResource Shared(const std::string& name, int replicas) {
  SharedResource r;
  r.name = name;
  r.replicas = replicas;
  return r;
}

SharedDevices Devices(SharedDevices::Kind kind, int count,
                      std::vector<std::string> list) {
  SharedDevices d;
  d.kind = kind;
  d.count = count;
  d.list = std::move(list);
  return d;
}

struct Refused {
  const char* text;
  const char* error;  // expected prefix of the message
};

// Each refused config names the file, the line and the field.
TEST(ConfigFileTest, RefusesNamingFileLineAndField) {
  const Refused cases[] = {
      // Structure, types and names, found while reading.
      {"version: v2\n", "cfg.yaml:1: version: unknown version 'v2'"},
      {"version: v1\nflag:\n  migStrategy: mixed\n",
       "cfg.yaml:2: flag: unknown field; known here: version, flags, "
       "resources, sharing, imex"},
      {"- version: v1\n", "cfg.yaml:1: the document: must be a mapping"},
      {"flags: [migStrategy]\n",
       "cfg.yaml:1: flags: must be a mapping, got a "
       "list"},
      {"flags:\n  migStrategy: Mixed\n",
       "cfg.yaml:2: flags.migStrategy: must be none, single or mixed, got "
       "'Mixed'"},
      {"flags:\n  migStrategy: none\n  migStrategy: mixed\n",
       "cfg.yaml:3: flags.migStrategy: is given more than once"},
      {"flags:\n  failOnInitError: \"false\"\n",
       "cfg.yaml:2: flags.failOnInitError: must be true or false, got a "
       "string 'false'"},
      {"flags:\n  failOnInitError: 0\n",
       "cfg.yaml:2: flags.failOnInitError: must be true or false"},
      {"flags:\n  nvidiaDriverRoot: 5\n",
       "cfg.yaml:2: flags.nvidiaDriverRoot: must be a string, got a number "
       "'5'"},
      {"flags:\n  nvidiaDriverRoot: [/]\n",
       "cfg.yaml:2: flags.nvidiaDriverRoot: must be a string, got a list"},
      {"flags:\n  plugin:\n    passDeviceSpec: true\n",
       "cfg.yaml:3: flags.plugin.passDeviceSpec: unknown field"},
      {"flags:\n  plugin:\n    deviceListStrategy: [envvar, nvlink]\n",
       "cfg.yaml:3: flags.plugin.deviceListStrategy[1]: must be envvar, "
       "volume-mounts, cdi-annotations or cdi-cri, got 'nvlink'"},
      {"flags:\n  plugin:\n    deviceListStrategy: cdi\n",
       "cfg.yaml:3: flags.plugin.deviceListStrategy: must be envvar"},
      {"flags:\n  plugin:\n    deviceIDStrategy: serial\n",
       "cfg.yaml:3: flags.plugin.deviceIDStrategy: must be uuid or index, got "
       "'serial'"},
      {"flags:\n  plugin:\n    sharedDevicesAllocationPolicy: spread\n",
       "cfg.yaml:3: flags.plugin.sharedDevicesAllocationPolicy: must be "
       "distributed or packed, got 'spread'"},
      {"flags:\n  gfd:\n    sleepInterval: soon\n",
       "cfg.yaml:3: flags.gfd.sleepInterval: must be a duration"},
      {"flags:\n  gfd:\n    oneShot: true\n",
       "cfg.yaml:3: flags.gfd.oneShot: unknown field"},
      {"flags:\n  gdsEnabled: true\n",
       "cfg.yaml:2: flags.gdsEnabled: is not supported by gpu-device-plugin"},
      {"flags:\n  mofedEnabled: true\n",
       "cfg.yaml:2: flags.mofedEnabled: is not supported"},
      {"flags:\n  gdrcopyEnabled: true\n",
       "cfg.yaml:2: flags.gdrcopyEnabled: is not supported"},
      {"flags:\n  deviceDiscoveryStrategy: tegra\n",
       "cfg.yaml:2: flags.deviceDiscoveryStrategy: 'tegra' is not supported"},
      {"flags:\n  deviceDiscoveryStrategy: gpu\n",
       "cfg.yaml:2: flags.deviceDiscoveryStrategy: must be auto, nvml"},
      {"imex:\n  channelIDs: [0]\n",
       "cfg.yaml:2: imex.channelIDs: IMEX channels are not supported"},
      {"resources:\n  gpus:\n  - name: a100\n",
       "cfg.yaml:3: resources.gpus[0].pattern: is required"},
      {"resources:\n  mig:\n  - pattern: 1g.10gb\n",
       "cfg.yaml:3: resources.mig[0].name: is required"},
      {"resources:\n  gpu:\n  - pattern: '*'\n    name: gpu\n",
       "cfg.yaml:2: resources.gpu: unknown field; known here: gpus, mig"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n",
       "cfg.yaml:4: sharing.timeSlicing.resources[0].replicas: is required"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - replicas: 2\n",
       "cfg.yaml:4: sharing.timeSlicing.resources[0].name: is required"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: \"4\"\n",
       "cfg.yaml:5: sharing.timeSlicing.resources[0].replicas: must be an "
       "integer, got a string '4'"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2.5\n",
       "cfg.yaml:5: sharing.timeSlicing.resources[0].replicas: must be an "
       "integer"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replica: 4\n",
       "cfg.yaml:5: sharing.timeSlicing.resources[0].replica: unknown field"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n  mps:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n",
       "cfg.yaml:6: sharing.mps: timeSlicing and mps cannot both be set (the "
       "other is on line 2)"},
      {"sharing:\n  timeSlicing:\n    strategy: round-robin\n",
       "cfg.yaml:3: sharing.timeSlicing.strategy: unknown field"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      devices: some\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].devices: must be 'all', a "
       "number of devices or a list of devices, got 'some'"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      devices: \"2\"\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].devices: must be 'all'"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      devices: {gpu: 0}\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].devices: must be 'all', a "
       "number of devices or a list of devices, got a mapping"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      devices:\n      - [0]\n",
       "cfg.yaml:7: sharing.timeSlicing.resources[0].devices[0]: must be a "
       "GPU index, MIG index or UUID, got a list"},
      {"sharing:\n  timeSlicing:\n    renameByDefault: \"yes\"\n",
       "cfg.yaml:3: sharing.timeSlicing.renameByDefault: must be true or "
       "false"},
      {"flags:\n  migStrategy: [none\n", "cfg.yaml:3: invalid YAML: "},
      {"version: v1\n---\nversion: v1\n",
       "cfg.yaml:3: holds more than one YAML document"},
      {"[version]: v1\n",
       "cfg.yaml:1: the document: has a key that is not a "
       "string"},

      // Values, checked with the whole configuration.
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 1\n",
       "cfg.yaml:5: sharing.timeSlicing.resources[0].replicas: must be at "
       "least 2, got 1"},
      {"sharing:\n  mps:\n    resources:\n    - name: gpu\n"
       "      replicas: -3\n",
       "cfg.yaml:5: sharing.mps.resources[0].replicas: must be at least 2"},
      {"sharing:\n  timeSlicing:\n    resources:\n"
       "    - name: a-very-long-resource-name-for-a-shared-gpu-type-abcdef\n"
       "      replicas: 2\n",
       "cfg.yaml:4: sharing.timeSlicing.resources[0].name: resource name "
       "'nvidia.com/a-very-long-resource-name-for-a-shared-gpu-type-abcdef' "
       "is 65 characters long; at most 63 are allowed"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: GPU\n"
       "      replicas: 2\n",
       "cfg.yaml:4: sharing.timeSlicing.resources[0].name: resource name "
       "'nvidia.com/GPU': 'GPU' must consist of lower-case letters"},
      {"sharing:\n  timeSlicing:\n    resources:\n"
       "    - name: example.com/gpu\n      replicas: 2\n",
       "cfg.yaml:4: sharing.timeSlicing.resources[0].name: resource name "
       "'nvidia.com/example.com/gpu' has more than one '/'"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n    - name: nvidia.com/gpu\n      replicas: 4\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[1].name: 'nvidia.com/gpu' "
       "is already listed at sharing.timeSlicing.resources[0]"},
      {"sharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
       "    - name: a-resource-name-that-fits-but-not-with-its-suffix\n"
       "      replicas: 2\n",
       "cfg.yaml:5: sharing.timeSlicing.resources[0].name: with "
       "renameByDefault, resource name"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      rename: Shared_GPU\n      replicas: 2\n",
       "cfg.yaml:5: sharing.timeSlicing.resources[0].rename: resource name "
       "'nvidia.com/Shared_GPU'"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      rename: shared\n      replicas: 2\n    - name: mig-1g.10gb\n"
       "      rename: shared\n      replicas: 2\n",
       "cfg.yaml:8: sharing.timeSlicing.resources[1].rename: is advertised as "
       "'nvidia.com/shared', as sharing.timeSlicing.resources[0] is"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      rename: mig-1g.10gb\n      replicas: 2\n"
       "    - name: mig-1g.10gb\n      replicas: 2\n",
       "cfg.yaml:5: sharing.timeSlicing.resources[0].rename: is advertised as "
       "'nvidia.com/mig-1g.10gb', the name of "
       "sharing.timeSlicing.resources[1]"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      devices: 0\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].devices: a number of "
       "devices must be at least 1, got 0"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      devices: []\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].devices: must list at "
       "least one device"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      devices:\n      - 0\n      - GPU-1234\n",
       "cfg.yaml:8: sharing.timeSlicing.resources[0].devices[1]: 'GPU-1234' "
       "is not a GPU index (\"0\"), MIG index (\"0:1\"), GPU UUID or MIG "
       "UUID"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      devices: [1, \"1\"]\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].devices[1]: '1' is "
       "already listed at [0]"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      devices: [-1]\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].devices[0]: '-1' is not"},
      // memoryPerReplica (our extension).
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      memoryPerReplica: 10GB\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].memoryPerReplica: must "
       "be a memory quantity in whole MiB such as '20Gi' or '512Mi', got "
       "'10GB'"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      memoryPerReplica: -1Gi\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].memoryPerReplica: must "
       "be a memory quantity"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      memoryPerReplica: 1.5Gi\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].memoryPerReplica: must "
       "be a memory quantity"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      memoryPerReplica: 99999999999999999999Ei\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].memoryPerReplica: must "
       "be a memory quantity"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      memoryPerReplica: 1G\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].memoryPerReplica: must "
       "be a positive whole number of MiB, got '1G' (1000000000 bytes)"},
      {"sharing:\n  mps:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      memoryPerReplica: 0\n",
       "cfg.yaml:6: sharing.mps.resources[0].memoryPerReplica: must be a "
       "positive whole number of MiB, got '0'"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      memoryPerReplica: [1Gi]\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].memoryPerReplica: must "
       "be a memory quantity"},
      {"sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      memoryPerReplica: 1Gi\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].memoryPerReplica: needs "
       "the device list strategies to be CDI only (cdi-annotations and/or "
       "cdi-cri; --device-list-strategy has envvar)"},
      {"flags:\n  plugin:\n    deviceListStrategy: [cdi-cri, volume-mounts]\n"
       "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
       "      replicas: 2\n      memoryPerReplica: 1Gi\n",
       "cfg.yaml:9: sharing.timeSlicing.resources[0].memoryPerReplica: needs "
       "the device list strategies to be CDI only (cdi-annotations and/or "
       "cdi-cri; cfg.yaml:3: flags.plugin.deviceListStrategy has "
       "volume-mounts)"},
      {"sharing:\n  timeSlicing:\n    resources: []\n",
       "cfg.yaml:3: sharing.timeSlicing.resources: must list at least one "
       "resource"},
      {"sharing:\n  timeSlicing: {}\n",
       "cfg.yaml:2: sharing.timeSlicing.resources: must list at least one "
       "resource"},
      {"sharing:\n  mps:\n    resources:\n    - name: gpu\n"
       "      replicas: 4\n",
       "cfg.yaml:2: sharing.mps: needs the MPS root directory"},
      {"flags:\n  migStrategy: mixed\n  mpsRoot: /run/nvidia/mps\nsharing:\n"
       "  mps:\n    resources:\n    - name: gpu\n      replicas: 4\n",
       "cfg.yaml:5: sharing.mps: cannot be used with MIG strategy 'mixed' (set "
       "by cfg.yaml:2: flags.migStrategy)"},
      {"flags:\n  nvidiaDriverRoot: run/nvidia/driver\n",
       "cfg.yaml:2: flags.nvidiaDriverRoot: must be an absolute path, got "
       "'run/nvidia/driver'"},
      {"flags:\n  nvidiaDevRoot: dev\n",
       "cfg.yaml:2: flags.nvidiaDevRoot: must be an absolute path"},
      {"flags:\n  mpsRoot: mps\n",
       "cfg.yaml:2: flags.mpsRoot: must be an absolute path"},
      {"flags:\n  plugin:\n    containerDriverRoot: driver-root\n",
       "cfg.yaml:3: flags.plugin.containerDriverRoot: must be an absolute "
       "path"},
      {"flags:\n  plugin:\n    cdiAnnotationPrefix: cdi.k8s.io\n",
       "cfg.yaml:3: flags.plugin.cdiAnnotationPrefix: 'cdi.k8s.io' must end "
       "with '/'"},
      {"flags:\n  plugin:\n    cdiAnnotationPrefix: CDI/\n",
       "cfg.yaml:3: flags.plugin.cdiAnnotationPrefix: 'CDI' before the '/' "
       "must be a DNS subdomain"},
      {"flags:\n  plugin:\n    deviceListStrategy: [envvar, envvar]\n",
       "cfg.yaml:3: flags.plugin.deviceListStrategy: lists 'envvar' twice"},
      {"flags:\n  plugin:\n    deviceListStrategy: []\n",
       "cfg.yaml:3: flags.plugin.deviceListStrategy: needs at least one of "
       "envvar, volume-mounts, cdi-annotations or cdi-cri"},
      {"flags:\n  gfd:\n    outputFile: gfd\n",
       "cfg.yaml:3: flags.gfd.outputFile: must be an absolute path"},
      {"flags:\n  gfd:\n    machineTypeFile: product_name\n",
       "cfg.yaml:3: flags.gfd.machineTypeFile: must be an absolute path"},
      {"flags:\n  gfd:\n    sleepInterval: -5s\n",
       "cfg.yaml:3: flags.gfd.sleepInterval: must be positive"},
      {"resources:\n  gpus:\n  - pattern: ''\n    name: gpu\n",
       "cfg.yaml:3: resources.gpus[0].pattern: must not be empty"},
      {"resources:\n  gpus:\n  - pattern: '*A100*'\n    name: a100\n"
       "  - pattern: '*A100*'\n    name: big\n",
       "cfg.yaml:5: resources.gpus[1].pattern: '*A100*' is already used by "
       "resources.gpus[0]"},
      {"resources:\n  mig:\n  - pattern: 1g.10gb\n    name: MIG small\n",
       "cfg.yaml:4: resources.mig[0].name: resource name 'nvidia.com/MIG "
       "small'"},
  };
  for (const Refused& c : cases) {
    EXPECT_THAT(LoadError(c.text), ::testing::StartsWith(c.error)) << c.text;
  }
}

// The same refusals in JSON, where everything is on one line or few.
TEST(ConfigFileTest, RefusesJsonNamingField) {
  const Refused cases[] = {
      {R"({"version": "v2"})", "cfg.yaml:1: version: unknown version 'v2'"},
      {R"({"flags": {"migStrategy": "none", "plugin": {"deviceIdStrategy": "uuid"}}})",
       "cfg.yaml:1: flags.plugin.deviceIdStrategy: unknown field"},
      {"{\"sharing\": {\"timeSlicing\": {\"resources\": [\n"
       "  {\"name\": \"gpu\", \"replicas\": 1}]}}}",
       "cfg.yaml:2: sharing.timeSlicing.resources[0].replicas: must be at "
       "least 2, got 1"},
      {R"({"sharing": {"timeSlicing": {"resources": [{"name": "gpu", "replicas": "2"}]}}})",
       "cfg.yaml:1: sharing.timeSlicing.resources[0].replicas: must be an "
       "integer, got a string '2'"},
      {R"({"flags": {"failOnInitError": "true"}})",
       "cfg.yaml:1: flags.failOnInitError: must be true or false"},
      {R"({"flags": {"migStrategy": "none"})", "cfg.yaml:1: invalid YAML"},
  };
  for (const Refused& c : cases) {
    EXPECT_THAT(LoadError(c.text), ::testing::StartsWith(c.error)) << c.text;
  }
}

TEST(ConfigFileTest, UnreadableFileIsAnError) {
  Config flags;
  flags.config_file = ::testing::TempDir() + "/no-such-config.yaml";
  absl::StatusOr<Config> c = LoadConfig(flags, {});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("cannot read config file " + flags.config_file));
  flags.config_file = ::testing::TempDir();  // a directory
  c = LoadConfig(flags, {});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("is not a regular file (a directory)"));
}

TEST(ConfigFileTest, EmptyAndVersionOnlyFilesKeepTheDefaults) {
  for (const char* text :
       {"", "\n", "# nothing\n", "version: v1\n", "version: \"\"\n",
        "version:\n", "{}", R"({"version": "v1"})",
        "version: v1\nflags:\nresources:\nsharing:\n"}) {
    absl::StatusOr<Config> c = Load(text);
    ASSERT_TRUE(c.ok()) << text << ": " << c.status();
    Config want;
    want.config_file = c->config_file;
    EXPECT_EQ(c->mig_strategy, want.mig_strategy) << text;
    EXPECT_EQ(c->driver_root, want.driver_root) << text;
    EXPECT_EQ(c->device_list_strategies, want.device_list_strategies) << text;
    EXPECT_EQ(c->sharing, want.sharing) << text;
    EXPECT_EQ(c->gfd, want.gfd) << text;
    EXPECT_TRUE(c->gpu_resources.empty()) << text;
  }
}

// NVIDIA's README example of the flags in a config file.
TEST(ConfigFileTest, FlagsExample) {
  absl::StatusOr<Config> c = Load(R"(version: v1
flags:
  migStrategy: "none"
  failOnInitError: true
  nvidiaDriverRoot: "/run/nvidia/driver"
  plugin:
    passDeviceSpecs: true
    deviceListStrategy: "volume-mounts"
    deviceIDStrategy: index
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mig_strategy, MigStrategy::kNone);
  EXPECT_TRUE(c->fail_on_init_error);
  EXPECT_EQ(c->driver_root, "/run/nvidia/driver");
  EXPECT_EQ(c->DevRoot(), "/run/nvidia/driver");
  EXPECT_TRUE(c->pass_device_specs);
  EXPECT_THAT(c->device_list_strategies,
              ElementsAre(DeviceListStrategy::kVolumeMounts));
  EXPECT_EQ(c->device_id_strategy, DeviceIdStrategy::kIndex);
}

TEST(ConfigFileTest, EveryFlag) {
  absl::StatusOr<Config> c = Load(R"(version: v1
flags:
  migStrategy: single
  failOnInitError: false
  nvidiaDriverRoot: /driver
  nvidiaDevRoot: /dev-root
  mpsRoot: /run/nvidia/mps
  plugin:
    passDeviceSpecs: yes
    deviceListStrategy: [cdi-annotations, envvar, cdi-cri, volume-mounts]
    deviceIDStrategy: uuid
    cdiAnnotationPrefix: cdi.example.com/
    containerDriverRoot: /host-driver
    sharedDevicesAllocationPolicy: packed
  gfd:
    oneshot: true
    noTimestamp: true
    sleepInterval: 1m30s
    outputFile: /tmp/gfd
    machineTypeFile: /tmp/product_name
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mig_strategy, MigStrategy::kSingle);
  EXPECT_FALSE(c->fail_on_init_error);
  EXPECT_EQ(c->driver_root, "/driver");
  EXPECT_EQ(c->DevRoot(), "/dev-root");
  EXPECT_EQ(c->mps_root, "/run/nvidia/mps");
  EXPECT_TRUE(c->pass_device_specs);
  EXPECT_THAT(
      c->device_list_strategies,
      ElementsAre(DeviceListStrategy::kCdiAnnotations,
                  DeviceListStrategy::kEnvvar, DeviceListStrategy::kCdiCri,
                  DeviceListStrategy::kVolumeMounts));
  EXPECT_EQ(c->device_id_strategy, DeviceIdStrategy::kUuid);
  EXPECT_EQ(c->cdi_annotation_prefix, "cdi.example.com/");
  EXPECT_EQ(c->container_driver_root, "/host-driver");
  EXPECT_EQ(c->shared_allocation_policy, SharedAllocationPolicy::kPacked);
  EXPECT_TRUE(c->gfd.oneshot);
  EXPECT_TRUE(c->gfd.no_timestamp);
  EXPECT_EQ(c->gfd.sleep_interval, absl::Seconds(90));
  EXPECT_EQ(c->gfd.output_file, "/tmp/gfd");
  EXPECT_EQ(c->gfd.machine_type_file, "/tmp/product_name");
}

TEST(ConfigFileTest, SleepIntervalForms) {
  struct {
    const char* value;
    absl::Duration want;
  } cases[] = {
      {"60s", absl::Seconds(60)},
      {"\"500ms\"", absl::Milliseconds(500)},
      {"2000000000", absl::Seconds(2)},  // a number is nanoseconds
      {"infinite", absl::InfiniteDuration()},
  };
  for (const auto& c : cases) {
    absl::StatusOr<Config> got =
        Load(std::string("flags:\n  gfd:\n    sleepInterval: ") + c.value);
    ASSERT_TRUE(got.ok()) << c.value << ": " << got.status();
    EXPECT_EQ(got->gfd.sleep_interval, c.want) << c.value;
  }
}

// NVIDIA's time-slicing example: 10 replicas of each GPU.
TEST(ConfigFileTest, TimeSlicingExample) {
  absl::StatusOr<Config> c = Load(R"(version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 10
)");
  ASSERT_TRUE(c.ok()) << c.status();
  Sharing want;
  want.strategy = SharingStrategy::kTimeSlicing;
  want.resources = {Shared("nvidia.com/gpu", 10)};
  EXPECT_EQ(c->sharing, want);
  EXPECT_FALSE(c->sharing.fail_requests_greater_than_one);
  EXPECT_EQ(AdvertisedName(c->sharing, c->sharing.resources[0]),
            "nvidia.com/gpu");
}

// NVIDIA's renameByDefault example: advertised as nvidia.com/gpu.shared.
TEST(ConfigFileTest, RenameByDefaultExample) {
  absl::StatusOr<Config> c = Load(R"(version: v1
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 10
    - name: mig-1g.10gb
      rename: small-mig
      replicas: 4
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->sharing.rename_by_default);
  EXPECT_TRUE(c->sharing.fail_requests_greater_than_one);
  ASSERT_EQ(c->sharing.resources.size(), 2u);
  EXPECT_EQ(c->sharing.resources[0].rename, "");
  EXPECT_EQ(AdvertisedName(c->sharing, c->sharing.resources[0]),
            "nvidia.com/gpu.shared");
  EXPECT_EQ(c->sharing.resources[1].name, "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(AdvertisedName(c->sharing, c->sharing.resources[1]),
            "nvidia.com/small-mig");
}

// NVIDIA's MPS example; failRequestsGreaterThanOne defaults to true there.
TEST(ConfigFileTest, MpsExample) {
  const std::string text = R"(version: v1
flags:
  mpsRoot: /run/nvidia/mps
sharing:
  mps:
    resources:
    - name: nvidia.com/gpu
      replicas: 10
)";
  absl::StatusOr<Config> c = Load(text);
  ASSERT_TRUE(c.ok()) << c.status();
  Sharing want;
  want.strategy = SharingStrategy::kMps;
  want.fail_requests_greater_than_one = true;
  want.resources = {Shared("nvidia.com/gpu", 10)};
  EXPECT_EQ(c->sharing, want);
  EXPECT_EQ(c->mps_root, "/run/nvidia/mps");

  c = Load(text + "    failRequestsGreaterThanOne: false\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->sharing.fail_requests_greater_than_one);
}

// memoryPerReplica: a quantity in whole MiB on timeSlicing and mps
// entries; entries without it have none.
TEST(ConfigFileTest, MemoryPerReplicaForms) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  struct Case {
    const char* value;
    uint64_t bytes;
  };
  for (const Case& c : std::vector<Case>{{"20Gi", 20480 * kMiB},
                                         {"512Mi", 512 * kMiB},
                                         {"1048576", kMiB},
                                         {"2048Ki", 2 * kMiB},
                                         {"1Ti", 1024 * 1024 * kMiB},
                                         {"\"4Gi\"", 4096 * kMiB},
                                         {"128M", 128000000}}) {
    SCOPED_TRACE(c.value);
    for (const char* strategy : {"timeSlicing", "mps"}) {
      absl::StatusOr<Config> cfg = Load(absl::StrCat(
          "flags:\n  mpsRoot: /run/nvidia/mps\n  plugin:\n"
          "    deviceListStrategy: cdi-cri\nsharing:\n  ",
          strategy,
          ":\n    resources:\n    - name: gpu\n      replicas: 4\n"
          "      memoryPerReplica: ",
          c.value, "\n    - name: mig-1g.10gb\n      replicas: 2\n"));
      if (c.bytes % kMiB != 0) {
        EXPECT_FALSE(cfg.ok());
        continue;
      }
      ASSERT_TRUE(cfg.ok()) << cfg.status();
      ASSERT_EQ(cfg->sharing.resources.size(), 2u);
      EXPECT_EQ(cfg->sharing.resources[0].memory_per_replica, c.bytes);
      EXPECT_EQ(cfg->sharing.resources[1].memory_per_replica, 0u);
    }
  }
}

// NVIDIA's MIG example (dp-example-config1): the mixed strategy, with a
// MIG profile shared and GPU names mapped.
TEST(ConfigFileTest, MigMixedExample) {
  absl::StatusOr<Config> c = Load(R"(version: v1
flags:
  migStrategy: "mixed"
  failOnInitError: true
  nvidiaDriverRoot: "/"
  plugin:
    passDeviceSpecs: false
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
resources:
  gpus:
  - pattern: "*H100*"
    name: h100
  mig:
  - pattern: "1g.10gb"
    name: mig-small
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/mig-1g.10gb
      replicas: 2
      devices: ["0:0", "0:1", 1]
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mig_strategy, MigStrategy::kMixed);
  EXPECT_THAT(c->gpu_resources,
              ElementsAre(ResourcePattern{"*H100*", "nvidia.com/h100"}));
  EXPECT_THAT(c->mig_resources,
              ElementsAre(ResourcePattern{"1g.10gb", "nvidia.com/mig-small"}));
  ASSERT_EQ(c->sharing.resources.size(), 1u);
  EXPECT_EQ(c->sharing.resources[0].devices.kind, SharedDevices::Kind::kList);
  EXPECT_THAT(c->sharing.resources[0].devices.list,
              ElementsAre("0:0", "0:1", "1"));
}

TEST(ConfigFileTest, DevicesForms) {
  struct {
    const char* devices;
    SharedDevices want;
  } cases[] = {
      {"all", {}},
      {"\"all\"", {}},
      {"3", Devices(SharedDevices::Kind::kCount, 3, {})},
      {"[0, \"2\", \"1:3\", GPU-c5f7afe2-4f64-3d72-3022-324272ec4a28, "
       "MIG-0875c775-a78e-d0e7-c775-dcd7e528a2f4, "
       "MIG-GPU-c5f7afe2-4f64-3d72-3022-324272ec4a28/1/0]",
       Devices(SharedDevices::Kind::kList, 0,
               {"0", "2", "1:3", "GPU-c5f7afe2-4f64-3d72-3022-324272ec4a28",
                "MIG-0875c775-a78e-d0e7-c775-dcd7e528a2f4",
                "MIG-GPU-c5f7afe2-4f64-3d72-3022-324272ec4a28/1/0"})},
  };
  for (const auto& c : cases) {
    absl::StatusOr<Config> got = Load(
        std::string("sharing:\n  timeSlicing:\n    resources:\n"
                    "    - name: gpu\n      replicas: 2\n      devices: ") +
        c.devices + "\n");
    ASSERT_TRUE(got.ok()) << c.devices << ": " << got.status();
    EXPECT_EQ(got->sharing.resources[0].devices, c.want) << c.devices;
  }
  // Absent: all.
  absl::StatusOr<Config> got = Load(
      "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
      "      replicas: 2\n");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->sharing.resources[0].devices, SharedDevices{});
}

// The same configuration in YAML and JSON gives the same Config.
TEST(ConfigFileTest, JsonEqualsYaml) {
  absl::StatusOr<Config> yaml = Load(R"(version: v1
flags:
  migStrategy: single
  mpsRoot: /mps
  plugin:
    deviceListStrategy: [envvar, cdi-cri]
  gfd:
    sleepInterval: 30s
resources:
  gpus:
  - pattern: "*"
    name: gpu
sharing:
  mps:
    renameByDefault: true
    resources:
    - name: gpu
      replicas: 4
      devices: [0, 1]
)");
  absl::StatusOr<Config> json = Load(R"({
  "version": "v1",
  "flags": {
    "migStrategy": "single",
    "mpsRoot": "/mps",
    "plugin": {"deviceListStrategy": ["envvar", "cdi-cri"]},
    "gfd": {"sleepInterval": "30s"}
  },
  "resources": {"gpus": [{"pattern": "*", "name": "gpu"}]},
  "sharing": {
	"mps": {
	  "renameByDefault": true,
	  "resources": [{"name": "gpu", "replicas": 4, "devices": [0, 1]}]
	}
  }
})");
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(json->mig_strategy, yaml->mig_strategy);
  EXPECT_EQ(json->mps_root, yaml->mps_root);
  EXPECT_EQ(json->device_list_strategies, yaml->device_list_strategies);
  EXPECT_EQ(json->gfd, yaml->gfd);
  EXPECT_EQ(json->gpu_resources, yaml->gpu_resources);
  EXPECT_EQ(json->sharing, yaml->sharing);
  EXPECT_EQ(json->sharing.resources[0].devices.list,
            (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(json->gfd.sleep_interval, absl::Seconds(30));
}

// Null values count as absent; fields NVIDIA knows for features we lack
// are accepted while they ask for nothing.
TEST(ConfigFileTest, NullsAndInertNvidiaFields) {
  absl::StatusOr<Config> c = Load(R"(version: v1
flags:
  migStrategy: null
  failOnInitError:
  nvidiaDevRoot: ~
  gdrcopyEnabled: false
  gdsEnabled: false
  mofedEnabled: false
  useNodeFeatureAPI: true
  deviceDiscoveryStrategy: auto
  plugin:
    nvidiaCTKPath: /usr/bin/nvidia-ctk
imex:
  channelIDs: []
  required: false
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mig_strategy, MigStrategy::kNone);
  EXPECT_TRUE(c->fail_on_init_error);
  EXPECT_EQ(c->DevRoot(), "/");

  absl::StatusOr<ConfigFile> f = Parse("flags:\n  migStrategy: null\n");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_FALSE(f->Gives("flags.migStrategy"));
  EXPECT_FALSE(f->lines.contains("flags.migStrategy"));
}

TEST(ConfigFileTest, ShortNamesGetTheNvidiaDomain) {
  absl::StatusOr<ConfigFile> f = Parse(R"(resources:
  gpus:
  - pattern: "*"
    name: gpu-any
sharing:
  timeSlicing:
    resources:
    - name: gpu
      rename: gpu-shared
      replicas: 2
)");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f->gpu_resources)[0].name, "nvidia.com/gpu-any");
  EXPECT_EQ(f->sharing->resources[0].name, "nvidia.com/gpu");
  EXPECT_EQ(f->sharing->resources[0].rename, "nvidia.com/gpu-shared");
}

TEST(ConfigFileTest, RecordsWhatIsSetAndWhere) {
  absl::StatusOr<ConfigFile> f = Parse(R"(version: v1
flags:
  plugin:
    passDeviceSpecs: false
sharing:
  timeSlicing:
    resources:
    - name: gpu
      replicas: 2
      devices:
      - 0
      - 1
)");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->Gives("flags.plugin.passDeviceSpecs"));
  EXPECT_FALSE(f->settings.pass_device_specs);
  EXPECT_FALSE(f->Gives("flags.migStrategy"));
  EXPECT_FALSE(f->Gives("flags.plugin.deviceListStrategy"));
  EXPECT_FALSE(f->gpu_resources.has_value());
  EXPECT_EQ(f->LineOf("flags.plugin.passDeviceSpecs"), 4);
  EXPECT_EQ(f->LineOf("sharing.timeSlicing"), 6);
  EXPECT_EQ(f->LineOf("sharing.timeSlicing.resources[0]"), 8);
  EXPECT_EQ(f->LineOf("sharing.timeSlicing.resources[0].replicas"), 9);
  EXPECT_EQ(f->LineOf("sharing.timeSlicing.resources[0].devices[1]"), 12);
  EXPECT_EQ(f->LineOf("sharing.timeSlicing.resources[0].rename"), 8);
  EXPECT_EQ(f->LineOf("flags.migStrategy"), 2);
  EXPECT_EQ(f->LineOf("resources.gpus"), 0);
}

}  // namespace
}  // namespace gdp

namespace gdp {
namespace {

// Input a user slips into or an attacker writes: refused at once, naming the
// line, in bounded memory and stack (each of these once crashed or hung).
TEST(ConfigFileTest, HostileInputIsRefusedBounded) {
  const std::string sharing =
      "sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n"
      "      replicas: 2\n      devices: [";
  std::string deep;
  for (int i = 0; i < 2000; ++i) deep += "[";
  const struct {
    std::string text;
    std::string error;
  } cases[] = {
      // yaml-cpp's LoadAll allocated without end on a trailing comma.
      {"{\"version\":\"v1\"},\n",
       "cfg.yaml:1: holds more than one YAML document (or text after the "
       "config, such as a trailing comma)"},
      {"{\"version\":\"v1\"}\n,\n", "cfg.yaml:"},
      // std::regex overflowed the stack on a 26,000-digit device.
      {sharing + std::string(26000, '7') + "]\n",
       "cfg.yaml:6: too large: a value of 26000 bytes; at most 4096"},
      {sharing + std::string(4000, '7') + "]\n",
       "cfg.yaml:6: sharing.timeSlicing.resources[0].devices[0]: '"},
      {"version: v1\nflags:\n  migStrategy: " + std::string(5000, 'x') + "\n",
       "cfg.yaml:3: too large: a value of 5000 bytes; at most 4096"},
      {"flags: " + deep + "\n", "cfg.yaml:1: too large: nested deeper than 32"},
      {"version: v1\n# " + std::string(2 << 20, 'x') + "\n",
       "cfg.yaml: larger than 1048576 bytes"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(LoadError(c.text), ::testing::StartsWith(c.error))
        << c.text.substr(0, 80);
  }
}

// A FIFO or a device in place of the config file is refused without
// blocking (open() on a FIFO waits for a writer) or reading it.
TEST(ConfigFileTest, AFifoOrDeviceIsRefusedWithoutBlocking) {
  const std::string fifo = ::testing::TempDir() + "/gdp-config-fifo-" +
                           std::to_string(getpid()) + ".yaml";
  std::filesystem::remove(fifo);
  absl::StatusOr<ConfigFile> got;
  EXPECT_TRUE(gdp::testing::ReturnsWithFifoInPlace(
      fifo, [&] { got = ReadConfigFile(fifo); }));
  EXPECT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(),
              HasSubstr(fifo + " is not a regular file (a FIFO)"));
  std::filesystem::remove(fifo);
  got = ReadConfigFile("/dev/zero");
  EXPECT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(),
              HasSubstr("/dev/zero is not a regular file (a character "
                        "device)"));
}

}  // namespace
}  // namespace gdp
