// Node labelling from main: the `labels` subcommand, and the label loop
// beside the daemon for --labels.
#ifndef GDP_CMD_LABELS_RUNNER_H_
#define GDP_CMD_LABELS_RUNNER_H_

#include <optional>
#include <thread>
#include <utility>

#include "cmd/flags.h"
#include "config/config.h"
#include "device/gpu.h"
#include "labels/label_loop.h"
#include "nvml/nvml.h"

namespace gdp {

// `gpu-device-plugin labels`: opens NVML under --driver-root and writes the
// labels to gfd.output_file (with --use-node-feature-api: to the node's
// NodeFeature object, see LabelLoop); with --oneshot once, else every
// --sleep-interval until SIGTERM/SIGINT (SIGHUP reloads the config file).
// When NVML cannot be loaded: exit 1 with --fail-on-init-error, else label
// as a node without GPUs (only the timestamp), as GFD does.
// REQUIRES: flags.config has a value; called from main before any thread
// starts (it blocks SIGTERM, SIGINT and SIGHUP for its signal wait).
// Returns the exit status: 0, or 1 when NVML or a oneshot labelling failed.
int RunLabels(const ParsedFlags& flags);

// The label loop on its own thread, for the daemon's --labels: starts in
// the constructor, stops (waking the loop at once) in the destructor.
// Not thread-safe: one thread makes, reconfigures and destroys it.
class LabelThread {
 public:
  // `nvml` must outlive this. With `node` (the daemon's start-up
  // discovery, when its rediscovery runs), the loop labels the nodes handed
  // to SetNode and never discovers itself; without, it discovers every
  // gfd.sleep_interval. REQUIRES: Validate(config).ok().
  LabelThread(const Nvml& nvml, const Config& config,
              std::optional<NodeGpus> node = std::nullopt);
  ~LabelThread();
  LabelThread(const LabelThread&) = delete;
  LabelThread& operator=(const LabelThread&) = delete;

  // After a successful reload: labels again at once with `config`.
  void SetConfig(const Config& config) { loop_.SetConfig(config); }

  // Thread-safe: labels `node` (a rediscovery's result) at once.
  void SetNode(NodeGpus node) { loop_.SetNode(std::move(node)); }

 private:
  LabelLoop loop_;
  std::thread thread_;
};

}  // namespace gdp

#endif  // GDP_CMD_LABELS_RUNNER_H_
