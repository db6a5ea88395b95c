// libFuzzer target: an answer of the Kubernetes API server as the client
// takes it in (kube/answer.h): the body read in chunks within a size bound,
// decoded within the depth and value bounds, and an error answer made into
// a message. The first two bytes set the size bound (so that small inputs
// reach it) and the chunking; the rest is the body. Every bound must hold:
// a body kept only while under its bound, a decoded tree no deeper and no
// larger than JsonLimits, messages short and valid UTF-8.
#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "kube/answer.h"
#include "kube/status.h"
#include "util/bounded_json.h"

namespace {

// Whether `s` is valid UTF-8 (what protobuf strings and log lines need).
bool IsUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80         ? 1
               : (c >> 5) == 6  ? 2
               : (c >> 4) == 14 ? 3
               : (c >> 3) == 30 ? 4
                                : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

// The depth and number of values of `root`, without recursion.
std::pair<size_t, size_t> Shape(const nlohmann::json& root) {
  size_t depth = 0, values = 0;
  std::vector<std::pair<const nlohmann::json*, size_t>> stack = {{&root, 0}};
  while (!stack.empty()) {
    auto [j, d] = stack.back();
    stack.pop_back();
    ++values;
    if (!j->is_structured()) continue;
    depth = std::max(depth, d + 1);
    for (const nlohmann::json& child : *j) stack.push_back({&child, d + 1});
  }
  return {depth, values};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t max_bytes = data[0] * 16;
  const size_t chunk = 1 + data[1] % 64;
  const absl::string_view body(reinterpret_cast<const char*>(data) + 2,
                               size - 2);

  // Read in chunks: kept while under the bound, refused past it.
  gdp::kube::internal::BoundedBody bounded(max_bytes);
  httplib::Request req;
  bounded.Attach(req);
  bool refused = false;
  for (size_t at = 0; at < body.size() && !refused; at += chunk) {
    const size_t n = std::min(chunk, body.size() - at);
    refused = !req.content_receiver(body.data() + at, n, at, body.size());
  }
  if (refused != (body.size() > max_bytes) || bounded.too_large() != refused ||
      bounded.body().size() > max_bytes ||
      (!refused && bounded.body() != body)) {
    std::abort();
  }

  // Decoded within the bounds, or refused with a short message.
  gdp::ScopedMemoryRelease release;
  absl::StatusOr<nlohmann::json> decoded = gdp::kube::DecodeAnswer(body);
  if (decoded.ok()) {
    const gdp::JsonLimits limits;
    auto [depth, values] = Shape(*decoded);
    if (depth > limits.max_depth || values > limits.max_values) std::abort();
  } else if (decoded.status().message().size() > 512 ||
             !IsUtf8(decoded.status().message())) {
    std::abort();
  }

  // An error answer's message: short and valid UTF-8 whatever the body.
  const absl::Status error =
      gdp::kube::ErrorFromResponse("GET", "/p", 500, body);
  if (error.ok() || error.message().size() > 1024 || !IsUtf8(error.message())) {
    std::abort();
  }
  return 0;
}
