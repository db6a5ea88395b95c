// libFuzzer target: the DRA checkpoint (dra/checkpoint.h), which a
// restarted plugin reads from the host. The input's checksum is made right
// first when it is a JSON object, so that mutations reach the fields behind
// it; any bytes must give a checkpoint or an error naming the field, never
// a crash, and a checkpoint read must serialize and parse to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "dra/checkpoint.h"

namespace {

// The checkpoint format's checksum: FNV-1a (64 bits) over the compact JSON
// of everything but "checksum" (see dra/checkpoint.h).
std::string Stamped(const uint8_t* data, size_t size) {
  nlohmann::json body = nlohmann::json::parse(data, data + size, nullptr,
                                              /*allow_exceptions=*/false);
  if (!body.is_object()) return std::string(data, data + size);
  body.erase("checksum");
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : body.dump()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  body["checksum"] = absl::StrFormat("fnv1a64:%016x", h);
  return body.dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (const std::string& text :
       {std::string(data, data + size), Stamped(data, size)}) {
    absl::StatusOr<gdp::dra::Checkpoint> c =
        gdp::dra::ParseCheckpoint(text, "checkpoint.json");
    if (!c.ok()) continue;
    absl::StatusOr<gdp::dra::Checkpoint> again = gdp::dra::ParseCheckpoint(
        gdp::dra::SerializeCheckpoint(*c), "checkpoint.json");
    if (!again.ok() || !(*again == *c)) std::abort();
  }
  return 0;
}
