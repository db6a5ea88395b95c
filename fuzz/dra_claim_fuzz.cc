// libFuzzer target: a ResourceClaim as the API server would send it (JSON
// text), parsed as the DRA plugin parses it before preparing (dra/
// claim_json.h), NVIDIA's opaque parameters included.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "dra/claim_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json claim = nlohmann::json::parse(
      data, data + size, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (claim.is_discarded()) return 0;
  (void)gdp::dra::ParseClaim(claim, "gpu.nvidia.com");
  return 0;
}
