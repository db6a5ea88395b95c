// How the DRA plugin's calls are run, apart from their wire format: each
// NodePrepareResources claim on a pool of threads, read in parallel within
// the kubelet's deadline; NodeUnprepareResources on a thread of its own, so
// it never waits behind a claim read; a call whose caller has gone is
// dropped, not run. No protobuf (dra_service.cc is the edge).
#ifndef GDP_DRA_CLAIM_CALLS_H_
#define GDP_DRA_CLAIM_CALLS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "dra/claim.h"
#include "dra/preparer.h"
#include "util/call_budget.h"
#include "util/work_pool.h"

namespace gdp::dra {

struct ClaimCallsOptions {
  // Claims read at once (each on its own API connection): a 32-claim call
  // against a slow API server is answered by its deadline.
  size_t readers = 8;
  // Claims waiting for a reader; more are answered at once with an error.
  size_t max_waiting_claims = 256;
  // Unprepare calls waiting; more are refused.
  size_t max_waiting_unprepares = 64;
  // The budget of a call that came without a deadline (the kubelet sets
  // 45 s).
  absl::Duration default_budget = absl::Seconds(45);
  // The part of a call's time kept to build and send its answer: a tenth
  // of what is left, at most this.
  absl::Duration max_margin = absl::Seconds(2);
};

// When the claims of a call must be answered by: before the caller's
// deadline, keeping a tenth of the time left (at most `max_margin`) to
// answer in; `default_budget` from `now` when there is no deadline.
absl::Time ClaimDeadline(absl::Time call_deadline, absl::Time now,
                         const ClaimCallsOptions& options);

// Thread-safe.
class ClaimCalls {
 public:
  using PrepareDone =
      std::function<void(std::map<std::string, PrepareResult> results)>;
  using UnprepareDone =
      std::function<void(std::map<std::string, std::string> errors)>;

  // `preparer` must outlive this.
  ClaimCalls(Preparer& preparer, ClaimCallsOptions options = {});
  // Waits for the work in flight (cancel the claim reads first to make it
  // quick); then `done` has been called for every call.
  ~ClaimCalls();

  // Prepares `claims` (a UID named twice once), each on a reader thread by
  // ClaimDeadline(caller->deadline()). Calls `done` once, on a reader
  // thread (or this one, when no claim could be queued), with a result for
  // every UID. A claim whose caller has gone before it starts is not
  // prepared: its result says so. Never blocks.
  void Prepare(const std::vector<ClaimRef>& claims,
               std::shared_ptr<CallBudget> caller, PrepareDone done);

  // Unprepares `claims` on the unprepare thread and calls `done` there,
  // with an error for every UID ("" for success); a call whose caller has
  // gone before it starts is dropped (every claim's error says so), and
  // one that finds max_waiting_unprepares waiting is answered at once with
  // errors. Never blocks.
  void Unprepare(const std::vector<ClaimRef>& claims,
                 std::shared_ptr<CallBudget> caller, UnprepareDone done);

 private:
  Preparer& preparer_;
  const ClaimCallsOptions options_;
  WorkPool unprepares_;  // destroyed after readers_: never waits on them
  WorkPool readers_;
};

}  // namespace gdp::dra

#endif  // GDP_DRA_CLAIM_CALLS_H_
