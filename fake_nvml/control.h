// Applying fault-injection commands (control_command.h) to the current
// Session.
#ifndef GDP_FAKE_NVML_CONTROL_H_
#define GDP_FAKE_NVML_CONTROL_H_

#include "absl/strings/string_view.h"
#include "fake_nvml/state_mutex.h"

namespace gdp::fake_nvml {

// Parses and applies line `line_number` (1-based) of the control file.
// Malformed lines and GPU indexes outside the machine are reported on
// stderr as "fake NVML: control line N: ..." and ignored; so is everything
// while the library is not initialized. Takes state_mutex.
void ApplyControlLine(int line_number, absl::string_view line)
    ABSL_LOCKS_EXCLUDED(state_mutex);

// A line that was in the control file before this init (its history):
// applies only what it changed of a GPU's state (ChangesGpuState), which a
// real GPU keeps across NVML clients, without queueing events. Lines that
// are malformed, name no GPU of this machine, or are events and faults of
// an earlier init generation, are skipped silently. Takes state_mutex.
void ReplayControlLine(int line_number, absl::string_view line)
    ABSL_LOCKS_EXCLUDED(state_mutex);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_CONTROL_H_
