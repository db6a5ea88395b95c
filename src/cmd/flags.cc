#include "cmd/flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "config/names.h"

namespace gdp {

namespace {

// klog spells verbosity -v=N or --v=N (Go flag syntax), which CLI11 cannot
// declare; rewrite those to --verbosity.
std::vector<std::string> NormalizeKlogVerbosity(int argc,
                                                const char* const* argv) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("-v=", 0) == 0 || a.rfind("--v=", 0) == 0) {
      out.push_back("--verbosity=" + a.substr(a.find('=') + 1));
    } else if (a == "--v") {
      out.push_back("--verbosity");
    } else {
      out.push_back(a);
    }
  }
  std::reverse(out.begin(), out.end());  // CLI11 parses a reversed vector
  return out;
}

// The strategy named `name`, which CLI11 has checked.
template <typename E>
E Named(const std::string& name) {
  return *ParseName<E>(name);
}

}  // namespace

ParsedFlags ParseFlags(int argc, const char* const* argv) {
  Config c;
  CLI::App app{
      "Kubernetes device plugin for NVIDIA GPUs: advertises the node's GPUs "
      "to the kubelet as nvidia.com/gpu and answers its allocations.",
      "gpu-device-plugin"};
  app.set_version_flag("--version", GDP_VERSION);
  app.option_defaults()->always_capture_default();
  // Options the config file can also set, to learn which were given.
  std::vector<std::pair<CLI::Option*, Setting>> tracked;
  auto track = [&tracked](CLI::Option* opt, Setting s) {
    tracked.emplace_back(opt, s);
    return opt;
  };

  app.add_option("--config-file", c.config_file,
                 "NVIDIA's config file (version v1, YAML or JSON); flags and "
                 "their variables beat it, it beats the defaults")
      ->envname("CONFIG_FILE");
  app.add_option("--kubelet-socket", c.kubelet_socket,
                 "the kubelet's registration socket; our socket goes beside it")
      ->envname("KUBELET_SOCKET");
  track(app.add_option(
               "--driver-root,--nvidia-driver-root", c.driver_root,
               "root where the NVIDIA driver (libnvidia-ml.so.1) is installed")
            ->envname("NVIDIA_DRIVER_ROOT"),
        Setting::kDriverRoot);
  track(app.add_option("--dev-root,--nvidia-dev-root", c.dev_root,
                       "root of the /dev/nvidia* nodes on the host [default: "
                       "the driver root]")
            ->envname("NVIDIA_DEV_ROOT"),
        Setting::kDevRoot);
  app.add_option("--sysfs-root", c.sysfs_root,
                 "where sysfs is mounted (NUMA nodes of GPUs are read there)")
      ->envname("SYSFS_ROOT");
  app.add_option("--proc-root", c.proc_root,
                 "where /proc is mounted (MIG capability minors are read "
                 "from driver/nvidia-caps/mig-minors there)")
      ->envname("PROC_ROOT");
  track(app.add_flag("--fail-on-init-error{true}", c.fail_on_init_error,
                     "exit if NVML cannot be loaded or initialised; with "
                     "=false, stay up and retry every 30 s")
            ->envname("FAIL_ON_INIT_ERROR"),
        Setting::kFailOnInitError);
  track(app.add_flag("--pass-device-specs{true}", c.pass_device_specs,
                     "pass /dev/nvidia* device specs in Allocate answers "
                     "(needed with the CPU manager's static policy)")
            ->envname("PASS_DEVICE_SPECS"),
        Setting::kPassDeviceSpecs);
  std::string id_strategy(NameOf(c.device_id_strategy));
  track(app.add_option("--device-id-strategy", id_strategy,
                       "how devices are named to the kubelet: uuid or index")
            ->envname("DEVICE_ID_STRATEGY")
            ->check(CLI::IsMember(AllNames<DeviceIdStrategy>())),
        Setting::kDeviceIdStrategy);
  std::string mig_strategy(NameOf(c.mig_strategy));
  track(app.add_option("--mig-strategy", mig_strategy,
                       "how MIG devices are advertised: none, single (as "
                       "nvidia.com/gpu) or mixed (nvidia.com/mig-<profile>)")
            ->envname("MIG_STRATEGY")
            ->check(CLI::IsMember(AllNames<MigStrategy>())),
        Setting::kMigStrategy);
  std::vector<std::string> list_strategies;
  for (DeviceListStrategy s : c.device_list_strategies) {
    list_strategies.emplace_back(NameOf(s));
  }
  track(app.add_option("--device-list-strategy", list_strategies,
                       "how Allocate names the devices to the runtime: "
                       "envvar, volume-mounts, cdi-annotations, cdi-cri; "
                       "several comma-separated or repeated")
            ->envname("DEVICE_LIST_STRATEGY")
            ->delimiter(',')
            ->allow_extra_args(false)
            ->check(CLI::IsMember(AllNames<DeviceListStrategy>())),
        Setting::kDeviceListStrategy);
  track(app.add_option("--cdi-annotation-prefix", c.cdi_annotation_prefix,
                       "prefix of the CDI annotation keys (cdi-annotations)")
            ->envname("CDI_ANNOTATION_PREFIX"),
        Setting::kCdiAnnotationPrefix);
  CLI::Option* container_root = track(
      app.add_option("--driver-root-ctr-path,--container-driver-root",
                     c.container_driver_root,
                     "where the driver root is mounted in this container; "
                     "driver files for the CDI spec are looked up there")
          ->envname("DRIVER_ROOT_CTR_PATH"),
      Setting::kContainerDriverRoot);
  track(app.add_option("--mps-root", c.mps_root,
                       "host directory of the MPS control daemon's pipes "
                       "and shared memory (needed for sharing.mps)")
            ->envname("MPS_ROOT"),
        Setting::kMpsRoot);
  std::string policy(NameOf(c.shared_allocation_policy));
  track(app.add_option("--shared-devices-allocation-policy", policy,
                       "how replicas are preferred: distributed (one per "
                       "GPU, spread) or packed (fill a GPU first)")
            ->envname("SHARED_DEVICES_ALLOCATION_POLICY")
            ->check(CLI::IsMember(AllNames<SharedAllocationPolicy>())),
        Setting::kSharedAllocationPolicy);
  track(app.add_option("--disable-healthchecks", c.disable_healthchecks,
                       "health checks to turn off: all, xids, or XIDs to "
                       "ignore besides the default ones (comma-separated)")
            ->envname("DP_DISABLE_HEALTHCHECKS"),
        Setting::kDisableHealthchecks);
  track(app.add_option("--enable-healthchecks", c.enable_healthchecks,
                       "XIDs to check even if ignored by default or by "
                       "--disable-healthchecks (comma-separated)")
            ->envname("DP_ENABLE_HEALTHCHECKS"),
        Setting::kEnableHealthchecks);
  std::string quiet = absl::FormatDuration(c.health_quiet_period);
  app.add_option("--health-quiet-period", quiet,
                 "how long a GPU with a recoverable XID stays unhealthy "
                 "before it is probed (e.g. 60s, 2m)");
  std::string probe = absl::FormatDuration(c.health_probe_interval);
  app.add_option("--health-probe-interval", probe,
                 "how often GPUs are probed for falling off the bus or "
                 "coming back (e.g. 5s)");
  app.add_flag("--nvlink-down-unhealthy", c.nvlink_down_unhealthy,
               "also make a GPU unhealthy (until it is reset) when one of "
               "its NVLinks goes from active to inactive; either way it is "
               "counted and the topology is read again")
      ->envname("NVLINK_DOWN_UNHEALTHY");
  std::string nvml_timeout = absl::FormatDuration(c.nvml_timeout);
  app.add_option("--nvml-timeout", nvml_timeout,
                 "how long an NVML call may take before its GPU (or, for a "
                 "call about no GPU, every GPU, and then /healthz fails) "
                 "counts as unhealthy; 0 waits forever (e.g. 10s)")
      ->envname("NVML_TIMEOUT");
  std::string rediscover = absl::FormatDuration(c.rediscover_interval);
  app.add_option("--rediscover-interval", rediscover,
                 "how often the GPUs are discovered again to follow MIG "
                 "changes and GPUs coming or going without a reload; 0 "
                 "turns it off (e.g. 60s)")
      ->envname("REDISCOVER_INTERVAL");
  app.add_option("--cdi-spec-dir", c.cdi_spec_dir,
                 "where the CDI spec is written (cdi-* strategies)")
      ->envname("CDI_SPEC_DIR");
  app.add_option("-v,--verbosity", c.verbosity,
                 "log verbosity (klog -v level: 1 logs every RPC, 2 every "
                 "ListAndWatch send); -v=N and --v=N work too")
      ->envname("LOG_VERBOSITY");
  // GPU feature discovery (node labels), with GFD's flag and variable names.
  app.add_flag("--labels", c.labels,
               "also write the node labels (GPU feature discovery) while "
               "serving; the labels subcommand writes only them")
      ->envname("GDP_LABELS");
  track(app.add_flag("--oneshot", c.gfd.oneshot, "label once and exit")
            ->envname("GFD_ONESHOT"),
        Setting::kGfdOneshot);
  track(app.add_flag("--no-timestamp", c.gfd.no_timestamp,
                     "leave out the nvidia.com/gfd.timestamp label")
            ->envname("GFD_NO_TIMESTAMP"),
        Setting::kGfdNoTimestamp);
  std::string sleep_interval = absl::FormatDuration(c.gfd.sleep_interval);
  track(app.add_option("--sleep-interval", sleep_interval,
                       "time between labellings (e.g. 60s; infinite: label "
                       "once, then wait)")
            ->envname("GFD_SLEEP_INTERVAL"),
        Setting::kGfdSleepInterval);
  track(app.add_option("--output-file,--output,-o", c.gfd.output_file,
                       "the Node Feature Discovery local feature file the "
                       "labels are written to")
            ->envname("GFD_OUTPUT_FILE"),
        Setting::kGfdOutputFile);
  track(app.add_option("--machine-type-file", c.gfd.machine_type_file,
                       "the DMI product name file (nvidia.com/gpu.machine)")
            ->envname("GFD_MACHINE_TYPE_FILE"),
        Setting::kGfdMachineTypeFile);
  app.add_option("--metrics-address", c.metrics_address,
                 "serve /metrics (Prometheus), /healthz and /readyz over "
                 "HTTP on host:port or :port; empty: off")
      ->envname("METRICS_ADDRESS");
  // The DRA side, with NVIDIA's DRA driver's names where it has them.
  std::string device_api(NameOf(c.device_api));
  track(app.add_option("--device-api", device_api,
                       "which kubelet API serves the GPUs: device-plugin, "
                       "dra, or both (dra.devices in the config file go to "
                       "DRA, the others to the device plugin)")
            ->envname("DEVICE_API")
            ->check(CLI::IsMember(AllNames<DeviceApi>())),
        Setting::kDeviceApi);
  app.add_option("--dra-driver-name", c.dra.driver_name,
                 "the DRA driver name (ResourceSlices, DeviceClasses)")
      ->envname("DRA_DRIVER_NAME");
  CLI::Option* registration_dir =
      app.add_option(
             "--kubelet-registration-dir,"
             "--kubelet-registrar-directory-path",
             c.dra.registration_dir,
             "the kubelet's plugin registration directory; our "
             "registration socket is <dir>/<driver>-reg.sock")
          ->envname("KUBELET_REGISTRATION_DIR");
  CLI::Option* plugins_dir =
      app.add_option("--kubelet-plugins-dir,--kubelet-plugins-directory-path",
                     c.dra.plugins_dir,
                     "the kubelet's plugins directory; our DRA socket is "
                     "<dir>/<driver>/dra.sock")
          ->envname("KUBELET_PLUGINS_DIR");
  app.add_option("--node-name", c.dra.node_name,
                 "this node's name: the pool of our ResourceSlices (DRA)")
      ->envname("NODE_NAME");
  app.add_option("--kubeconfig", c.dra.kubeconfig,
                 "kubeconfig file for the API server (DRA); default: the "
                 "pod's service account (in-cluster)")
      ->envname("KUBECONFIG");
  int retry_s = static_cast<int>(absl::ToInt64Seconds(c.nvml_retry_interval));
  app.add_option("--nvml-retry-interval", retry_s,
                 "seconds between NVML retries with --fail-on-init-error=false")
      ->check(CLI::PositiveNumber);

  ParsedFlags out;
  app.add_subcommand("discover",
                     "print the GPUs NVML reports, as JSON, and exit")
      ->callback([&out] { out.command = Command::kDiscover; });
  app.add_subcommand("labels",
                     "write the node labels (GPU feature discovery) every "
                     "--sleep-interval, or once with --oneshot")
      ->fallthrough()
      ->callback([&out] { out.command = Command::kLabels; });
  app.add_option("--state-dir", out.state_dir,
                 "where the health state (GPUs that need a reset, recent "
                 "failures) is kept across restarts, as health-state.json; "
                 "empty: not kept")
      ->envname("STATE_DIR");
  CLI::App* health_state =
      app.add_subcommand("health-state",
                         "print or clear the health state file kept in "
                         "--state-dir")
          ->fallthrough()
          ->require_subcommand(1);
  health_state->add_subcommand("show", "print the health state file readably")
      ->fallthrough()
      ->callback([&out] { out.command = Command::kHealthStateShow; });
  CLI::App* clear =
      health_state
          ->add_subcommand("clear",
                           "drop the saved state of every GPU, or of each "
                           "--gpu; then send SIGHUP to the running plugin "
                           "(or restart it) to apply it")
          ->fallthrough()
          ->callback([&out] { out.command = Command::kHealthStateClear; });
  clear->add_option("--gpu", out.clear_gpus,
                    "the UUIDs of the GPUs whose saved state is dropped "
                    "(repeatable); none: every GPU");
  clear
      ->add_option("--signal-pid", out.signal_pid,
                   "send SIGHUP to this process once the file is written "
                   "(1: the plugin, run with kubectl exec in its pod)")
      ->check(CLI::PositiveNumber);

  try {
    std::vector<std::string> args = NormalizeKlogVerbosity(argc, argv);
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    out.exit_code = app.exit(e) == 0 ? 0 : 2;
    return out;
  }
  // NVIDIA reads CONTAINER_DRIVER_ROOT after DRIVER_ROOT_CTR_PATH; CLI11
  // takes one variable per option.
  if (container_root->count() == 0) {
    if (const char* v = std::getenv("CONTAINER_DRIVER_ROOT");
        v != nullptr && *v != '\0') {
      c.container_driver_root = v;
      out.explicit_settings.insert(Setting::kContainerDriverRoot);
    }
  }
  // NVIDIA's DRA driver's variables for the same directories.
  for (auto [opt, variable, dest] :
       {std::tuple<CLI::Option*, const char*, std::string*>{
            registration_dir, "KUBELET_REGISTRAR_DIRECTORY_PATH",
            &c.dra.registration_dir},
        {plugins_dir, "KUBELET_PLUGINS_DIRECTORY_PATH", &c.dra.plugins_dir}}) {
    if (opt->count() > 0 || std::getenv(opt->get_envname().c_str()) != nullptr)
      continue;
    if (const char* v = std::getenv(variable); v != nullptr && *v != '\0') {
      *dest = v;
    }
  }
  // Where the API server is from inside a pod (client-go's in-cluster
  // config reads the same variables).
  for (auto [variable, dest] : {std::pair<const char*, std::string*>{
                                    "KUBERNETES_SERVICE_HOST", &c.dra.api_host},
                                {"KUBERNETES_SERVICE_PORT", &c.dra.api_port}}) {
    if (const char* v = std::getenv(variable); v != nullptr) *dest = v;
  }
  for (const auto& [opt, setting] : tracked) {
    if (opt->count() > 0) out.explicit_settings.insert(setting);
  }
  c.nvml_retry_interval = absl::Seconds(retry_s);
  // GFD's word for "label once, then wait", as in the config file.
  if (sleep_interval == "infinite") sleep_interval = "inf";
  for (auto [flag, text, dest] :
       {std::tuple<const char*, const std::string&, absl::Duration*>{
            "--health-quiet-period", quiet, &c.health_quiet_period},
        {"--health-probe-interval", probe, &c.health_probe_interval},
        {"--sleep-interval", sleep_interval, &c.gfd.sleep_interval}}) {
    if (!absl::ParseDuration(text, dest) || *dest <= absl::ZeroDuration()) {
      std::cerr << "gpu-device-plugin: " << flag
                << ": must be a positive duration such as 30s or 2m, got '"
                << text << "'\n";
      out.exit_code = 2;
      return out;
    }
  }
  if (!absl::ParseDuration(nvml_timeout, &c.nvml_timeout) ||
      c.nvml_timeout < absl::ZeroDuration()) {
    std::cerr << "gpu-device-plugin: --nvml-timeout: must be a duration such "
                 "as 10s, or 0 for none, got '"
              << nvml_timeout << "'\n";
    out.exit_code = 2;
    return out;
  }
  if (!absl::ParseDuration(rediscover, &c.rediscover_interval) ||
      c.rediscover_interval < absl::ZeroDuration() ||
      c.rediscover_interval == absl::InfiniteDuration()) {
    std::cerr << "gpu-device-plugin: --rediscover-interval: must be a "
                 "duration such as 60s, or 0 for never, got '"
              << rediscover << "'\n";
    out.exit_code = 2;
    return out;
  }
  c.device_id_strategy = Named<DeviceIdStrategy>(id_strategy);
  c.mig_strategy = Named<MigStrategy>(mig_strategy);
  c.shared_allocation_policy = Named<SharedAllocationPolicy>(policy);
  c.device_api = Named<DeviceApi>(device_api);
  c.device_list_strategies.clear();
  for (const std::string& s : list_strategies) {
    c.device_list_strategies.push_back(Named<DeviceListStrategy>(s));
  }
  out.flag_config = c;
  absl::StatusOr<Config> config = LoadConfig(c, out.explicit_settings);
  if (!config.ok()) {
    std::cerr << "gpu-device-plugin: " << config.status().message() << "\n";
    out.exit_code = 2;
    return out;
  }
  out.config = *std::move(config);
  return out;
}

}  // namespace gdp
