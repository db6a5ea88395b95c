// libFuzzer target: the DRA checkpoint (dra/checkpoint.h), which a
// restarted plugin reads from the host. The input's checksum is made right
// first when it is a JSON object, so that mutations reach the fields behind
// it; any bytes must give a checkpoint or an error naming the field, never
// a crash, and a checkpoint read must serialize and parse to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "dra/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (const std::string& text :
       {std::string(data, data + size),
        gdp::dra::RestampCheckpoint(
            std::string(reinterpret_cast<const char*>(data), size))}) {
    absl::StatusOr<gdp::dra::Checkpoint> c =
        gdp::dra::ParseCheckpoint(text, "checkpoint.json");
    if (!c.ok()) continue;
    absl::StatusOr<gdp::dra::Checkpoint> again = gdp::dra::ParseCheckpoint(
        gdp::dra::SerializeCheckpoint(*c), "checkpoint.json");
    if (!again.ok() || !(*again == *c)) std::abort();
  }
  return 0;
}
