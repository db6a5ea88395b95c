// Validation of extended resource names, as the kubelet's device manager
// applies it to RegisterRequest.resource_name.
#ifndef GDP_DPCTL_RESOURCE_NAME_H_
#define GDP_DPCTL_RESOURCE_NAME_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gdp::dpctl {

// Returns OK when `name` is an extended resource name the kubelet accepts
// from a device plugin: "<domain>/<name>" where
//   - <domain> is a DNS-1123 subdomain (lower-case alphanumerics, '-' and
//     '.', each label starting and ending alphanumeric) that does not end in
//     "kubernetes.io" (the kubelet rejects any name containing
//     "kubernetes.io/": kubernetes.io, *.kubernetes.io and e.g.
//     xkubernetes.io),
//   - <name> is 1..63 characters of [A-Za-z0-9-_.], starting and ending
//     alphanumeric,
//   - the whole name does not start with "requests." and "requests.<domain>"
//     still fits a subdomain (253 characters).
// Otherwise returns InvalidArgument whose message gives the reason.
// Thread-safe (pure function).
absl::Status ValidateExtendedResourceName(absl::string_view name);

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_RESOURCE_NAME_H_
