#include "kube/answer.h"

#include <httplib.h>

#include "absl/strings/numbers.h"
#include "util/bounded_json.h"

namespace gdp::kube {

absl::StatusOr<nlohmann::json> DecodeAnswer(absl::string_view body) {
  return ParseBoundedJson(body);
}

namespace internal {

void BoundedBody::Attach(httplib::Request& req) {
  req.response_handler = [this](const httplib::Response& res) {
    status_ = res.status;
    uint64_t announced = 0;
    if (res.has_header("Content-Length") &&
        absl::SimpleAtoi(res.get_header_value("Content-Length"), &announced) &&
        announced > max_bytes_) {
      too_large_ = true;
      return false;
    }
    return true;
  };
  req.content_receiver = [this](const char* data, size_t size, uint64_t,
                                uint64_t) {
    if (size > max_bytes_ - body_.size()) {
      too_large_ = true;
      return false;
    }
    body_.append(data, size);
    return true;
  };
}

}  // namespace internal
}  // namespace gdp::kube
