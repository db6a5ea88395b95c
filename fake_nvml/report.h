// Diagnostics of the fake library: one line on stderr per problem.
#ifndef GDP_FAKE_NVML_REPORT_H_
#define GDP_FAKE_NVML_REPORT_H_

#include "absl/strings/string_view.h"

namespace gdp::fake_nvml {

// Writes "fake NVML: <message>\n" to stderr in a single write, so lines from
// several threads never interleave.
void Report(absl::string_view message);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_REPORT_H_
