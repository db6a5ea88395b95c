// Claims read from the API server: the ClaimReader of the running daemon,
// joining the Kubernetes API client (which knows no GPUs) and the claim's
// JSON edge.
#ifndef GDP_DRA_KUBE_CLAIMS_H_
#define GDP_DRA_KUBE_CLAIMS_H_

#include <string>

#include "dra/preparer.h"
#include "kube/client.h"

namespace gdp::dra {

// Thread-safe as kube::Client is.
class KubeClaimReader final : public ClaimReader {
 public:
  // `api` must outlive the reader.
  KubeClaimReader(kube::Client& api, std::string driver_name);

  // GET /apis/resource.k8s.io/v1/namespaces/<ns>/resourceclaims/<name>,
  // read by ParseClaim. Result on failure: the API error or ParseClaim's,
  // prefixed "reading the claim: ".
  absl::StatusOr<AllocatedClaim> Read(const ClaimRef& ref) override;

 private:
  kube::Client& api_;
  const std::string driver_name_;
};

}  // namespace gdp::dra

#endif  // GDP_DRA_KUBE_CLAIMS_H_
