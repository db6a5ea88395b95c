// Prometheus text exposition format, version 0.0.4.
#ifndef GDP_METRICS_EXPOSITION_H_
#define GDP_METRICS_EXPOSITION_H_

#include <string>
#include <vector>

#include "metrics/registry.h"

namespace gdp::metrics {

// The Content-Type of RenderText's output.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4";

// `families` as text: per family "# HELP" and "# TYPE" lines, then one line
// per sample; a histogram gives <name>_bucket{...,le="<bound>"} lines
// (cumulative, ending with le="+Inf"), <name>_sum and <name>_count. Label
// values escape \ " and newline, HELP text \ and newline. Values are the
// shortest text that reads back as the same double (+Inf, -Inf, NaN).
std::string RenderText(const std::vector<FamilySnapshot>& families);

// The pieces, exposed for tests.
std::string FormatValue(double v);
std::string EscapeLabelValue(const std::string& s);
std::string EscapeHelp(const std::string& s);

}  // namespace gdp::metrics

#endif  // GDP_METRICS_EXPOSITION_H_
