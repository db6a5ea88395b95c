// Writing the CDI spec file so that a CDI loader (containerd, CRI-O, podman)
// never reads a partial one, and not touching it when nothing changed.
#ifndef GDP_CDI_WRITE_SPEC_H_
#define GDP_CDI_WRITE_SPEC_H_

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"

namespace gdp::cdi {

// Writes `spec` (2-space indented JSON and a newline) to
// `dir`/SpecFileName(), mode 0644, replacing it atomically: the content goes
// to a temporary file in `dir` named ".<spec file name>.XXXXXX" (a name CDI
// loaders skip: they read only *.json and *.yaml), is fsynced, then renamed
// over the target, and `dir` is fsynced. Creates `dir` (and parents, 0755
// whatever the umask) if missing. When the file already holds exactly this
// content with mode 0644 nothing is written, so CDI caches watching `dir` are
// not woken. Thread-safe; concurrent calls leave one complete spec (the last
// rename). Result on failure: InvalidArgument for an empty `dir` or a string in
// `spec` that is not UTF-8; else the errno's status (e.g. PermissionDenied,
// FailedPrecondition for a `dir` that is a file, Internal otherwise), the
// message naming the path and the errno text; no temporary file is left.
absl::Status WriteSpec(const std::string& dir, const nlohmann::json& spec);

// The same, to `dir`/`file_name` (a CDI loader reads *.json and *.yaml).
// Result on failure also: InvalidArgument for a `file_name` that is not one
// path component ('/', NUL, "." or ".."; nothing is touched).
absl::Status WriteSpec(const std::string& dir, const std::string& file_name,
                       const nlohmann::json& spec);

// Removes `dir`/SpecFileName(); a missing file is not an error.
// Result on failure: InvalidArgument for an empty `dir` or a string in
// `spec` that is not UTF-8; else the errno's status, the message naming the
// path.
absl::Status RemoveSpec(const std::string& dir);

// Removes `dir`/`file_name`; a missing file is not an error.
// Result on failure: InvalidArgument for a `file_name` that is not one path
// component ('/', NUL, "." or ".."; nothing is removed); the errno's status.
absl::Status RemoveSpec(const std::string& dir, const std::string& file_name);

}  // namespace gdp::cdi

#endif  // GDP_CDI_WRITE_SPEC_H_
