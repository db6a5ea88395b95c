// Values taken from a request or a file, made safe for a log line or an
// error message: quoted, escaped (a newline or an escape byte cannot forge
// or garble a line) and cut to a bound that says how much was cut (a
// 4 MiB device ID cannot make an 8 MB log line, or an error over gRPC's
// 8 KiB metadata limit).
#ifndef GDP_UTIL_QUOTE_H_
#define GDP_UTIL_QUOTE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gdp {

// 'value' with C escapes for anything not printable ASCII, cut to its first
// `max` bytes with the count of the rest: 'GPU-0123...' (+4194000 bytes).
inline std::string Quote(absl::string_view value, size_t max = 96) {
  if (value.size() <= max)
    return absl::StrCat("'", absl::CHexEscape(value), "'");
  return absl::StrCat("'", absl::CHexEscape(value.substr(0, max)), "...' (+",
                      value.size() - max, " bytes)");
}

// [a, b, c] of quoted values, at most `max_items` of them, then the count of
// the rest: ['0', '1', ... (+998 more)].
template <typename Strings>
std::string QuoteList(const Strings& values, size_t max_items = 16) {
  std::string out = "[";
  size_t n = 0;
  for (const auto& v : values) {
    if (n == max_items) {
      absl::StrAppend(&out, ", ... (+", values.size() - max_items, " more)");
      break;
    }
    absl::StrAppend(&out, n == 0 ? "" : ", ", Quote(v));
    ++n;
  }
  return out + "]";
}

}  // namespace gdp

#endif  // GDP_UTIL_QUOTE_H_
