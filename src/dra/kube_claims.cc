#include "dra/kube_claims.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "dra/claim_json.h"

namespace gdp::dra {

KubeClaimReader::KubeClaimReader(kube::Client& api, std::string driver_name)
    : api_(api), driver_name_(std::move(driver_name)) {}

namespace {

// Namespaces and claim names are DNS names: nothing that could change the
// request path.
bool IsDnsName(const std::string& s) {
  return !s.empty() && s.size() <= 253 &&
         s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") ==
             std::string::npos;
}

}  // namespace

absl::StatusOr<AllocatedClaim> KubeClaimReader::Read(const ClaimRef& ref) {
  if (!IsDnsName(ref.ns) || !IsDnsName(ref.name)) {
    return absl::InvalidArgumentError(
        "the claim's namespace and name must be DNS names (lower-case "
        "letters, digits, '-' and '.')");
  }
  absl::StatusOr<nlohmann::json> object =
      api_.Get(absl::StrCat("/apis/resource.k8s.io/v1/namespaces/", ref.ns,
                            "/resourceclaims/", ref.name));
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
