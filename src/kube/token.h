// Internal to gdp_kube: the bearer token of a ClientConfig.
#ifndef GDP_KUBE_TOKEN_H_
#define GDP_KUBE_TOKEN_H_

#include <sys/types.h>

#include <ctime>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace gdp::kube::internal {

// A static token, or a token file (a projected service-account token that
// the kubelet rotates) re-read when it changes. Never logs the token.
// Thread-safe.
class TokenSource {
 public:
  // `file` wins over `static_token` when both are set; neither: no token.
  TokenSource(std::string file, std::string static_token);

  // The token to send now ("" for none). With a file, stats it (following
  // symlinks) and re-reads it when its device, inode, size or mtime differ
  // from the last read; surrounding whitespace is dropped. When the file
  // cannot be read or is empty, the last good token stays in use (and a
  // warning is logged).
  // Result on failure: FailedPrecondition naming the file when no good token
  // was ever read from it.
  absl::StatusOr<std::string> Current();

  // After the server answered 401 to `sent`: re-reads the file whatever its
  // stat says. True when the token is now a different one, worth one retry;
  // always false for a static token.
  bool RefreshAfterUnauthorized(const std::string& sent);

 private:
  struct Stamp {
    dev_t dev;
    ino_t ino;
    off_t size;
    time_t mtime_sec;
    long mtime_nsec;
    bool operator==(const Stamp&) const = default;
  };

  // The file's stamp now; nullopt when it cannot be stat'ed.
  std::optional<Stamp> StatFile() const;

  // Reads the file into token_ (keeping the old one on failure).
  absl::Status ReadLocked(std::optional<Stamp> stamp)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string file_;
  const std::string static_token_;
  absl::Mutex mu_;
  std::string token_ ABSL_GUARDED_BY(mu_);
  bool have_token_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<Stamp> stamp_ ABSL_GUARDED_BY(mu_);
  bool warned_ ABSL_GUARDED_BY(mu_) = false;  // since the last good read
};

}  // namespace gdp::kube::internal

#endif  // GDP_KUBE_TOKEN_H_
