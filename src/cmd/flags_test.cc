#include "cmd/flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "config/names.h"
#include "config/settings.h"

namespace gdp {
namespace {

ParsedFlags Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "gpu-device-plugin");
  return ParseFlags(static_cast<int>(args.size()), args.data());
}

class FlagsTest : public ::testing::Test {
 protected:
  // No variable of any setting (from the table, so a new row is covered)
  // and none of what the in-cluster config reads.
  void SetUp() override {
    for (const Setting& s : Settings()) {
      for (absl::string_view v :
           absl::StrSplit(s.env, ',', absl::SkipEmpty())) {
        unsetenv(std::string(v).c_str());
      }
    }
    for (const char* v :
         {"CONFIG_FILE", "DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT",
          "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}) {
      unsetenv(v);
    }
  }

  // Writes a config file and returns its path.
  std::string WriteConfig(const std::string& text) {
    // Per test: ctest may run this binary's tests in parallel processes.
    const std::string dir =
        ::testing::TempDir() + "/flags_test_" +
        ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/config.yaml";
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(FlagsTest, Defaults) {
  ParsedFlags f = Parse({});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->kubelet_socket,
            "/var/lib/kubelet/device-plugins/kubelet.sock");
  EXPECT_EQ(f.config->driver_root, "/");
  EXPECT_EQ(f.config->DevRoot(), "/");
  EXPECT_TRUE(f.config->fail_on_init_error);
  EXPECT_FALSE(f.config->pass_device_specs);
  EXPECT_EQ(f.config->device_id_strategy, DeviceIdStrategy::kUuid);
  EXPECT_EQ(f.command, Command::kServe);
}

TEST_F(FlagsTest, EnvBeatsDefaultAndFlagBeatsEnv) {
  setenv("KUBELET_SOCKET", "/env/kubelet.sock", 1);
  setenv("NVIDIA_DRIVER_ROOT", "/run/nvidia/driver", 1);
  setenv("FAIL_ON_INIT_ERROR", "false", 1);
  setenv("PASS_DEVICE_SPECS", "true", 1);
  setenv("DEVICE_ID_STRATEGY", "index", 1);
  ParsedFlags env = Parse({});
  ASSERT_TRUE(env.config.has_value());
  EXPECT_EQ(env.config->kubelet_socket, "/env/kubelet.sock");
  EXPECT_EQ(env.config->DevRoot(), "/run/nvidia/driver");
  EXPECT_FALSE(env.config->fail_on_init_error);
  EXPECT_TRUE(env.config->pass_device_specs);
  EXPECT_EQ(env.config->device_id_strategy, DeviceIdStrategy::kIndex);

  ParsedFlags flags =
      Parse({"--kubelet-socket=/flag/kubelet.sock", "--nvidia-driver-root",
             "/drv", "--dev-root=/devroot", "--fail-on-init-error=true",
             "--pass-device-specs=false", "--device-id-strategy=uuid"});
  ASSERT_TRUE(flags.config.has_value());
  EXPECT_EQ(flags.config->kubelet_socket, "/flag/kubelet.sock");
  EXPECT_EQ(flags.config->driver_root, "/drv");
  EXPECT_EQ(flags.config->DevRoot(), "/devroot");
  EXPECT_TRUE(flags.config->fail_on_init_error);
  EXPECT_FALSE(flags.config->pass_device_specs);
  EXPECT_EQ(flags.config->device_id_strategy, DeviceIdStrategy::kUuid);
}

TEST_F(FlagsTest, BareBooleanFlagsMeanTrue) {
  ParsedFlags f = Parse({"--pass-device-specs"});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_TRUE(f.config->pass_device_specs);
}

TEST_F(FlagsTest, BadValuesAreUsageErrors) {
  for (std::vector<const char*> args :
       {std::vector<const char*>{"--device-id-strategy=serial"},
        {"--kubelet-socket=relative/kubelet.sock"},
        {"--driver-root=relative"},
        {"--no-such-flag"}}) {
    ParsedFlags f = Parse(args);
    EXPECT_FALSE(f.config.has_value()) << args[0];
    EXPECT_EQ(f.exit_code, 2) << args[0];
  }
}

TEST_F(FlagsTest, HelpAndVersionExitZero) {
  for (const char* arg : {"--help", "--version"}) {
    ParsedFlags f = Parse({arg});
    EXPECT_FALSE(f.config.has_value());
    EXPECT_EQ(f.exit_code, 0);
  }
}

TEST_F(FlagsTest, KlogVerbositySpellings) {
  for (std::vector<const char*> args : {std::vector<const char*>{"-v=3"},
                                        {"--v=3"},
                                        {"--v", "3"},
                                        {"-v", "3"},
                                        {"-v3"},
                                        {"--verbosity=3"}}) {
    ParsedFlags f = Parse(args);
    ASSERT_TRUE(f.config.has_value()) << args[0];
    EXPECT_EQ(f.config->verbosity, 3) << args[0];
  }
}

TEST_F(FlagsTest, NvmlRetryInterval) {
  EXPECT_EQ(Parse({}).config->nvml_retry_interval, absl::Seconds(30));
  EXPECT_EQ(Parse({"--nvml-retry-interval=2"}).config->nvml_retry_interval,
            absl::Seconds(2));
  EXPECT_FALSE(Parse({"--nvml-retry-interval=0"}).config.has_value());
}

TEST_F(FlagsTest, RediscoverInterval) {
  EXPECT_EQ(Parse({}).config->rediscover_interval, absl::Seconds(60));
  EXPECT_EQ(Parse({"--rediscover-interval=200ms"}).config->rediscover_interval,
            absl::Milliseconds(200));
  EXPECT_EQ(Parse({"--rediscover-interval=0"}).config->rediscover_interval,
            absl::ZeroDuration());
  setenv("REDISCOVER_INTERVAL", "2m", 1);
  EXPECT_EQ(Parse({}).config->rediscover_interval, absl::Minutes(2));
  EXPECT_EQ(Parse({"--rediscover-interval=5s"}).config->rediscover_interval,
            absl::Seconds(5));
  unsetenv("REDISCOVER_INTERVAL");
  for (const char* bad :
       {"--rediscover-interval=-1s", "--rediscover-interval=often",
        "--rediscover-interval=inf"}) {
    ParsedFlags f = Parse({bad});
    EXPECT_FALSE(f.config.has_value()) << bad;
    EXPECT_EQ(f.exit_code, 2) << bad;
  }
}

TEST_F(FlagsTest, NewFlagsAndTheirVariables) {
  ParsedFlags f = Parse({});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->mig_strategy, MigStrategy::kNone);
  EXPECT_EQ(f.config->device_list_strategies,
            std::vector<DeviceListStrategy>{DeviceListStrategy::kEnvvar});
  EXPECT_EQ(f.config->cdi_annotation_prefix, "cdi.k8s.io/");
  EXPECT_EQ(f.config->container_driver_root, "/driver-root");
  EXPECT_EQ(f.config->mps_root, "");
  EXPECT_EQ(f.config->shared_allocation_policy,
            SharedAllocationPolicy::kDistributed);
  EXPECT_EQ(f.config->cdi_spec_dir, "/var/run/cdi");
  EXPECT_EQ(f.config->proc_root, "/proc");
  EXPECT_TRUE(f.explicit_settings.empty());

  f = Parse({"--cdi-spec-dir=/etc/cdi", "--proc-root", "/host/proc",
             "--device-list-strategy", "envvar,cdi-annotations",
             "--device-list-strategy=cdi-cri", "--container-driver-root=/drv",
             "discover"});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.command, Command::kDiscover);
  EXPECT_EQ(f.config->cdi_spec_dir, "/etc/cdi");
  EXPECT_EQ(f.config->proc_root, "/host/proc");
  EXPECT_EQ(
      f.config->device_list_strategies,
      (std::vector<DeviceListStrategy>{DeviceListStrategy::kEnvvar,
                                       DeviceListStrategy::kCdiAnnotations,
                                       DeviceListStrategy::kCdiCri}));
  EXPECT_EQ(f.config->container_driver_root, "/drv");

  setenv("CDI_SPEC_DIR", "/env/cdi", 1);
  setenv("PROC_ROOT", "/env/proc", 1);
  f = Parse({});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->cdi_spec_dir, "/env/cdi");
  EXPECT_EQ(f.config->proc_root, "/env/proc");
}

// NVIDIA reads DRIVER_ROOT_CTR_PATH, then CONTAINER_DRIVER_ROOT.
TEST_F(FlagsTest, ContainerDriverRootVariables) {
  setenv("CONTAINER_DRIVER_ROOT", "/second", 1);
  ParsedFlags f = Parse({});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->container_driver_root, "/second");
  EXPECT_TRUE(f.explicit_settings.contains("--driver-root-ctr-path"));
  setenv("DRIVER_ROOT_CTR_PATH", "/first", 1);
  EXPECT_EQ(Parse({}).config->container_driver_root, "/first");
  EXPECT_EQ(
      Parse({"--driver-root-ctr-path=/flag"}).config->container_driver_root,
      "/flag");
}

// An empty variable counts as not set.
TEST_F(FlagsTest, EmptyVariableIsNotSet) {
  setenv("MIG_STRATEGY", "", 1);
  setenv("CONTAINER_DRIVER_ROOT", "", 1);
  ParsedFlags f = Parse({});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->mig_strategy, MigStrategy::kNone);
  EXPECT_TRUE(f.explicit_settings.empty());
}

TEST_F(FlagsTest, BadNewValuesAreUsageErrors) {
  for (std::vector<const char*> args :
       {std::vector<const char*>{"--mig-strategy=Mixed"},
        {"--device-list-strategy=envvar,nvlink"},
        {"--device-list-strategy=envvar,envvar"},
        {"--shared-devices-allocation-policy=spread"},
        {"--cdi-annotation-prefix=cdi.k8s.io"},
        {"--mps-root=relative"},
        {"--cdi-spec-dir=relative"},
        {"--proc-root=relative"},
        {"--container-driver-root=relative"},
        {"--disable-healthchecks=48,sometimes"},
        {"--health-quiet-period=soon"},
        {"--health-probe-interval=0s"},
        {"--nvml-timeout=-1s"},
        {"--nvml-timeout=forever"}}) {
    ParsedFlags f = Parse(args);
    EXPECT_FALSE(f.config.has_value()) << args[0];
    EXPECT_EQ(f.exit_code, 2) << args[0];
  }
  setenv("MIG_STRATEGY", "bogus", 1);
  EXPECT_EQ(Parse({}).exit_code, 2);
}

// For each setting the file can give: default < file < env < flag.
TEST_F(FlagsTest, FlagBeatsEnvBeatsFileBeatsDefault) {
  struct Case {
    const char* setting;  // its name
    const char* file;     // under flags:
    const char* env_name;
    const char* env_value;
    const char* flag;
    std::function<std::string(const Config&)> get;
    const char* want_default;
    const char* want_file;
    const char* want_env;
    const char* want_flag;
  };
  auto dls = [](const Config& c) {
    std::string out;
    for (DeviceListStrategy s : c.device_list_strategies) {
      out += std::string(NameOf(s)) + ";";
    }
    return out;
  };
  const Case cases[] = {
      {"--mig-strategy", "migStrategy: single", "MIG_STRATEGY", "mixed",
       "--mig-strategy=none",
       [](const Config& c) { return std::string(NameOf(c.mig_strategy)); },
       "none", "single", "mixed", "none"},
      {"--fail-on-init-error", "failOnInitError: false", "FAIL_ON_INIT_ERROR",
       "true", "--fail-on-init-error=false",
       [](const Config& c) { return std::to_string(c.fail_on_init_error); },
       "1", "0", "1", "0"},
      {"--driver-root", "nvidiaDriverRoot: /file", "NVIDIA_DRIVER_ROOT", "/env",
       "--nvidia-driver-root=/flag",
       [](const Config& c) { return c.driver_root; }, "/", "/file", "/env",
       "/flag"},
      {"--dev-root", "nvidiaDevRoot: /file", "NVIDIA_DEV_ROOT", "/env",
       "--dev-root=/flag", [](const Config& c) { return c.DevRoot(); }, "/",
       "/file", "/env", "/flag"},
      {"--mps-root", "mpsRoot: /file", "MPS_ROOT", "/env", "--mps-root=/flag",
       [](const Config& c) { return c.mps_root; }, "", "/file", "/env",
       "/flag"},
      {"--pass-device-specs", "plugin: {passDeviceSpecs: true}",
       "PASS_DEVICE_SPECS", "false", "--pass-device-specs",
       [](const Config& c) { return std::to_string(c.pass_device_specs); }, "0",
       "1", "0", "1"},
      {"--device-list-strategy",
       "plugin: {deviceListStrategy: [volume-mounts, cdi-cri]}",
       "DEVICE_LIST_STRATEGY", "cdi-annotations,envvar",
       "--device-list-strategy=cdi-cri", dls, "envvar;",
       "volume-mounts;cdi-cri;", "cdi-annotations;envvar;", "cdi-cri;"},
      {"--device-id-strategy", "plugin: {deviceIDStrategy: index}",
       "DEVICE_ID_STRATEGY", "uuid", "--device-id-strategy=index",
       [](const Config& c) {
         return std::string(NameOf(c.device_id_strategy));
       },
       "uuid", "index", "uuid", "index"},
      {"--cdi-annotation-prefix",
       "plugin: {cdiAnnotationPrefix: file.example.com/}",
       "CDI_ANNOTATION_PREFIX", "env.example.com/",
       "--cdi-annotation-prefix=flag.example.com/",
       [](const Config& c) { return c.cdi_annotation_prefix; }, "cdi.k8s.io/",
       "file.example.com/", "env.example.com/", "flag.example.com/"},
      {"--driver-root-ctr-path", "plugin: {containerDriverRoot: /file}",
       "DRIVER_ROOT_CTR_PATH", "/env", "--container-driver-root=/flag",
       [](const Config& c) { return c.container_driver_root; }, "/driver-root",
       "/file", "/env", "/flag"},
      {"--shared-devices-allocation-policy",
       "plugin: {sharedDevicesAllocationPolicy: packed}",
       "SHARED_DEVICES_ALLOCATION_POLICY", "distributed",
       "--shared-devices-allocation-policy=packed",
       [](const Config& c) {
         return std::string(NameOf(c.shared_allocation_policy));
       },
       "distributed", "packed", "distributed", "packed"},
      {"--disable-healthchecks", "health: {disableHealthchecks: 79}",
       "DP_DISABLE_HEALTHCHECKS", "xids", "--disable-healthchecks=all",
       [](const Config& c) { return c.disable_healthchecks; }, "", "79", "xids",
       "all"},
      {"--enable-healthchecks", "health: {enableHealthchecks: \"13,31\"}",
       "DP_ENABLE_HEALTHCHECKS", "43", "--enable-healthchecks=45",
       [](const Config& c) { return c.enable_healthchecks; }, "", "13,31", "43",
       "45"},
      {"--oneshot", "gfd: {oneshot: true}", "GFD_ONESHOT", "false", "--oneshot",
       [](const Config& c) { return std::to_string(c.gfd.oneshot); }, "0", "1",
       "0", "1"},
      {"--no-timestamp", "gfd: {noTimestamp: true}", "GFD_NO_TIMESTAMP",
       "false", "--no-timestamp",
       [](const Config& c) { return std::to_string(c.gfd.no_timestamp); }, "0",
       "1", "0", "1"},
      {"--sleep-interval", "gfd: {sleepInterval: 90s}", "GFD_SLEEP_INTERVAL",
       "2m", "--sleep-interval=5s",
       [](const Config& c) {
         return absl::FormatDuration(c.gfd.sleep_interval);
       },
       "1m", "1m30s", "2m", "5s"},
      {"--output-file", "gfd: {outputFile: /file}", "GFD_OUTPUT_FILE", "/env",
       "--output=/flag", [](const Config& c) { return c.gfd.output_file; },
       "/etc/kubernetes/node-feature-discovery/features.d/gfd", "/file", "/env",
       "/flag"},
      {"--machine-type-file", "gfd: {machineTypeFile: /file}",
       "GFD_MACHINE_TYPE_FILE", "/env", "--machine-type-file=/flag",
       [](const Config& c) { return c.gfd.machine_type_file; },
       "/sys/class/dmi/id/product_name", "/file", "/env", "/flag"},
      {"--use-node-feature-api", "useNodeFeatureAPI: true",
       "GFD_USE_NODE_FEATURE_API", "false", "--use-node-feature-api",
       [](const Config& c) {
         return std::to_string(c.gfd.use_node_feature_api);
       },
       "0", "1", "0", "1"},
      {"--device-api", "deviceAPI: dra", "DEVICE_API", "dra",
       "--device-api=device-plugin",
       [](const Config& c) { return std::string(NameOf(c.device_api)); },
       "device-plugin", "dra", "dra", "device-plugin"},
      {"--nvidia-cdi-hook-path", "plugin: {nvidiaCTKPath: /file}",
       "NVIDIA_CDI_HOOK_PATH", "/env", "--nvidia-ctk-path=/flag",
       [](const Config& c) { return c.nvidia_cdi_hook_path; }, "", "/file",
       "/env", "/flag"},
  };
  // Every setting the file can give is covered.
  ASSERT_EQ(static_cast<std::ptrdiff_t>(std::size(cases)),
            std::count_if(Settings().begin(), Settings().end(),
                          [](const Setting& s) { return !s.file.empty(); }));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flag);
    SetUp();
    // What --device-api=dra needs besides (a node, an API server).
    setenv("NODE_NAME", "n", 1);
    setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    ParsedFlags f = Parse({});
    ASSERT_TRUE(f.config.has_value());
    EXPECT_EQ(c.get(*f.config), c.want_default);

    const std::string snippet = c.file;
    const std::string file = WriteConfig((snippet.rfind("health:", 0) == 0
                                              ? "version: v1\n"
                                              : "version: v1\nflags:\n  ") +
                                         snippet + "\n");
    setenv("CONFIG_FILE", file.c_str(), 1);
    f = Parse({});
    ASSERT_TRUE(f.config.has_value());
    EXPECT_EQ(c.get(*f.config), c.want_file);
    EXPECT_FALSE(f.explicit_settings.contains(c.setting));
    // The flags' own config stays without the file, for reloads.
    EXPECT_EQ(c.get(f.flag_config), c.want_default);

    setenv(c.env_name, c.env_value, 1);
    f = Parse({});
    ASSERT_TRUE(f.config.has_value());
    EXPECT_EQ(c.get(*f.config), c.want_env);
    EXPECT_TRUE(f.explicit_settings.contains(c.setting));

    f = Parse({c.flag});
    ASSERT_TRUE(f.config.has_value());
    EXPECT_EQ(c.get(*f.config), c.want_flag);
    EXPECT_EQ(f.explicit_settings, ExplicitSettings{c.setting});
  }
}

// The file's own settings come through ParseFlags, --config-file works as
// CONFIG_FILE does, and a reload with the same flags sees a changed file.
TEST_F(FlagsTest, ConfigFileAndReload) {
  const std::string path = WriteConfig(R"(version: v1
sharing:
  timeSlicing:
    resources:
    - name: gpu
      replicas: 4
)");
  ParsedFlags f = Parse({"--config-file", path.c_str()});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->config_file, path);
  EXPECT_EQ(f.config->sharing.strategy, SharingStrategy::kTimeSlicing);
  EXPECT_EQ(f.config->sharing.resources.at(0).replicas, 4);
  EXPECT_EQ(f.flag_config.sharing, Sharing{});

  WriteConfig("version: v1\nflags:\n  migStrategy: single\n");
  absl::StatusOr<Config> reloaded =
      LoadConfig(f.flag_config, f.explicit_settings);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_EQ(reloaded->sharing, Sharing{});
  EXPECT_EQ(reloaded->mig_strategy, MigStrategy::kSingle);
}

// A bad or missing config file refuses start with exit code 2; the flags
// are still returned.
TEST_F(FlagsTest, BadConfigFileRefusesStart) {
  const std::string path = WriteConfig(R"(version: v1
sharing:
  timeSlicing:
    resources:
    - name: gpu
      replicas: 1
)");
  ::testing::internal::CaptureStderr();
  ParsedFlags f = Parse({"--config-file", path.c_str()});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(f.config.has_value());
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_EQ(f.flag_config.config_file, path);
  EXPECT_EQ(err, "gpu-device-plugin: " + path +
                     ":6: sharing.timeSlicing.resources[0].replicas: must be "
                     "at least 2, got 1\n");

  f = Parse({"--config-file=/no/such/config.yaml"});
  EXPECT_FALSE(f.config.has_value());
  EXPECT_EQ(f.exit_code, 2);
}

TEST_F(FlagsTest, DiscoverSubcommand) {
  EXPECT_EQ(Parse({"discover"}).command, Command::kDiscover);
}

// GFD's flags work after the subcommand too, as in `labels --oneshot`.
TEST_F(FlagsTest, LabelsSubcommandAndFlags) {
  ParsedFlags f = Parse({"labels", "--oneshot", "--output-file=/tmp/gfd",
                         "--mig-strategy=mixed"});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.command, Command::kLabels);
  EXPECT_TRUE(f.config->gfd.oneshot);
  EXPECT_EQ(f.config->gfd.output_file, "/tmp/gfd");
  EXPECT_EQ(f.config->mig_strategy, MigStrategy::kMixed);

  f = Parse({"--labels", "--metrics-address=:9445"});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.command, Command::kServe);
  EXPECT_TRUE(f.config->labels);
  EXPECT_EQ(f.config->metrics_address, ":9445");
  EXPECT_FALSE(Parse({}).config->labels);
  EXPECT_EQ(Parse({}).config->metrics_address, "");

  f = Parse({"labels", "--sleep-interval=infinite"});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->gfd.sleep_interval, absl::InfiniteDuration());

  setenv("METRICS_ADDRESS", "127.0.0.1:8080", 1);
  setenv("GDP_LABELS", "true", 1);
  f = Parse({});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->metrics_address, "127.0.0.1:8080");
  EXPECT_TRUE(f.config->labels);
}

TEST_F(FlagsTest, BadLabelAndMetricsValues) {
  for (const char* bad : {"--sleep-interval=0s", "--sleep-interval=soon",
                          "--metrics-address=9445", "--metrics-address=:0",
                          "--metrics-address=:http", "--output-file=gfd"}) {
    SCOPED_TRACE(bad);
    ParsedFlags f = Parse({bad});
    EXPECT_FALSE(f.config.has_value());
    EXPECT_EQ(f.exit_code, 2);
  }
}

TEST_F(FlagsTest, DeviceApiAndDraFlags) {
  ParsedFlags f = Parse({});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->device_api, DeviceApi::kDevicePlugin);
  EXPECT_EQ(f.config->dra.driver_name, "gpu.nvidia.com");
  EXPECT_EQ(f.config->dra.registration_dir,
            "/var/lib/kubelet/plugins_registry");
  EXPECT_EQ(f.config->dra.plugins_dir, "/var/lib/kubelet/plugins");

  f = Parse({"--device-api=dra", "--node-name=n1", "--kubeconfig=/k/config",
             "--dra-driver-name=gpu.example.com",
             "--kubelet-registration-dir=/r", "--kubelet-plugins-dir=/p"});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->device_api, DeviceApi::kDra);
  EXPECT_EQ(f.config->dra.node_name, "n1");
  EXPECT_EQ(f.config->dra.kubeconfig, "/k/config");
  EXPECT_EQ(f.config->dra.driver_name, "gpu.example.com");
  EXPECT_EQ(f.config->dra.registration_dir, "/r");
  EXPECT_EQ(f.config->dra.plugins_dir, "/p");

  // In a pod: NODE_NAME from the downward API, the API server from the
  // service variables, NVIDIA's DRA driver's directory variables.
  setenv("DEVICE_API", "dra", 1);
  setenv("NODE_NAME", "n2", 1);
  setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  setenv("KUBELET_REGISTRAR_DIRECTORY_PATH", "/nv/registry", 1);
  setenv("KUBELET_PLUGINS_DIRECTORY_PATH", "/nv/plugins", 1);
  f = Parse({});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->dra.node_name, "n2");
  EXPECT_EQ(f.config->dra.api_host, "10.0.0.1");
  EXPECT_EQ(f.config->dra.api_port, "443");
  EXPECT_EQ(f.config->dra.registration_dir, "/nv/registry");
  EXPECT_EQ(f.config->dra.plugins_dir, "/nv/plugins");
  // Our variable beats NVIDIA's.
  setenv("KUBELET_PLUGINS_DIR", "/ours", 1);
  EXPECT_EQ(Parse({}).config->dra.plugins_dir, "/ours");

  // The config file's flags.deviceAPI and dra.devices.
  unsetenv("DEVICE_API");
  const std::string path = WriteConfig(
      "version: v1\nflags:\n  deviceAPI: both\ndra:\n  devices: [0, "
      "\"GPU-8e2f4a7c-0000-0000-0000-000000000000\", \"1:2\"]\n");
  f = Parse({"--config-file", path.c_str()});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->device_api, DeviceApi::kBoth);
  ASSERT_TRUE(f.config->dra.devices.has_value());
  EXPECT_EQ(f.config->dra.devices->list.size(), 3u);
  // A flag beats the file.
  f = Parse({"--config-file", path.c_str(), "--device-api=dra"});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.config->device_api, DeviceApi::kDra);
}

TEST_F(FlagsTest, BadDraSettingsAreRefusedNamingThem) {
  setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  const std::string bad_ref =
      WriteConfig("flags:\n  deviceAPI: dra\ndra:\n  devices: [\"gpu0\"]\n");
  const std::string both = bad_ref + ".both";
  std::ofstream(both) << "flags:\n  deviceAPI: both\n";
  struct Case {
    std::vector<const char*> args;
    const char* message;
  } cases[] = {
      {{"--device-api=plugin"}, "--device-api"},
      {{"--device-api=dra"}, "--node-name: is required"},
      {{"--device-api=dra", "--node-name=Node_1"}, "--node-name: 'Node_1'"},
      {{"--device-api=dra", "--node-name=n", "--dra-driver-name=GPU"},
       "--dra-driver-name: 'GPU'"},
      {{"--device-api=dra", "--node-name=n", "--kubelet-plugins-dir=rel"},
       "--kubelet-plugins-dir: must be an absolute path"},
      {{"--device-api=dra", "--node-name=n", "--kubeconfig=k"},
       "--kubeconfig: must be an absolute path"},
      {{"--config-file", both.c_str(), "--node-name=n"},
       "dra.devices: must name the GPUs DRA serves when the device API is "
       "'both' (set by "},
      {{"--config-file", bad_ref.c_str(), "--node-name=n"},
       ":4: dra.devices[0]: 'gpu0' is not a GPU index"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args[0]);
    ::testing::internal::CaptureStderr();
    ParsedFlags f = Parse(c.args);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(f.config.has_value());
    EXPECT_EQ(f.exit_code, 2);
    EXPECT_THAT(err, ::testing::HasSubstr(c.message));
  }
  // Outside a pod without a kubeconfig there is no API server to find.
  unsetenv("KUBERNETES_SERVICE_HOST");
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(Parse({"--device-api=dra", "--node-name=n"}).config.has_value());
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              ::testing::HasSubstr("--kubeconfig: is required outside a pod"));
}

TEST_F(FlagsTest, StateDirAndHealthStateSubcommands) {
  ParsedFlags f = Parse({});
  EXPECT_EQ(f.state_dir, "/var/lib/gpu-device-plugin");
  EXPECT_EQ(f.command, Command::kServe);
  setenv("STATE_DIR", "/env/state", 1);
  EXPECT_EQ(Parse({}).state_dir, "/env/state");
  EXPECT_EQ(Parse({"--state-dir=/flag/state"}).state_dir, "/flag/state");
  EXPECT_EQ(Parse({"--state-dir", ""}).state_dir, "");  // no file kept
  unsetenv("STATE_DIR");

  f = Parse({"health-state", "show", "--state-dir=/s"});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.command, Command::kHealthStateShow);
  EXPECT_EQ(f.state_dir, "/s");

  f = Parse({"--state-dir=/s", "health-state", "clear", "--gpu", "GPU-a",
             "--gpu=GPU-b", "--signal-pid", "1", "--proc-root=/p"});
  ASSERT_TRUE(f.config.has_value());
  EXPECT_EQ(f.command, Command::kHealthStateClear);
  EXPECT_EQ(f.clear_gpus, (std::vector<std::string>{"GPU-a", "GPU-b"}));
  EXPECT_EQ(f.signal_pid, 1);
  EXPECT_EQ(f.config->proc_root, "/p");
  f = Parse({"health-state", "clear", "--gpu", "GPU-a", "GPU-b"});
  EXPECT_EQ(f.clear_gpus, (std::vector<std::string>{"GPU-a", "GPU-b"}));
  f = Parse({"health-state", "clear"});
  EXPECT_EQ(f.command, Command::kHealthStateClear);
  EXPECT_TRUE(f.clear_gpus.empty());
  EXPECT_EQ(f.signal_pid, 0);

  for (std::vector<const char*> bad :
       {std::vector<const char*>{"health-state"},
        {"health-state", "forget"},
        {"health-state", "clear", "--signal-pid", "0"},
        {"health-state", "show", "--gpu", "GPU-a"}}) {
    SCOPED_TRACE(bad.back());
    ::testing::internal::CaptureStderr();
    f = Parse(bad);
    ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(f.config.has_value());
    EXPECT_EQ(f.exit_code, 2);
  }
}

}  // namespace
}  // namespace gdp
