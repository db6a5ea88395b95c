// Keeps the node's feature file current: discovers the GPUs again, computes
// the labels and writes them, every gfd.sleep_interval and at once after a
// config change, as NVIDIA's gpu-feature-discovery does. Beside the daemon
// it can instead be handed the daemon's discoveries (SetNode) and label
// each at once, so the node is discovered once, not twice. With
// gfd.use_node_feature_api the labels go to the node's NodeFeature object
// (labels/node_feature.h) instead of the file.
#ifndef GDP_LABELS_LABEL_LOOP_H_
#define GDP_LABELS_LABEL_LOOP_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "config/config.h"
#include "device/gpu.h"
#include "labels/labels.h"
#include "labels/node_feature.h"
#include "nvml/nvml.h"
#include "nvml/runner.h"

namespace gdp {

// Thread-safe: Run() on one thread; Step(), Stop() and SetConfig() from any.
class LabelLoop {
 public:
  // `nvml` must outlive the loop; null means NVML could not be loaded and
  // --fail-on-init-error=false: the node is labelled as one without GPUs
  // (only nvidia.com/gfd.timestamp), as GFD does. `now` gives the time the
  // timestamp label records: the loop's creation and each SetConfig (GFD
  // stamps when it (re)starts, not every labelling).
  // REQUIRES: Validate(config).ok().
  LabelLoop(
      const Nvml* nvml, Config config,
      std::function<absl::Time()> now = [] { return absl::Now(); });

  LabelLoop(const LabelLoop&) = delete;
  LabelLoop& operator=(const LabelLoop&) = delete;

  // Discovers the GPUs through NVML (a hung NVML call fails the step after
  // its deadline), or once SetNode was called takes the node handed last,
  // computes the labels (ComputeLabels)
  // with the current config and writes them to its gfd.output_file
  // (WriteFeatureFile). When the output file changed with SetConfig, the
  // one written before is removed. With gfd.use_node_feature_api instead:
  // writes them as the NodeFeature of dra.node_name (NodeFeatureWriter, made
  // at the first such step from dra.kubeconfig or the in-cluster config,
  // in the client config's namespace or "default"), which is updated only
  // when it differs. Steps run one at a time.
  // Result on failure: the discovery, labelling or write error (naming what
  // failed); the file or object is left as it was.
  absl::Status Step() ABSL_LOCKS_EXCLUDED(mu_, step_mu_);

  // Steps, then again every gfd.sleep_interval (never with an infinite
  // interval) and at once after SetConfig, until Stop(). A failed step is
  // logged and retried at the next interval. With gfd.oneshot: one step,
  // then returns. After Stop(), unless oneshot or the interval is infinite,
  // removes the output file, as GFD does when it exits (a NodeFeature is
  // left, as GFD leaves it).
  void Run() ABSL_LOCKS_EXCLUDED(mu_, step_mu_);

  // Makes Run() return (at once if it is waiting, also in a discovery
  // whose NVML call hangs or an API server call; a later Step fails
  // Cancelled). Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Uses `config` from the next step on and wakes Run() to step at once;
  // restarts the timestamp. REQUIRES: Validate(config).ok().
  void SetConfig(Config config) ABSL_LOCKS_EXCLUDED(mu_);

  // From now on, steps label `node` (the latest of these) instead of
  // discovering the GPUs themselves; wakes Run() to step at once. For the
  // daemon's rediscovery, which hands each of its discoveries here.
  void SetNode(NodeGpus node) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Writes `labels` as the node's NodeFeature (Step's part with
  // gfd.use_node_feature_api), making the writer the first time.
  absl::Status WriteNodeFeature(const Config& config, const Labels& labels)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(step_mu_) ABSL_LOCKS_EXCLUDED(mu_);

  const Nvml* const nvml_;
  const std::function<absl::Time()> now_;
  // Discoveries run here, under NVML call deadlines; null without NVML.
  const std::unique_ptr<NvmlRunner> runner_;

  absl::Mutex mu_;
  Config config_ ABSL_GUARDED_BY(mu_);
  absl::Time stamp_ ABSL_GUARDED_BY(mu_);  // the timestamp label's time
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool changed_ ABSL_GUARDED_BY(mu_) = false;  // SetConfig since last wait
  std::optional<NodeGpus> node_ ABSL_GUARDED_BY(mu_);  // SetNode's latest
  // The NodeFeature writer, made at the first step that needs it; shared so
  // that Stop() can cancel it while a step uses it.
  std::shared_ptr<NodeFeatureWriter> writer_ ABSL_GUARDED_BY(mu_);

  absl::Mutex step_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::string written_path_ ABSL_GUARDED_BY(step_mu_);     // last written
  std::string written_content_ ABSL_GUARDED_BY(step_mu_);  // its content
};

}  // namespace gdp

#endif  // GDP_LABELS_LABEL_LOOP_H_
