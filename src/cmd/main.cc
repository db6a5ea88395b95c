// gpu-device-plugin: owns NVML and the signal handling, wires the parts
// together, and runs the plugin lifecycle until SIGTERM/SIGINT.
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "cmd/daemon.h"
#include "cmd/endpoints.h"
#include "cmd/flags.h"
#include "cmd/health_state_cmd.h"
#include "cmd/labels_runner.h"
#include "cmd/nvml_report.h"
#include "cmd/rediscovery.h"
#include "cmd/signals.h"
#include "config/load.h"
#include "nvml/nvml.h"
#include "nvml/runner.h"
#include "rpc/grpc_runtime.h"
#include "util/file_watcher.h"
#include "util/keep_until_exit.h"
#include "util/logging.h"
#include "util/thread_name.h"

namespace gdp {
namespace {

// Set by the signal thread; read by whoever waits.
struct StopState {
  absl::Notification requested;
  std::atomic<bool> exiting{false};  // main wakes the signal thread to end it
  std::atomic<bool> reload{false};   // SIGHUP seen, not yet handled
  absl::Mutex mu;
  FileWatcher* watcher ABSL_GUARDED_BY(mu) = nullptr;  // main's wait
  // Cancels the daemon's NVML work in progress (a reload's discovery that
  // hangs), so that a stop never waits for its deadline.
  std::function<void()> cancel_nvml ABSL_GUARDED_BY(mu);
};

// Waits for SIGTERM/SIGINT (stop) and SIGHUP (reload the config), and wakes
// main's wait; in between, runs gRPC's due timers every kGrpcTimerTick when
// gRPC is quiet (rpc/grpc_runtime.h). REQUIRES: those signals are blocked
// in every thread.
void SignalLoop(StopState* stop, sigset_t signals) {
  NameThisThread("gdp-signals");
  const timespec tick = absl::ToTimespec(kGrpcTimerTick);
  for (;;) {
    int sig = 0;
    if (GrpcIsQuiet()) {
      sig = sigtimedwait(&signals, nullptr, &tick);
      if (sig < 0) {
        if (errno == EAGAIN) RunDueGrpcTimers();
        continue;
      }
    } else if (sigwait(&signals, &sig) != 0) {
      continue;
    }
    absl::MutexLock lock(&stop->mu);
    if (sig == SIGHUP) {
      stop->reload = true;
      if (stop->watcher != nullptr) stop->watcher->Wake();
      continue;
    }
    if (!stop->exiting.load()) {
      LOG_INFO("Received signal {} ({}), shutting down", sig, strsignal(sig));
    }
    stop->requested.Notify();
    if (stop->cancel_nvml) stop->cancel_nvml();
    if (stop->watcher != nullptr) stop->watcher->Wake();
    return;
  }
}

std::string Gib(uint64_t bytes) {
  return absl::StrFormat("%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
}

// DiscoverGpus under NVML call deadlines: a call that hangs fails its
// discovery after the deadline; the discovery is then made again once, when
// calls about the hung GPU fail at once, so that GPU is left out (unusable)
// and the others are served.
absl::StatusOr<NodeGpus> DiscoverWithDeadline(const Nvml& nvml,
                                              const Config& cfg) {
  NvmlRunner runner(nvml);
  absl::StatusOr<absl::StatusOr<NodeGpus>> found;
  for (int tries = 0; tries < 2; ++tries) {
    found = runner.Call<absl::StatusOr<NodeGpus>>(
        [&nvml, root = cfg.sysfs_root, dynamic_mig = cfg.DynamicMigOn()] {
          DiscoverOptions read;
          read.mig_profiles = dynamic_mig;
          return DiscoverGpus(nvml, root, nullptr, read);
        });
    if (found.ok() || !IsNvmlHang(found.status())) break;
  }
  if (!found.ok()) return found.status();
  return *std::move(found);
}

// Loads NVML and discovers the GPUs, retrying every nvml_retry_interval unless
// --fail-on-init-error. Returns false to exit with *exit_code.
bool OpenAndDiscover(const Config& cfg, StopState* stop, Endpoints* endpoints,
                     std::unique_ptr<Nvml>* nvml, NodeGpus* node,
                     int* exit_code) {
  // An Nvml with a call still hung is kept for the next attempt (never
  // destroyed under the call, and its gate makes calls about the hung GPU
  // fail at once instead of hanging again).
  std::unique_ptr<Nvml> held;
  for (;;) {
    absl::StatusOr<std::unique_ptr<Nvml>> opened =
        held != nullptr ? std::move(held) : Nvml::Open(cfg.driver_root);
    absl::Status error = opened.status();
    if (opened.ok()) {
      (*opened)->set_call_deadline(cfg.nvml_timeout);
      absl::StatusOr<NodeGpus> found = DiscoverWithDeadline(**opened, cfg);
      if (found.ok() && !found->gpus.empty()) {
        *nvml = *std::move(opened);
        *node = *std::move(found);
        return true;
      }
      if (!(*opened)->Hangs().empty()) held = *std::move(opened);
      error = !found.ok() ? found.status()
              : found->unusable.empty()
                  ? absl::NotFoundError("NVML reports no GPUs")
                  : found->unusable.front().error;
    }
    endpoints->NvmlNotLoaded(error);
    if (cfg.fail_on_init_error) {
      LOG_FATAL(
          "Failed to initialize NVML: {}. If this is a GPU node, check the "
          "driver and --driver-root; if it is not, run the plugin only on GPU "
          "nodes or set --fail-on-init-error=false.",
          error.message());
      *exit_code = 1;
      KeepUntilExit(std::shared_ptr<Nvml>(std::move(held)));  // see below
      return false;
    }
    LOG_ERROR(
        "Failed to initialize NVML: {}. Registering nothing; retrying in "
        "{}.",
        error.message(), absl::FormatDuration(cfg.nvml_retry_interval));
    if (stop->requested.WaitForNotificationWithTimeout(
            cfg.nvml_retry_interval)) {
      *exit_code = 0;
      // A call still hung uses it: never destroyed, the process ends
      // without destructors (main sees AnythingKeptUntilExit).
      KeepUntilExit(std::shared_ptr<Nvml>(std::move(held)));
      return false;
    }
  }
}

void LogGpus(const Nvml& nvml, const NodeGpus& node) {
  LOG_INFO("NVML loaded from {}: driver {}, CUDA {}.{}, {} GPU(s)",
           nvml.library_path(), node.driver_version,
           node.cuda_driver_version / 1000,
           node.cuda_driver_version % 1000 / 10, node.gpus.size());
  for (const LeftOut& u : node.unusable) {
    LOG_ERROR("Leaving out a GPU NVML cannot describe: {}", u.error.message());
  }
  for (const GpuInfo& g : node.gpus) {
    LOG_INFO(
        "GPU {}: {} {} /dev/nvidia{} {} PCI {} NUMA {} compute {}.{}{}",
        g.index, g.name, g.uuid, g.minor, Gib(g.memory_bytes), g.pci_bus_id,
        g.numa_node < 0 ? std::string("unknown") : std::to_string(g.numa_node),
        g.cc_major, g.cc_minor, g.mig_enabled ? " MIG enabled" : "");
    for (const MigInfo& m : g.migs) {
      LOG_INFO("  MIG device {}:{}: {} {} GPU instance {} compute instance {}",
               g.index, m.index, m.profile, m.uuid, m.gi, m.ci);
    }
  }
}

int Discover(const Config& cfg) {
  auto nvml = Nvml::Open(cfg.driver_root);
  if (!nvml.ok()) {
    std::cerr << "gpu-device-plugin: " << nvml.status().message() << "\n";
    return 1;
  }
  auto node = DiscoverGpus(**nvml, cfg.sysfs_root);
  if (!node.ok()) {
    std::cerr << "gpu-device-plugin: " << node.status().message() << "\n";
    return 1;
  }
  for (const LeftOut& u : node->unusable) {
    std::cerr << "gpu-device-plugin: left out: " << u.error.message() << "\n";
  }
  nlohmann::json out = {{"nvml_library", (*nvml)->library_path()},
                        {"driver_version", node->driver_version},
                        {"cuda_driver_version", node->cuda_driver_version},
                        {"gpus", nlohmann::json::array()}};
  for (const GpuInfo& g : node->gpus) {
    nlohmann::json migs = nlohmann::json::array();
    for (const MigInfo& m : g.migs) {
      migs.push_back({{"index", m.index},
                      {"uuid", m.uuid},
                      {"profile", m.profile},
                      {"gpu_instance", m.gi},
                      {"compute_instance", m.ci},
                      {"memory_bytes", m.memory_bytes},
                      {"gpu_instance_slices", m.gi_slices},
                      {"compute_instance_slices", m.ci_slices},
                      {"multiprocessors", m.multiprocessors},
                      {"engines",
                       {{"copy", m.copy_engines},
                        {"decoder", m.decoders},
                        {"encoder", m.encoders},
                        {"jpeg", m.jpegs},
                        {"ofa", m.ofas}}}});
    }
    out["gpus"].push_back({{"index", g.index},
                           {"uuid", g.uuid},
                           {"name", g.name},
                           {"minor", g.minor},
                           {"memory_bytes", g.memory_bytes},
                           {"pci_bus_id", g.pci_bus_id},
                           {"numa_node", g.numa_node},
                           {"compute_capability",
                            absl::StrFormat("%d.%d", g.cc_major, g.cc_minor)},
                           {"mig_capable", g.mig_capable},
                           {"mig_enabled", g.mig_enabled},
                           {"migs", std::move(migs)}});
  }
  std::cout << out.dump(2) << "\n";
  return 0;
}

// Serves until SIGTERM/SIGINT, reloading the config on SIGHUP and when the
// config file changes; `labels` (may be null) follows each applied reload.
// Drives `daemon` holding `daemon_mu` (the rediscovery drives it too);
// `rediscovery` (may be null) retries a refused layout after a reload.
void ServeUntilStopped(const ParsedFlags& flags, Daemon* daemon,
                       absl::Mutex* daemon_mu, StopState* stop,
                       LabelThread* labels, Rediscovery* rediscovery) {
  auto watcher = FileWatcher::Create(daemon->config().config_file);
  if (!watcher.ok()) {
    LOG_ERROR("Not watching the config file ({}); reload with SIGHUP",
              watcher.status().message());
    watcher = FileWatcher::Create("");
    if (!watcher.ok()) {
      LOG_FATAL("{}", watcher.status().message());
      return;
    }
  }
  {
    absl::MutexLock lock(&stop->mu);
    stop->watcher = watcher->get();
  }
  while (!stop->requested.HasBeenNotified()) {
    FileWatcher::Event event = (*watcher)->Wait(absl::InfiniteDuration());
    if (stop->requested.HasBeenNotified()) break;
    bool hup = stop->reload.exchange(false);
    if (!hup && event != FileWatcher::Event::kChanged) continue;
    absl::MutexLock lock(daemon_mu);
    if (hup) daemon->ReloadHealthState();  // `health-state clear` applied
    LOG_INFO("{}: reloading the config",
             hup ? std::string("SIGHUP")
                 : "Config file " + daemon->config().config_file + " changed");
    absl::Status reloaded =
        daemon->Reload(LoadConfig(flags.flag_config, flags.explicit_settings));
    CountConfigReload(reloaded);
    if (reloaded.ok() && labels != nullptr) labels->SetConfig(daemon->config());
    if (reloaded.ok() && rediscovery != nullptr) rediscovery->Retry();
  }
  absl::MutexLock lock(&stop->mu);
  stop->watcher = nullptr;
}

int Serve(const ParsedFlags& flags) {
  const Config& cfg = *flags.config;
  sigset_t signals = BlockStopAndReloadSignals();  // before any thread
  // Before any gRPC object, and after the signals are blocked (it starts
  // gRPC's threads).
  RouteGrpcAndProtobufLogs();
  if (!MakeGrpcQuiet()) {
    VLOG(1, "gRPC's timer threads stay on (this gRPC cannot turn them off)");
  }
  StopState stop;
  std::thread signal_thread(SignalLoop, &stop, signals);

  LOG_INFO("Starting gpu-device-plugin {} (kubelet socket {}, driver root {})",
           GDP_VERSION, cfg.kubelet_socket, cfg.driver_root);
  if (!cfg.config_file.empty()) {
    LOG_INFO("Config file {}", cfg.config_file);
  }
  int exit_code = 0;
  // Before NVML, so /healthz answers while NVML is retried.
  auto endpoints = Endpoints::Start(cfg.metrics_address);
  if (!endpoints.ok()) {
    LOG_FATAL("{}", endpoints.status().message());
    exit_code = 1;
  } else {
    std::unique_ptr<Nvml> nvml;
    NodeGpus node;
    if (OpenAndDiscover(cfg, &stop, endpoints->get(), &nvml, &node,
                        &exit_code)) {
      LogGpus(*nvml, node);
      HealthStateOptions state;
      state.dir = flags.state_dir;
      if (!state.dir.empty()) state.boot_id = ReadBootId(cfg.proc_root);
      Daemon daemon(*nvml, cfg, state);
      // The label loop's first node when it follows the rediscovery.
      NodeGpus labels_node;
      if (cfg.labels && cfg.rediscover_interval > absl::ZeroDuration()) {
        labels_node = node;
      }
      if (absl::Status s = daemon.Start(std::move(node)); !s.ok()) {
        LOG_FATAL("{}", s.message());
        exit_code = 1;
      } else {
        Endpoints::Serving serving(**endpoints, &daemon);
        absl::Mutex daemon_mu;  // reloads and rediscoveries, one at a time
        const bool rediscover = cfg.rediscover_interval > absl::ZeroDuration();
        std::optional<LabelThread> labels;  // --labels: beside the daemon
        if (cfg.labels) {
          // With rediscovery on, the labels follow its discoveries.
          labels.emplace(
              *nvml, daemon.config(),
              rediscover ? std::optional<NodeGpus>(labels_node) : std::nullopt);
        }
        std::optional<Rediscovery> rediscovery;
        std::thread rediscovery_thread;
        if (rediscover) {
          RediscoveryHooks hooks;
          hooks.discover = [&] {
            absl::MutexLock lock(&daemon_mu);
            return daemon.Discover();
          };
          hooks.apply = [&](const NodeGpus& found) {
            absl::MutexLock lock(&daemon_mu);
            return daemon.Follow(found);
          };
          if (labels.has_value()) {
            hooks.discovered = [&](const NodeGpus& found) {
              labels->SetNode(found);
            };
          }
          hooks.cancel = [&] { daemon.CancelNvml(); };
          hooks.layout = [&] {
            absl::MutexLock lock(&daemon_mu);
            return daemon.Layout();
          };
          rediscovery.emplace(cfg.rediscover_interval, std::move(hooks));
          rediscovery_thread = std::thread([&] {
            NameThisThread("gdp-rediscover");
            rediscovery->Run();
          });
        }
        {
          absl::MutexLock lock(&stop.mu);
          stop.cancel_nvml = [&daemon] { daemon.CancelNvml(); };
        }
        ServeUntilStopped(flags, &daemon, &daemon_mu, &stop,
                          labels.has_value() ? &*labels : nullptr,
                          rediscovery.has_value() ? &*rediscovery : nullptr);
        {
          absl::MutexLock lock(&stop.mu);
          stop.cancel_nvml = nullptr;
        }
        if (rediscovery.has_value()) {
          rediscovery->Stop();
          rediscovery_thread.join();
        }
      }  // the labels stop first
    }    // the plugins stop before NVML shuts down
    // A runner's worker left in an NVML call still uses the library.
    if (AnythingKeptUntilExit()) KeepUntilExit(std::move(nvml));
  }
  if (!stop.requested.HasBeenNotified()) {
    stop.exiting = true;
    kill(getpid(), SIGTERM);
  }
  signal_thread.join();
  LOG_INFO("Exiting with status {}", exit_code);
  if (AnythingKeptUntilExit()) ExitNow(exit_code);
  return exit_code;
}

}  // namespace
}  // namespace gdp

int main(int argc, char** argv) {
  // A handful of threads (one per resource, health, gRPC) each get a glibc
  // malloc arena by default; a node daemon gains nothing from that but
  // dirty memory.
  mallopt(M_ARENA_MAX, 2);
  // Debian builds Abseil without NDEBUG, which turns on the Mutex deadlock
  // detector: a lock-order graph updated on every lock, gRPC's included.
  // Tests keep it; the daemon does not pay for it on every node.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  gdp::ParsedFlags flags = gdp::ParseFlags(argc, argv);
  if (!flags.config.has_value()) return flags.exit_code;
  gdp::logging::Init(flags.config->verbosity);
  if (flags.command == gdp::Command::kDiscover) {
    return gdp::Discover(*flags.config);
  }
  if (flags.command == gdp::Command::kLabels) return gdp::RunLabels(flags);
  if (flags.command == gdp::Command::kNvmlReport) {
    return gdp::RunNvmlReport(flags.config->driver_root, flags.report_cgroup,
                              std::cout, std::cerr);
  }
  if (flags.command == gdp::Command::kHealthStateShow ||
      flags.command == gdp::Command::kHealthStateClear) {
    return gdp::RunHealthState(flags, gdp::ReadBootId(flags.config->proc_root),
                               std::cout, std::cerr);
  }
  return gdp::Serve(flags);
}
