// The DRA benchmark's surroundings: the Kubernetes API server emulator
// (tests/kube/apiserver.py) with the Node the plugin runs on, the plugin's
// command line for --device-api=dra on a fixture root, claims created
// allocated to one GPU, and the kubelet's registration call done
// in-process.
#ifndef GDP_BENCH_DRA_ENV_H_
#define GDP_BENCH_DRA_ENV_H_

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench/fixture.h"
#include "kube/client.h"
#include "pluginregistration/v1/api.pb.h"
#include "testing/subprocess.h"

namespace gdp::bench {

inline constexpr char kDraNode[] = "node-1";
inline constexpr char kDraDriver[] = "gpu.nvidia.com";

struct DraEnvOptions : FixtureOptions {
  std::string apiserver;  // tests/kube/apiserver.py
  std::string python = "/usr/bin/python3";
  // The plugin's --health-quiet-period and --health-probe-interval: short,
  // so that a recoverable XID's taint goes again soon.
  std::string quiet_period = "1s", probe_interval = "200ms";
};

// Adds --apiserver, --python, --health-quiet-period and
// --health-probe-interval to `app`, filling `o`.
void AddDraEnvOptions(CLI::App& app, DraEnvOptions* o);

// Not thread-safe. Owns the emulator process and the directory `dir`
// (removed by the destructor).
class DraEnv {
 public:
  // Makes the fixture root under `dir` (boot ID included), starts the
  // emulator (its credentials and kubeconfig in <dir>/api), and creates
  // the Node kDraNode. Result on failure: Internal naming what failed
  // (`fake-nvml rootfs`, the emulator's start with its stderr, the client,
  // the Node).
  static absl::StatusOr<std::unique_ptr<DraEnv>> Create(
      const DraEnvOptions& o, const std::filesystem::path& dir);
  ~DraEnv();

  // Starts the plugin with --device-api=dra (registration dir <dir>/reg,
  // plugins dir <dir>/plugins, CDI specs <dir>/cdi), the health timings of
  // the options and then their plugin_args, on the fake NVML with the
  // control file control(); stderr to <dir>/plugin.err.
  std::unique_ptr<testing::Subprocess> SpawnPlugin() const;

  // A new client of the emulator (each user gets its own connection).
  // Result on failure: the kubeconfig's or the client's error.
  absl::StatusOr<std::unique_ptr<kube::Client>> NewClient() const;

  // Creates claim `name` in namespace "ns" with one request "gpu",
  // allocated device `device` of this node's pool. Result: its UID; on
  // failure the API call's error.
  absl::StatusOr<std::string> CreateClaim(const std::string& name,
                                          const std::string& device);

  // Deletes the node's slices (DeleteCollection by spec.nodeName).
  absl::Status DeleteSlices();

  // Removes the plugin's checkpoint and CDI specs (no plugin may run).
  void ForgetClaims() const;

  // The registration socket, the fake NVML's control file.
  std::string registration_socket() const;
  std::string control() const { return (dir_ / "control").string(); }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  DraEnv(DraEnvOptions o, std::filesystem::path dir)
      : options_(std::move(o)), dir_(std::move(dir)) {}

  const DraEnvOptions options_;
  const std::filesystem::path dir_;
  std::vector<std::string> argv_;  // the plugin's
  std::unique_ptr<testing::Subprocess> api_server_;
  std::unique_ptr<kube::Client> api_;
};

// Does what the kubelet's plugin watcher does when `socket` appears: waits
// for it, calls GetInfo (retried while refused; all within `timeout`),
// checks the answer (type
// DRAPlugin, driver kDraDriver, an absolute endpoint, v1.DRAPlugin listed)
// and calls NotifyRegistrationStatus(registered). Result: the plugin's
// info; on failure Unavailable (no socket, a failed call) or Internal (an
// answer the kubelet would refuse), naming it.
absl::StatusOr<pluginregistration::PluginInfo> RegisterDraPlugin(
    const std::string& socket, absl::Duration timeout);

// Polls (every millisecond) until `path` is a socket or `timeout`.
// Result: whether it is.
bool WaitForSocket(const std::string& path, absl::Duration timeout);

}  // namespace gdp::bench

#endif  // GDP_BENCH_DRA_ENV_H_
