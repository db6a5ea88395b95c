#include "kube/token.h"

#include <sys/stat.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "kube/files.h"
#include "util/logging.h"

namespace gdp::kube::internal {

TokenSource::TokenSource(std::string file, std::string static_token)
    : file_(std::move(file)), static_token_(std::move(static_token)) {}

std::optional<TokenSource::Stamp> TokenSource::StatFile() const {
  struct stat st;
  if (stat(file_.c_str(), &st) != 0) return std::nullopt;
  return Stamp{st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec,
               st.st_mtim.tv_nsec};
}

absl::Status TokenSource::ReadLocked(std::optional<Stamp> stamp) {
  absl::StatusOr<std::string> content = ReadSmallFile(file_, 64 << 10);
  absl::Status status;
  if (!content.ok()) {
    status = content.status();
  } else {
    std::string token(absl::StripAsciiWhitespace(*content));
    if (token.empty()) {
      status = absl::FailedPreconditionError(
          absl::StrCat("token file ", file_, " is empty"));
    } else {
      token_ = std::move(token);
      have_token_ = true;
      stamp_ = stamp;
      warned_ = false;
      return absl::OkStatus();
    }
  }
  // Try again on the next call rather than trusting this stamp.
  stamp_.reset();
  if (have_token_) {
    if (!warned_) {
      LOG_WARN("kube: keeping the previous bearer token: {}", status.message());
      warned_ = true;
    }
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("bearer token: ", status.message()));
}

absl::StatusOr<std::string> TokenSource::Current() {
  if (file_.empty()) return static_token_;
  absl::MutexLock lock(&mu_);
  std::optional<Stamp> stamp = StatFile();
  if (!have_token_ || !stamp.has_value() || stamp != stamp_) {
    absl::Status status = ReadLocked(stamp);
    if (!status.ok()) return status;
  }
  return token_;
}

bool TokenSource::RefreshAfterUnauthorized(const std::string& sent) {
  if (file_.empty()) return false;
  absl::MutexLock lock(&mu_);
  std::optional<Stamp> stamp = StatFile();
  if (!ReadLocked(stamp).ok()) return false;
  return token_ != sent;
}

}  // namespace gdp::kube::internal
