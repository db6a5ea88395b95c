// libFuzzer target: the health state file (health/state_file.h), which a
// restarted plugin reads from the host. Any bytes must give a state or an
// error naming the place, never a crash; a state read back must serialize
// and parse to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/string_view.h"
#include "health/state_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gdp::HealthState> state =
      gdp::ParseHealthState(text, "health-state.json");
  if (!state.ok()) return 0;
  absl::StatusOr<gdp::HealthState> again = gdp::ParseHealthState(
      gdp::SerializeHealthState(*state), "health-state.json");
  if (!again.ok() || !(*again == *state)) std::abort();
  return 0;
}
