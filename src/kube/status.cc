#include "kube/status.h"

#include "absl/strings/str_cat.h"
#include "util/bounded_json.h"
#include "util/quote.h"

namespace gdp::kube {
namespace {

// The Status object's field `key` as a string ("" when absent or not one).
std::string StringField(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

}  // namespace

absl::StatusCode CodeForHttpStatus(int http_status, absl::string_view reason) {
  if (http_status >= 200 && http_status < 300) return absl::StatusCode::kOk;
  switch (http_status) {
    case 400:
    case 413:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 405:
      return absl::StatusCode::kUnimplemented;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kOutOfRange;
    case 412:
      return absl::StatusCode::kFailedPrecondition;
    case 429:
      return absl::StatusCode::kUnavailable;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      break;
  }
  if (http_status >= 500 && http_status < 600) {
    return absl::StatusCode::kUnavailable;
  }
  if (http_status >= 400 && http_status < 500) {
    return absl::StatusCode::kFailedPrecondition;
  }
  return absl::StatusCode::kUnknown;
}

bool IsRetryableHttpStatus(int http_status) {
  return http_status == 429 || (http_status >= 500 && http_status < 600);
}

absl::Status ErrorFromResponse(absl::string_view method, absl::string_view path,
                               int http_status, absl::string_view body) {
  // Parsed within the bounds of any answer; a body that is not JSON (or
  // too deep for it) is quoted as text.
  absl::StatusOr<nlohmann::json> parsed = ParseBoundedJson(body);
  const nlohmann::json object =
      parsed.ok() ? *std::move(parsed) : nlohmann::json();
  std::string reason;
  std::string detail;
  if (StringField(object, "kind") == "Status") {
    reason = StringField(object, "reason");
    detail = StringField(object, "message");
  } else {
    detail = std::string(body);
  }
  std::string message = absl::StrCat(method, " ", path, ": HTTP ", http_status);
  if (!reason.empty()) absl::StrAppend(&message, " ", CutText(reason, 64));
  if (!detail.empty()) absl::StrAppend(&message, ": ", CutText(detail, 256));
  absl::StatusCode code = CodeForHttpStatus(http_status, reason);
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kUnknown;
  return absl::Status(code, message);
}

absl::Status ErrorFromStatusObject(absl::string_view what,
                                   const nlohmann::json& status) {
  int http_status = 0;
  if (status.is_object()) {
    auto it = status.find("code");
    if (it != status.end() && it->is_number_integer()) {
      http_status = it->get<int>();
    }
  }
  std::string reason = StringField(status, "reason");
  std::string message = absl::StrCat(what, ":");
  if (http_status != 0) absl::StrAppend(&message, " HTTP ", http_status);
  if (!reason.empty()) absl::StrAppend(&message, " ", CutText(reason, 64));
  std::string detail = StringField(status, "message");
  if (detail.empty() && !status.is_object()) {
    detail =
        status.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  if (!detail.empty()) absl::StrAppend(&message, ": ", CutText(detail, 256));
  absl::StatusCode code = http_status == 0
                              ? absl::StatusCode::kUnknown
                              : CodeForHttpStatus(http_status, reason);
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kUnknown;
  return absl::Status(code, message);
}

std::string Truncate(absl::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  return absl::StrCat(s.substr(0, max), "...");
}

}  // namespace gdp::kube
