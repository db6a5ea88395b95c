// Follows changes of the node under the daemon without a reload: every
// --rediscover-interval the GPUs are discovered again, and when their
// layout (cmd/gpu_layout.h) differs from the one served, the daemon serves
// the new one with its running config, as a reload does. Each successful
// discovery is also handed on (to the label loop beside the daemon), so the
// node is discovered once per interval, not once per user.
#ifndef GDP_CMD_REDISCOVERY_H_
#define GDP_CMD_REDISCOVERY_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cmd/gpu_layout.h"
#include "device/gpu.h"

namespace gdp {

// How a Rediscovery reaches the daemon. Each hook serialises itself with
// whatever else drives the daemon (main holds its daemon lock in them).
struct RediscoveryHooks {
  // Required. Discovers the GPUs now (under NVML call deadlines: a hung
  // call fails it with an IsNvmlHang status).
  std::function<absl::StatusOr<NodeGpus>()> discover;
  // Required. Serves `node` with the running config if its layout differs
  // from the one served now (the layout is compared again there, as a
  // reload may have come between). Result: true when it was applied, false
  // when the layout is the one served; on failure why it was refused (the
  // served layout stays).
  std::function<absl::StatusOr<bool>(const NodeGpus& node)> apply;
  // Optional. Given every successful discovery, before `apply`.
  std::function<void(const NodeGpus& node)> discovered;
  // Optional. Called by Stop(): makes a discovery in progress fail at once
  // (e.g. NvmlRunner::Cancel). Never called otherwise.
  std::function<void()> cancel;
  // Optional. How layouts are compared now (Daemon::Layout: the served
  // GPUs whose MIG devices the DRA side makes on demand), for telling a
  // discovery from the layout `apply` refused last; `apply` compares with
  // the same. Unset: LayoutOptions{} (every MIG device compared).
  std::function<LayoutOptions()> layout;
};

// Thread-safe: Run() on one thread; Step() and Stop() from any (steps run
// one at a time).
class Rediscovery {
 public:
  // REQUIRES: interval > 0 (and finite); hooks.discover and hooks.apply
  // set.
  Rediscovery(absl::Duration interval, RediscoveryHooks hooks);
  Rediscovery(const Rediscovery&) = delete;
  Rediscovery& operator=(const Rediscovery&) = delete;

  // One rediscovery: discovers, hands the result to `discovered`, then has
  // `apply` serve it. A layout whose apply failed is not applied again
  // until a discovery shows another layout (LayoutChanges with
  // hooks.layout; no restart every interval for a change that cannot be
  // served). A failure is logged once per distinct
  // message (and a recovery once); an unchanged layout logs only at -v 1.
  // Result: true when a new layout was applied, false when nothing was
  // done; on failure the discovery's or the apply's error (nothing
  // changed).
  absl::StatusOr<bool> Step() ABSL_LOCKS_EXCLUDED(step_mu_, mu_);

  // Waits one interval, steps, and again, until Stop(). The first step
  // comes one interval after Run starts (start-up has just discovered).
  void Run() ABSL_LOCKS_EXCLUDED(step_mu_, mu_);

  // Forgets the layout `apply` refused last, so the next Step tries it
  // again: for after a reload, whose config may serve it. Never blocks on
  // a Step in progress (safe under the lock the hooks take).
  void Retry() ABSL_LOCKS_EXCLUDED(mu_);

  // Makes Run() return, at once from its wait, and cuts a discovery in
  // progress short through hooks.cancel. Idempotent; no Step after it.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Logs `s` unless it is the failure logged last; returns it.
  absl::Status Failed(absl::Status s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(step_mu_);

  const absl::Duration interval_;
  const RediscoveryHooks hooks_;

  absl::Mutex step_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::string last_error_ ABSL_GUARDED_BY(step_mu_);  // "" after a success
  // The last layout `apply` refused, with why; not tried again while
  // discoveries show it.
  std::optional<NodeGpus> refused_ ABSL_GUARDED_BY(step_mu_);
  absl::Status refused_why_ ABSL_GUARDED_BY(step_mu_);

  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool retry_ ABSL_GUARDED_BY(mu_) = false;  // Retry() since the last Step
};

}  // namespace gdp

#endif  // GDP_CMD_REDISCOVERY_H_
