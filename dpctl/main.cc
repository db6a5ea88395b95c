// dpctl: emulators of the kubelet's device manager and of its DRA side, and
// clients for kubelet Device Plugin API v1beta1 plugins (and our
// DeviceStatus API) and for DRA kubelet plugins. See `dpctl --help`.
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "client.h"
#include "dra_cli.h"
#include "dra_kubelet.h"
#include "event_printer.h"
#include "kubelet.h"

namespace gdp::dpctl {
namespace {

std::vector<std::string> SplitIds(const std::string& list) {
  return absl::StrSplit(list, ',', absl::SkipEmpty());
}

int UsageError(const std::string& message) {
  std::cerr << message << "\nRun with --help for more information."
            << std::endl;
  return kExitUsage;
}

// Blocks SIGINT and SIGTERM in every thread (call before any thread starts)
// and returns a signalfd that becomes readable when one arrives, or -1.
int SignalFd() {
  signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) return -1;
  return signalfd(-1, &set, SFD_CLOEXEC);
}

// kJson for --json, else kText.
OutputFormat Format(bool json) {
  return json ? OutputFormat::kJson : OutputFormat::kText;
}

// Runs an emulator, `run` (RunKubelet or RunDraKubelet) with `config`, on
// stdin, printing its events to stdout (as JSON, or as EventText renders
// them), until SIGINT, SIGTERM or its own end. Returns its exit code, or
// `start_failed` when the signals cannot be watched.
template <typename Config>
int RunFromStdin(int (*run)(const Config& config, EventSink* events,
                            int input_fd, int stop_fd, std::ostream& err),
                 const Config& config, bool json, int start_failed) {
  const int stop_fd = SignalFd();
  if (stop_fd < 0) {
    std::cerr << "error: cannot watch for signals" << std::endl;
    return start_failed;
  }
  EventPrinter printer(&std::cout, Format(json));
  const int code = run(config, &printer, STDIN_FILENO, stop_fd, std::cerr);
  close(stop_fd);
  return code;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "Emulates the kubelet's device manager (kubelet) and its DRA side "
      "(dra-kubelet), and calls kubelet Device Plugin API v1beta1 plugins "
      "(list, status, allocate, preferred) and DRA kubelet plugins (dra).",
      "dpctl"};
  app.set_version_flag("--version", DPCTL_VERSION);
  app.require_subcommand(1);

  KubeletConfig kubelet_config;
  bool kubelet_json = false;
  std::vector<std::string> allocate_specs;
  CLI::App* kubelet = app.add_subcommand(
      "kubelet", "Emulate the kubelet's device manager on <dir>/kubelet.sock");
  kubelet->footer(
      "Prints one line per event. Reads commands from stdin, one per line:\n"
      "  allocate <resource> <count> [pod]\n"
      "  free <pod>\n"
      "  list\n"
      "  quit\n"
      "End of stdin does not stop it; SIGINT, SIGTERM and 'quit' do.");
  kubelet->add_option("--dir", kubelet_config.dir, "Device-plugins directory")
      ->required();
  kubelet->add_flag("--json", kubelet_json, "Print one JSON object per event");
  kubelet
      ->add_option("--allocate", allocate_specs,
                   "RES=N[:POD]: allocate N devices of RES once it has N "
                   "healthy free ones (repeatable)")
      ->allow_extra_args(false);
  kubelet->add_flag("--exit-after-allocate", kubelet_config.exit_after_allocate,
                    "Exit once every --allocate has run (1 if one failed)");

  ClientConfig client_config;
  bool client_json = false;
  std::optional<double> timeout_seconds;
  // --socket, --json and --timeout (seconds > 0) of a client command.
  auto add_socket_options = [](CLI::App* command, std::string& socket,
                               bool& json, std::optional<double>& timeout,
                               const std::string& socket_help,
                               const std::string& timeout_help) {
    command->add_option("--socket", socket, socket_help)->required();
    command->add_flag("--json", json, "Print JSON");
    command->add_option("--timeout", timeout, timeout_help)
        ->check(CLI::PositiveNumber);
  };
  auto add_client_options = [&](CLI::App* command) {
    add_socket_options(command, client_config.socket, client_json,
                       timeout_seconds, "The plugin's unix socket",
                       "Seconds allowed for connecting and for each call "
                       "(default 10); for list --watch, how long to watch "
                       "(default: until the stream ends)");
  };

  bool watch = false;
  CLI::App* list = app.add_subcommand(
      "list",
      "Print a plugin's options and first device list (with the reason of "
      "each unhealthy device where the plugin serves DeviceStatus)");
  add_client_options(list);
  list->add_flag("--watch", watch,
                 "Print every device list until the stream ends or --timeout "
                 "passes");

  CLI::App* status = app.add_subcommand(
      "status",
      "Print health, reason and physical unit of each device (the plugin's "
      "gdp.status.v1.DeviceStatus service)");
  add_client_options(status);

  std::vector<std::string> ids;
  std::vector<std::string> container_lists;
  CLI::App* allocate = app.add_subcommand(
      "allocate", "Send one Allocate; the IDs form one container request");
  add_client_options(allocate);
  allocate->add_option("ids", ids, "Device IDs of the container request");
  allocate
      ->add_option("--container", container_lists,
                   "a,b,...: one more container request (repeatable)")
      ->allow_extra_args(false);
  int repeat = 1;
  allocate
      ->add_option("--repeat", repeat,
                   "Send the request N times on one connection and print "
                   "the round trips' p50, p99 and max (default 1)")
      ->check(CLI::Range(1, 100000));

  std::string available;
  std::string must_include;
  int size = 0;
  CLI::App* preferred =
      app.add_subcommand("preferred", "Send one GetPreferredAllocation");
  add_client_options(preferred);
  preferred->add_option("--available", available, "a,b,...: available IDs")
      ->required();
  preferred->add_option("--must-include", must_include,
                        "a,b,...: IDs the answer must include");
  preferred->add_option("--size", size, "Allocation size")->required();

  // The DRA side.
  DraKubeletConfig dra_config;
  bool dra_json = false;
  std::optional<std::string> dra_kubelet_api;
  std::vector<std::string> dra_prepare_specs;
  CLI::App* dra_kubelet = app.add_subcommand(
      "dra-kubelet",
      "Emulate the kubelet's DRA side: watch a plugin registry directory, "
      "register DRA plugins, prepare and unprepare claims");
  dra_kubelet->footer(
      "Prints one line per event. Reads commands from stdin, one per line:\n"
      "  prepare <driver> <ns>/<name>/<uid> [<ns>/<name>/<uid> ...]\n"
      "  unprepare <driver> <ns>/<name>/<uid> [<ns>/<name>/<uid> ...]\n"
      "  list\n"
      "  quit\n"
      "<driver> '-' means the only registered driver. End of stdin does not "
      "stop it; SIGINT, SIGTERM and 'quit' do.");
  dra_kubelet
      ->add_option("--registry-dir", dra_config.registry_dir,
                   "Plugin registry directory (the kubelet's "
                   "plugins_registry); created when missing")
      ->required();
  dra_kubelet->add_flag("--json", dra_json, "Print one JSON object per event");
  dra_kubelet
      ->add_option("--api", dra_kubelet_api,
                   "Know only this DRAPlugin version, v1 or v1beta1 (default: "
                   "both; the plugin's list order decides)")
      ->check(CLI::IsMember({"v1", "v1beta1"}));
  dra_kubelet->add_flag("--health,!--no-health", dra_config.manager.apis.health,
                        "Follow the health stream of plugins listing "
                        "v1alpha1.DRAResourceHealth (default: on)");
  dra_kubelet
      ->add_option("--prepare", dra_prepare_specs,
                   "NS/NAME/UID: prepare this claim once a driver is "
                   "registered; all of them in one call (repeatable)")
      ->allow_extra_args(false);
  dra_kubelet->add_flag("--exit-after-prepare", dra_config.exit_after_prepare,
                        "Exit after the --prepare call (1 if it failed or a "
                        "claim has an error or is missing)");
  std::optional<double> dra_call_timeout;
  dra_kubelet
      ->add_option("--call-timeout", dra_call_timeout,
                   "Seconds each prepare and unprepare call may take, as "
                   "the kubelet's deadline (default: the kubelet's 45)")
      ->check(CLI::Range(0.1, 3600.0));

  DraClientConfig dra_client;
  std::optional<std::string> dra_api;
  std::optional<double> dra_timeout;
  std::vector<std::string> dra_claim_specs;
  CLI::App* dra = app.add_subcommand(
      "dra", "Call a DRA kubelet plugin's sockets directly (no watcher)");
  dra->require_subcommand(1);
  dra->footer(
      "Exit codes: 0 done; 1 a claim has an error or is missing from the "
      "answer (prepare, unprepare); 2 the call failed; 3 cannot connect; 64 "
      "usage error.");
  auto add_dra_options = [&](CLI::App* command, const std::string& socket_help,
                             const std::string& timeout_help) {
    add_socket_options(command, dra_client.socket, dra_json, dra_timeout,
                       socket_help, timeout_help);
  };
  CLI::App* dra_info = dra->add_subcommand(
      "info",
      "Call GetInfo on a registration socket and say what a kubelet would "
      "do with the answer (no NotifyRegistrationStatus)");
  add_dra_options(dra_info, "The plugin's registration socket",
                  "Seconds allowed for connecting and for the call "
                  "(default 10)");
  CLI::App* dra_calls[2] = {
      dra->add_subcommand("prepare", "Send one NodePrepareResources"),
      dra->add_subcommand("unprepare", "Send one NodeUnprepareResources")};
  for (CLI::App* command : dra_calls) {
    add_dra_options(command, "The plugin's DRA endpoint (dra.sock)",
                    "Seconds allowed for the call (default 45, the "
                    "kubelet's)");
    command
        ->add_option("--api", dra_api,
                     "DRAPlugin version, v1 or v1beta1 (default v1)")
        ->check(CLI::IsMember({"v1", "v1beta1"}));
    command->add_option("claims", dra_claim_specs, "NS/NAME/UID of each claim")
        ->required();
  }
  CLI::App* dra_health = dra->add_subcommand(
      "health",
      "Print the plugin's NodeWatchResources (v1alpha1) messages until the "
      "stream ends or --timeout passes");
  add_dra_options(dra_health, "The plugin's DRA endpoint (dra.sock)",
                  "Seconds to watch (default: until the stream ends)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }

  if (*kubelet) {
    for (const std::string& spec : allocate_specs) {
      absl::StatusOr<AutoAllocation> a = ParseAutoAllocation(spec);
      if (!a.ok()) return UsageError(std::string(a.status().message()));
      kubelet_config.allocations.push_back(*a);
    }
    if (kubelet_config.exit_after_allocate &&
        kubelet_config.allocations.empty()) {
      return UsageError("--exit-after-allocate needs at least one --allocate");
    }
    return RunFromStdin(&RunKubelet, kubelet_config, kubelet_json,
                        kKubeletStartFailed);
  }

  if (*dra_kubelet) {
    if (dra_kubelet_api) {
      dra_config.manager.apis.known = {*ParseApi(*dra_kubelet_api)};
    }
    for (const std::string& spec : dra_prepare_specs) {
      absl::StatusOr<ClaimRef> claim = ParseClaimRef(spec);
      if (!claim.ok()) {
        return UsageError("--prepare: " +
                          std::string(claim.status().message()));
      }
      dra_config.prepare.push_back(*claim);
    }
    if (dra_call_timeout) {
      dra_config.call_timeout = absl::Seconds(*dra_call_timeout);
    }
    if (dra_config.exit_after_prepare && dra_config.prepare.empty()) {
      return UsageError("--exit-after-prepare needs at least one --prepare");
    }
    return RunFromStdin(&RunDraKubelet, dra_config, dra_json,
                        kDraKubeletStartFailed);
  }

  if (*dra) {
    dra_client.format = Format(dra_json);
    if (dra_api) dra_client.api = *ParseApi(*dra_api);
    if (dra_timeout) dra_client.timeout = absl::Seconds(*dra_timeout);
    if (*dra_info) return RunDraInfo(dra_client, std::cout, std::cerr);
    if (*dra_health) return RunDraHealth(dra_client, std::cout, std::cerr);
    std::vector<ClaimRef> claims;
    for (const std::string& spec : dra_claim_specs) {
      absl::StatusOr<ClaimRef> claim = ParseClaimRef(spec);
      if (!claim.ok()) return UsageError(std::string(claim.status().message()));
      claims.push_back(*claim);
    }
    if (*dra_calls[0]) {
      return RunDraPrepare(dra_client, claims, std::cout, std::cerr);
    }
    return RunDraUnprepare(dra_client, claims, std::cout, std::cerr);
  }

  client_config.format = Format(client_json);
  if (timeout_seconds) client_config.timeout = absl::Seconds(*timeout_seconds);
  if (*list) {
    std::optional<absl::Duration> watch_for;
    if (timeout_seconds) watch_for = client_config.timeout;
    return RunList(client_config, watch, watch_for, std::cout, std::cerr);
  }
  if (*status) return RunStatus(client_config, std::cout, std::cerr);
  if (*allocate) {
    std::vector<std::vector<std::string>> containers;
    if (!ids.empty()) containers.push_back(ids);
    for (const std::string& c : container_lists) {
      containers.push_back(SplitIds(c));
    }
    if (containers.empty()) {
      return UsageError("allocate: give device IDs or --container");
    }
    return RunAllocate(client_config, containers, repeat, std::cout, std::cerr);
  }
  return RunPreferred(client_config, SplitIds(available),
                      SplitIds(must_include), size, std::cout, std::cerr);
}

}  // namespace
}  // namespace gdp::dpctl

int main(int argc, char** argv) { return gdp::dpctl::Main(argc, argv); }
