// libFuzzer target: a ResourceClaim as the API server would send it (JSON
// text), decoded and parsed as the DRA plugin does before preparing: the
// kube client's bounded decode (kube/answer.h: depth and value bounds),
// then dra/claim_json.h, NVIDIA's opaque parameters included. A claim read
// keeps the API's limits (at most 32 results, names of bounded length);
// a refusal is a short message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "absl/strings/string_view.h"
#include "dra/claim_json.h"
#include "kube/answer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<nlohmann::json> claim = gdp::kube::DecodeAnswer(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!claim.ok()) return 0;
  absl::StatusOr<gdp::dra::AllocatedClaim> parsed =
      gdp::dra::ParseClaim(*claim, "gpu.nvidia.com");
  if (!parsed.ok()) {
    if (parsed.status().message().size() > 1024) std::abort();
    return 0;
  }
  if (parsed->results.size() > 32 || parsed->ref.uid.size() > 128 ||
      parsed->ref.ns.size() > 63 || parsed->ref.name.size() > 253) {
    std::abort();
  }
  for (const gdp::dra::AllocatedDevice& r : parsed->results) {
    if (r.device.size() > 63 || r.pool.size() > 253 || r.driver.size() > 63 ||
        r.request.size() > 127) {
      std::abort();
    }
  }
  return 0;
}
