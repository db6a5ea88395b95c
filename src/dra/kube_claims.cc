#include "dra/kube_claims.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dra/claim_json.h"
#include "dra/k8s_names.h"
#include "util/bounded_json.h"

namespace gdp::dra {

KubeClaimReader::KubeClaimReader(ClientFactory factory, std::string driver_name,
                                 size_t clients)
    : factory_(std::move(factory)),
      driver_name_(std::move(driver_name)),
      max_clients_(std::max<size_t>(clients, 1)) {}

KubeClaimReader::~KubeClaimReader() = default;

void KubeClaimReader::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  for (const std::unique_ptr<kube::Client>& c : clients_) c->Cancel();
}

absl::StatusOr<kube::Client*> KubeClaimReader::Take(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  const absl::Condition ready(
      +[](KubeClaimReader* r) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return r->cancelled_ || !r->free_.empty() ||
               r->clients_.size() < r->max_clients_;
      },
      this);
  if (!mu_.AwaitWithDeadline(ready, deadline)) {
    return absl::DeadlineExceededError(
        "the deadline passed while every API client was busy with other "
        "claims");
  }
  if (cancelled_) return absl::CancelledError("the driver is stopping");
  if (!free_.empty()) {
    kube::Client* c = free_.back();
    free_.pop_back();
    return c;
  }
  absl::StatusOr<std::unique_ptr<kube::Client>> made = factory_();
  if (!made.ok()) return made.status();
  clients_.push_back(*std::move(made));
  return clients_.back().get();
}

void KubeClaimReader::Give(kube::Client* client) {
  absl::MutexLock lock(&mu_);
  if (client->cancelled()) {
    // Cancelled for its caller (or all): made anew when next needed.
    std::erase_if(clients_, [client](const std::unique_ptr<kube::Client>& c) {
      return c.get() == client;
    });
    return;
  }
  free_.push_back(client);
}

absl::StatusOr<AllocatedClaim> KubeClaimReader::Read(const ClaimRef& ref,
                                                     absl::Time deadline,
                                                     CallBudget& caller) {
  // Nothing that could change the request path.
  if (!IsDnsLabel(ref.ns) || !IsDnsSubdomain(ref.name)) {
    return absl::InvalidArgumentError(
        "the claim's namespace must be a DNS label and its name a DNS "
        "subdomain (lower-case letters, digits, '-' and '.')");
  }
  absl::StatusOr<kube::Client*> api = Take(deadline);
  if (!api.ok()) {
    return absl::Status(
        api.status().code(),
        absl::StrCat("reading the claim: ", api.status().message()));
  }
  // Declared before the claim's tree: a large one's freed memory is given
  // back when Read returns.
  ScopedMemoryRelease release;
  absl::StatusOr<nlohmann::json> object;
  {
    ScopedOnCancel stop(caller, [c = *api] { c->Cancel(); });
    object = (*api)->Get(absl::StrCat("/apis/resource.k8s.io/v1/namespaces/",
                                      ref.ns, "/resourceclaims/", ref.name),
                         deadline);
  }
  Give(*api);
  if (!object.ok()) {
    return absl::Status(
        object.status().code(),
        absl::StrCat("reading the claim: ", object.status().message()));
  }
  absl::StatusOr<AllocatedClaim> claim = ParseClaim(*object, driver_name_);
  if (!claim.ok()) {
    return absl::Status(
        claim.status().code(),
        absl::StrCat("reading the claim: ", claim.status().message()));
  }
  return claim;
}

}  // namespace gdp::dra
