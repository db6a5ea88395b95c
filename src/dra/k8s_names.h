// The shapes Kubernetes gives names and UIDs (RFC 1123 labels and
// subdomains, UIDs), checked wherever one comes from outside: the
// kubelet's calls, the API server's claims. Pure.
#ifndef GDP_DRA_K8S_NAMES_H_
#define GDP_DRA_K8S_NAMES_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace gdp::dra {

// An RFC 1123 label: 1 to 63 lower-case letters, digits and '-', starting
// and ending with a letter or digit (namespaces, device names).
bool IsDnsLabel(absl::string_view s);

// An RFC 1123 subdomain of at most `max` characters: labels joined by '.'
// (object names: 253; driver names: 63).
bool IsDnsSubdomain(absl::string_view s, size_t max = 253);

// A Kubernetes UID as we accept one: 1 to 128 ASCII letters, digits and
// '-' (UUIDs are 36), so it is safe in a file name and a map key.
bool IsUid(absl::string_view s);

}  // namespace gdp::dra

#endif  // GDP_DRA_K8S_NAMES_H_
