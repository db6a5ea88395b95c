// Claims read from the API server: the ClaimReader of the running daemon,
// joining the Kubernetes API client (which knows no GPUs) and the claim's
// JSON edge.
#ifndef GDP_DRA_KUBE_CLAIMS_H_
#define GDP_DRA_KUBE_CLAIMS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "dra/preparer.h"
#include "kube/client.h"

namespace gdp::dra {

// Reads claims over a few API clients of its own, so that claims are read
// in parallel (a kube::Client serialises its calls) and one caller's
// departure cancels only its own reads. Thread-safe.
class KubeClaimReader final : public ClaimReader {
 public:
  // Makes a client; called for each of the `clients` at the first reads
  // that need them, and again for one whose read was cancelled (a
  // cancelled kube::Client stays cancelled).
  using ClientFactory =
      std::function<absl::StatusOr<std::unique_ptr<kube::Client>>()>;

  // At most `clients` reads run at once; more wait for a client until
  // their deadline.
  KubeClaimReader(ClientFactory factory, std::string driver_name,
                  size_t clients);
  // REQUIRES: no Read in flight (Cancel() ends them promptly).
  ~KubeClaimReader() override;

  // GET /apis/resource.k8s.io/v1/namespaces/<ns>/resourceclaims/<name>,
  // retried until `deadline`, read by ParseClaim; `caller`'s cancellation
  // ends it at once. Result on failure: the API error or ParseClaim's,
  // prefixed "reading the claim: ".
  absl::StatusOr<AllocatedClaim> Read(const ClaimRef& ref, absl::Time deadline,
                                      CallBudget& caller) override;

  // Ends every read in flight and every later one (Cancelled).
  // Irreversible.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A client free for one read, made if none is; null with the reason.
  absl::StatusOr<kube::Client*> Take(absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Gives `client` back (a cancelled one is dropped and made anew later).
  void Give(kube::Client* client) ABSL_LOCKS_EXCLUDED(mu_);

  const ClientFactory factory_;
  const std::string driver_name_;
  const size_t max_clients_;
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::unique_ptr<kube::Client>> clients_ ABSL_GUARDED_BY(mu_);
  std::vector<kube::Client*> free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp::dra

#endif  // GDP_DRA_KUBE_CLAIMS_H_
