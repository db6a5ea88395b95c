// A small state file that several processes share (the fake NVML in the
// daemon, a hook started by runc, the fake-nvml command): read whole and
// bounded, changed under an exclusive flock on "<path>.lock", replaced by
// rename so that readers never see half a file and need no lock. Used by
// the memory-limits file and the MIG state file.
#ifndef GDP_FAKE_NVML_SHARED_FILE_H_
#define GDP_FAKE_NVML_SHARED_FILE_H_

#include <cstddef>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace gdp::fake_nvml {

// `what` names the file in messages: "memory limits" gives "memory limits
// file <path>: ..." and "memory limits lock <path>.lock: ...".

// Reads the file at `path` into *text. *exists (may be null) says whether
// it was there; a missing file reads as empty and OK.
// Result on failure: InternalError naming `what` and `path` (open, read);
// DataLossError when the file is larger than `max_bytes`.
absl::Status ReadSharedFile(const std::string& what, const std::string& path,
                            size_t max_bytes, std::string* text,
                            bool* exists = nullptr);

// Replaces the file at `path` with `text`: written beside it
// ("<path>.tmp.<pid>") and renamed over it.
// Result on failure: InternalError naming `what` and the file; the
// temporary file is removed and `path` is unchanged.
absl::Status WriteSharedFile(const std::string& what, const std::string& path,
                             const std::string& text);

// Runs `change` holding an exclusive flock on "<path>.lock" (made if
// missing), and returns what it returns.
// Result on failure: InternalError naming `what` and the lock file when it
// cannot be opened or locked (`change` then does not run).
absl::Status WithSharedFileLock(const std::string& what,
                                const std::string& path,
                                absl::FunctionRef<absl::Status()> change);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_SHARED_FILE_H_
