#include "metrics/exposition.h"

#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace gdp::metrics {
namespace {

const char* TypeName(Type t) {
  switch (t) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// {a="x",b="y"} (with `extra` last, e.g. le="0.1"), or "" when empty.
std::string Labels(const std::vector<std::string>& names,
                   const std::vector<std::string>& values,
                   const std::string& extra = "") {
  std::string out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    absl::StrAppend(&out, out.empty() ? "" : ",", names[i], "=\"",
                    EscapeLabelValue(values[i]), "\"");
  }
  if (!extra.empty()) absl::StrAppend(&out, out.empty() ? "" : ",", extra);
  return out.empty() ? out : absl::StrCat("{", out, "}");
}

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[400];
  // Plain decimals where they stay short (bucket bounds read as "0.0005"),
  // else the shortest form.
  double a = std::fabs(v);
  auto [end, ec] =
      a == 0 || (a >= 1e-6 && a < 1e15)
          ? std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed)
          : std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, end);
}

std::string EscapeLabelValue(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string EscapeHelp(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderText(const std::vector<FamilySnapshot>& families) {
  std::string out;
  for (const FamilySnapshot& f : families) {
    absl::StrAppend(&out, "# HELP ", f.name, " ", EscapeHelp(f.help), "\n",
                    "# TYPE ", f.name, " ", TypeName(f.type), "\n");
    for (const Sample& s : f.samples) {
      if (f.type != Type::kHistogram) {
        absl::StrAppend(&out, f.name, Labels(f.label_names, s.label_values),
                        " ", FormatValue(s.value), "\n");
        continue;
      }
      for (size_t i = 0; i < s.buckets.size(); ++i) {
        std::string le = i < f.bounds.size() ? FormatValue(f.bounds[i])
                                             : std::string("+Inf");
        absl::StrAppend(
            &out, f.name, "_bucket",
            Labels(f.label_names, s.label_values, "le=\"" + le + "\""), " ",
            s.buckets[i], "\n");
      }
      std::string labels = Labels(f.label_names, s.label_values);
      absl::StrAppend(&out, f.name, "_sum", labels, " ", FormatValue(s.sum),
                      "\n", f.name, "_count", labels, " ", s.count, "\n");
    }
  }
  return out;
}

}  // namespace gdp::metrics
