#include "dra/claim_calls.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "dra/dra_metrics.h"
#include "util/logging.h"

namespace gdp::dra {
namespace {

std::string Label(const ClaimRef& ref) {
  return absl::StrCat("claim ", Describe(ref), " (", ref.uid, ")");
}

// The claims of one NodePrepareResources call, answered when the last is
// done.
class Gather {
 public:
  Gather(size_t claims, ClaimCalls::PrepareDone done)
      : left_(claims), done_(std::move(done)) {}

  // Records one claim's result; the last one calls `done`.
  void Add(const std::string& uid, PrepareResult result)
      ABSL_LOCKS_EXCLUDED(mu_) {
    std::map<std::string, PrepareResult> all;
    {
      absl::MutexLock lock(&mu_);
      results_[uid] = std::move(result);
      if (--left_ > 0) return;
      all = std::move(results_);
    }
    done_(std::move(all));
  }

 private:
  absl::Mutex mu_;
  size_t left_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, PrepareResult> results_ ABSL_GUARDED_BY(mu_);
  const ClaimCalls::PrepareDone done_;
};

void Dropped(const char* method, const char* reason) {
  DraMetrics::Get().calls_dropped.With({method, reason}).Increment();
}

}  // namespace

absl::Time ClaimDeadline(absl::Time call_deadline, absl::Time now,
                         const ClaimCallsOptions& options) {
  if (call_deadline == absl::InfiniteFuture()) {
    call_deadline = now + options.default_budget;
  }
  const absl::Duration left = call_deadline - now;
  if (left <= absl::ZeroDuration()) return call_deadline;
  return call_deadline - std::min(left / 10, options.max_margin);
}

ClaimCalls::ClaimCalls(Preparer& preparer, ClaimCallsOptions options)
    : preparer_(preparer),
      options_(options),
      unprepares_({.name = "gdp-dra-unprep",
                   .max_threads = 1,
                   .max_queued = options.max_waiting_unprepares}),
      readers_({.name = "gdp-dra-read",
                .max_threads = options.readers,
                .max_queued = options.max_waiting_claims}) {}

ClaimCalls::~ClaimCalls() = default;

void ClaimCalls::Prepare(const std::vector<ClaimRef>& claims,
                         std::shared_ptr<CallBudget> caller, PrepareDone done) {
  std::vector<ClaimRef> unique;
  std::set<std::string> seen;
  for (const ClaimRef& ref : claims) {
    if (seen.insert(ref.uid).second) unique.push_back(ref);
  }
  if (unique.empty()) {
    done({});
    return;
  }
  const absl::Time deadline =
      ClaimDeadline(caller->deadline(), absl::Now(), options_);
  auto gather = std::make_shared<Gather>(unique.size(), std::move(done));
  for (const ClaimRef& ref : unique) {
    const bool queued = readers_.Post([this, ref, deadline, caller, gather] {
      if (!caller->live()) {
        Dropped("prepare", "caller gone");
        gather->Add(ref.uid,
                    {.devices = {},
                     .error = absl::StrCat(Label(ref),
                                           ": the kubelet's call ended before "
                                           "the claim's turn; not prepared")});
        return;
      }
      gather->Add(ref.uid, preparer_.Prepare(ref, deadline, *caller));
    });
    if (!queued) {
      Dropped("prepare", "queue full");
      LOG_WARN("Cannot prepare {}: {} claims already wait to be read",
               Label(ref), options_.max_waiting_claims);
      gather->Add(ref.uid, {.devices = {},
                            .error = absl::StrCat(
                                Label(ref), ": ", options_.max_waiting_claims,
                                " claims already wait to be read; try again")});
    }
  }
}

void ClaimCalls::Unprepare(const std::vector<ClaimRef>& claims,
                           std::shared_ptr<CallBudget> caller,
                           UnprepareDone done) {
  auto fail_all = [&claims](const std::string& why) {
    std::map<std::string, std::string> out;
    for (const ClaimRef& ref : claims) {
      out[ref.uid] = absl::StrCat(Label(ref), ": ", why);
    }
    return out;
  };
  // `done` is shared: the job may be refused after being handed over.
  auto shared_done = std::make_shared<UnprepareDone>(std::move(done));
  const bool queued =
      unprepares_.Post([this, claims, caller, shared_done, fail_all] {
        if (!caller->live()) {
          Dropped("unprepare", "caller gone");
          (*shared_done)(fail_all(
              "the kubelet's call ended before its turn; not unprepared"));
          return;
        }
        (*shared_done)(preparer_.Unprepare(claims));
      });
  if (!queued) {
    Dropped("unprepare", "queue full");
    (*shared_done)(fail_all(absl::StrCat(
        options_.max_waiting_unprepares,
        " unprepare calls already wait; not unprepared, try again")));
  }
}

}  // namespace gdp::dra
