// How the API server's answers map to absl::Status: the HTTP status code and
// the Kubernetes Status object ({"kind":"Status","code":409,
// "reason":"AlreadyExists","message":"..."}).
#ifndef GDP_KUBE_STATUS_H_
#define GDP_KUBE_STATUS_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gdp::kube {

// The code for an HTTP status and the Status object's reason:
// 400 InvalidArgument, 401 Unauthenticated, 403 PermissionDenied,
// 404 NotFound, 405 Unimplemented, 409 AlreadyExists when the reason is
// "AlreadyExists" else Aborted (a Conflict), 410 OutOfRange (Gone, Expired),
// 412 FailedPrecondition, 413 and 422 InvalidArgument, 429 Unavailable,
// 504 DeadlineExceeded, other 5xx Unavailable, other 4xx
// FailedPrecondition, anything else Unknown. 2xx is OK.
absl::StatusCode CodeForHttpStatus(int http_status,
                                   absl::string_view reason = "");

// Whether a unary call answered with `http_status` may be retried:
// 429 and 5xx.
bool IsRetryableHttpStatus(int http_status);

// The error for an unsuccessful answer to `method` `path`: the code from
// CodeForHttpStatus, the message
//   "<method> <path>: HTTP <status> <reason>: <server message>"
// with the Status object's message when `body` is one, else the first bytes
// of the body.
absl::Status ErrorFromResponse(absl::string_view method, absl::string_view path,
                               int http_status, absl::string_view body);

// The error a Status object stands for (as in a watch ERROR event):
// "<what>: <reason>: <message>" with the code from its "code" and "reason"
// (Unknown when it has no code).
absl::Status ErrorFromStatusObject(absl::string_view what,
                                   const nlohmann::json& status);

// `s` cut to at most `max` bytes, "..." appended when cut; for messages.
std::string Truncate(absl::string_view s, size_t max = 256);

}  // namespace gdp::kube

#endif  // GDP_KUBE_STATUS_H_
