// libFuzzer target: a ResourceSlice as the API server sends it (JSON text),
// read as the DRA publisher reads the slices it compares with
// (dra/slice_json.h). Any object must give a slice or an error, never a
// crash.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "dra/slice_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json object = nlohmann::json::parse(
      data, data + size, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return 0;
  (void)gdp::dra::ParseSlice(object);
  return 0;
}
