#include "cmd/rediscovery.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cmd/gpu_layout.h"
#include "util/logging.h"

namespace gdp {

Rediscovery::Rediscovery(absl::Duration interval, RediscoveryHooks hooks)
    : interval_(interval), hooks_(std::move(hooks)) {}

absl::Status Rediscovery::Failed(absl::Status s) {
  if (s.message() != last_error_) {
    LOG_ERROR("GPU rediscovery failed, serving the GPUs as they were: {}",
              s.message());
    last_error_ = std::string(s.message());
  }
  return s;
}

absl::StatusOr<bool> Rediscovery::Step() {
  absl::MutexLock step(&step_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return absl::CancelledError("GPU rediscovery stopped");
    if (retry_) refused_.reset();
    retry_ = false;
  }
  absl::StatusOr<NodeGpus> node = hooks_.discover();
  if (!node.ok()) {
    return Failed(absl::Status(
        node.status().code(),
        absl::StrCat("discovering the GPUs: ", node.status().message())));
  }
  if (hooks_.discovered) hooks_.discovered(*node);
  if (refused_.has_value() &&
      LayoutChanges(*refused_, *node,
                    hooks_.layout ? hooks_.layout() : LayoutOptions{})
          .empty()) {
    VLOG(1, "GPU rediscovery: the layout refused before is unchanged");
    return Failed(refused_why_);
  }
  absl::StatusOr<bool> applied = hooks_.apply(*node);
  if (!applied.ok()) {
    refused_ = *std::move(node);
    refused_why_ = absl::Status(
        applied.status().code(),
        absl::StrCat("serving the changed GPUs: ", applied.status().message()));
    return Failed(refused_why_);
  }
  refused_.reset();
  if (!last_error_.empty()) {
    LOG_INFO("GPU rediscovery works again");
    last_error_.clear();
  }
  if (!*applied) VLOG(1, "GPU rediscovery: no change");
  return *applied;
}

void Rediscovery::Run() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto stopped = [this]()
                         ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopped), interval_)) return;
    }
    (void)Step();  // logged there
  }
}

void Rediscovery::Retry() {
  absl::MutexLock lock(&mu_);
  retry_ = true;
}

void Rediscovery::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (hooks_.cancel) hooks_.cancel();
}

}  // namespace gdp
