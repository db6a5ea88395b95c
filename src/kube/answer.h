// What one answer of the API server may make the client hold, and how its
// body is read and decoded within that.
#ifndef GDP_KUBE_ANSWER_H_
#define GDP_KUBE_ANSWER_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace httplib {
struct Request;
}  // namespace httplib

namespace gdp::kube {

// One object (GET, and the object a POST, PUT or DELETE answers): etcd
// keeps objects under 1.5 MiB (as protobuf, so their JSON, with field names
// spelled out, can be about twice that) and the API server takes request
// bodies of at most 3 MiB. Parsed, 4 MiB of JSON is at most ~50 MiB (see
// JsonLimits); a real claim or slice is a few KiB to a few hundred.
inline constexpr size_t kMaxObjectBytes = 4 << 20;
// A LIST, of this node's ResourceSlices of our driver only (a field
// selector): a few slices of at most 128 devices (~300 KiB each as we
// write them), or a few more while another writer of the same pool is
// around. 16 MiB is over ten times that; the values bound still holds the
// tree under ~50 MiB.
inline constexpr size_t kMaxListBytes = 16 << 20;
// One line of a watch: an object and its envelope.
inline constexpr size_t kMaxWatchEventBytes = kMaxObjectBytes + 4096;

// Decodes an answer's body as JSON with ParseBoundedJson's limits (depth
// 100, 2^19 values).
// Result on failure: ResourceExhausted "JSON nested deeper than ..." or
// "JSON with more than ... values"; InvalidArgument "not valid JSON: ...".
absl::StatusOr<nlohmann::json> DecodeAnswer(absl::string_view body);

namespace internal {

// Collects an answer's status and body into itself, at most `max_bytes` of
// body: an answer that announces (Content-Length) or sends more ends the
// exchange at once (httplib's Canceled) with too_large() set. Attach() it
// to a request before sending; it must outlive the exchange.
class BoundedBody {
 public:
  explicit BoundedBody(size_t max_bytes) : max_bytes_(max_bytes) {}
  void Attach(httplib::Request& req);

  bool too_large() const { return too_large_; }
  int status() const { return status_; }  // 0 until the head came
  std::string& body() { return body_; }

 private:
  const size_t max_bytes_;
  bool too_large_ = false;
  int status_ = 0;
  std::string body_;
};

}  // namespace internal
}  // namespace gdp::kube

#endif  // GDP_KUBE_ANSWER_H_
