// Reading the small files a client config names (CA, certificates, tokens).
#ifndef GDP_KUBE_FILES_H_
#define GDP_KUBE_FILES_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace gdp::kube {

// The whole content of the regular file `path` (following symlinks: the
// kubelet's projected volumes are symlinks), at most `max_bytes`, as
// ReadRegularFile reads it: a FIFO or device in its place is refused
// without blocking, a larger file unread. Thread-safe.
// Result on failure: the errno's status (NotFound, PermissionDenied, ...),
// FailedPrecondition for what is not a regular file or ResourceExhausted
// for a file larger than `max_bytes`; the message names the path.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          size_t max_bytes = 1 << 20);

}  // namespace gdp::kube

#endif  // GDP_KUBE_FILES_H_
