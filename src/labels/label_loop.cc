#include "labels/label_loop.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "device/gpu.h"
#include "kube/config.h"
#include "labels/feature_file.h"
#include "labels/labels.h"
#include "labels/node_facts.h"
#include "util/logging.h"

namespace gdp {
namespace {

// The writer of the node's NodeFeature, from the config's API server access
// (dra.kubeconfig, else in-cluster) and dra.node_name.
absl::StatusOr<std::unique_ptr<NodeFeatureWriter>> MakeWriter(
    const Config& config) {
  const DraConfig& d = config.dra;
  absl::StatusOr<kube::ClientConfig> api =
      d.kubeconfig.empty() ? kube::InClusterConfig(d.api_host, d.api_port)
                           : kube::LoadKubeconfig(d.kubeconfig);
  if (!api.ok()) {
    return absl::Status(
        api.status().code(),
        absl::StrCat("NodeFeature (--use-node-feature-api): the API "
                     "server's address and credentials (--kubeconfig, or "
                     "in-cluster): ",
                     api.status().message()));
  }
  std::string ns = api->default_namespace;
  return NodeFeatureWriter::Create(*std::move(api), d.node_name, ns);
}

}  // namespace

LabelLoop::LabelLoop(const Nvml* nvml, Config config,
                     std::function<absl::Time()> now)
    : nvml_(nvml),
      now_(std::move(now)),
      runner_(nvml == nullptr ? nullptr : std::make_unique<NvmlRunner>(*nvml)),
      config_(std::move(config)),
      stamp_(now_()) {}

absl::Status LabelLoop::Step() {
  absl::MutexLock step(&step_mu_);
  Config config;
  absl::Time stamp;
  std::optional<NodeGpus> handed;
  {
    absl::MutexLock lock(&mu_);
    config = config_;
    stamp = stamp_;
    handed = node_;
  }
  NodeGpus node;
  if (handed.has_value()) {
    node = *std::move(handed);
  } else if (nvml_ != nullptr) {
    absl::StatusOr<absl::StatusOr<NodeGpus>> run =
        runner_->Call<absl::StatusOr<NodeGpus>>(
            [nvml = nvml_, root = config.sysfs_root] {
              return DiscoverGpus(*nvml, root);
            });
    if (!run.ok()) return run.status();
    absl::StatusOr<NodeGpus> found = *std::move(run);
    if (!found.ok()) return found.status();
    node = *std::move(found);
    for (const LeftOut& u : node.unusable) {
      VLOG(1, "Not labelling a GPU NVML cannot describe: {}",
           u.error.message());
    }
  }
  NodeFacts facts = ReadNodeFacts(node, config, stamp);
  if (nvml_ != nullptr && !node.gpus.empty()) {
    absl::StatusOr<GpuConditions> conditions = runner_->Call<GpuConditions>(
        [nvml = nvml_, node] { return ReadGpuConditions(*nvml, node); });
    // A hung read leaves the conditions out (false) this time.
    if (conditions.ok()) {
      facts.pcie_degraded = conditions->pcie_degraded;
      facts.throttled = conditions->throttled;
    } else {
      VLOG(1, "GPU conditions not read: {}", conditions.status().message());
    }
  }
  absl::StatusOr<Labels> labels = ComputeLabels(node, config, facts);
  if (!labels.ok()) return labels.status();
  if (labels->size() <= 1) LOG_WARN("No GPU labels: no GPUs found");
  if (config.gfd.use_node_feature_api) return WriteNodeFeature(config, *labels);
  const std::string& path = config.gfd.output_file;
  if (absl::Status s = WriteFeatureFile(path, *labels); !s.ok()) return s;
  std::string content = FormatFeatureFile(*labels);
  if (path != written_path_ || content != written_content_) {
    LOG_INFO("Wrote {} node labels to {}", labels->size(), path);
  } else {
    VLOG(1, "Wrote {} node labels to {} (unchanged)", labels->size(), path);
  }
  if (!written_path_.empty() && written_path_ != path) {
    if (absl::Status s = RemoveFeatureFile(written_path_); !s.ok()) {
      LOG_WARN("Cannot remove the previous feature file: {}", s.message());
    }
  }
  written_path_ = path;
  written_content_ = std::move(content);
  return absl::OkStatus();
}

absl::Status LabelLoop::WriteNodeFeature(const Config& config,
                                         const Labels& labels) {
  std::shared_ptr<NodeFeatureWriter> writer;
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return absl::CancelledError("the label loop is stopping");
    writer = writer_;
  }
  if (writer == nullptr) {
    absl::StatusOr<std::unique_ptr<NodeFeatureWriter>> made =
        MakeWriter(config);
    if (!made.ok()) return made.status();
    writer = *std::move(made);
    absl::MutexLock lock(&mu_);
    if (stop_) return absl::CancelledError("the label loop is stopping");
    writer_ = writer;
  }
  // The writer logs what it created or updated.
  absl::StatusOr<bool> wrote = writer->Write(labels);
  if (!wrote.ok()) return wrote.status();
  return absl::OkStatus();
}

void LabelLoop::Run() {
  bool oneshot = false;
  absl::Duration interval;
  for (;;) {
    if (absl::Status s = Step(); !s.ok()) {
      LOG_ERROR("Node labelling failed: {}", s.message());
    }
    absl::MutexLock lock(&mu_);
    oneshot = config_.gfd.oneshot;
    interval = config_.gfd.sleep_interval;
    if (oneshot || stop_) break;
    auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stop_ || changed_;
    };
    if (interval == absl::InfiniteDuration()) {
      mu_.Await(absl::Condition(&woken));
    } else {
      mu_.AwaitWithTimeout(absl::Condition(&woken), interval);
    }
    changed_ = false;
    if (stop_) break;
  }
  if (oneshot || interval == absl::InfiniteDuration()) return;
  absl::MutexLock step(&step_mu_);
  if (written_path_.empty()) return;
  if (absl::Status s = RemoveFeatureFile(written_path_); !s.ok()) {
    LOG_WARN("Cannot remove the feature file: {}", s.message());
  } else {
    LOG_INFO("Removed the node labels ({})", written_path_);
  }
  written_path_.clear();
  written_content_.clear();
}

void LabelLoop::Stop() {
  if (runner_ != nullptr) runner_->Cancel();
  absl::MutexLock lock(&mu_);
  stop_ = true;
  if (writer_ != nullptr) writer_->Cancel();
}

void LabelLoop::SetConfig(Config config) {
  absl::Time stamp = now_();
  absl::MutexLock lock(&mu_);
  config_ = std::move(config);
  stamp_ = stamp;
  changed_ = true;
}

void LabelLoop::SetNode(NodeGpus node) {
  absl::MutexLock lock(&mu_);
  node_ = std::move(node);
  changed_ = true;
}

}  // namespace gdp
