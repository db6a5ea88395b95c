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

// Free text (an error message that may hold values from outside, the
// API server's words) made safe for a log line and a protobuf string: valid
// UTF-8 and printable ASCII kept as they are, any other byte written \xNN,
// and cut after `max` bytes of output (never inside a character or an
// escape) with the count of the rest: "reading the claim: ... (+5000000
// bytes)".
inline std::string CutText(absl::string_view text, size_t max) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    // The length of a valid UTF-8 sequence starting at i; 0: not one.
    size_t n = 0;
    if (c >= 0x20 && c < 0x7f) {
      n = 1;
    } else if (c >= 0xc2 && c <= 0xf4) {
      const size_t want = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
      n = want;
      for (size_t k = 1; k < want; ++k) {
        if (i + k >= text.size() ||
            (static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) {
          n = 0;
          break;
        }
      }
      // Overlong forms and surrogates (E0 80..9F, ED A0..BF, F0 80..8F,
      // F4 90..) are not valid UTF-8 either.
      if (n > 0) {
        const unsigned char d = static_cast<unsigned char>(text[i + 1]);
        if ((c == 0xe0 && d < 0xa0) || (c == 0xed && d >= 0xa0) ||
            (c == 0xf0 && d < 0x90) || (c == 0xf4 && d >= 0x90)) {
          n = 0;
        }
      }
    }
    const size_t width = n > 0 ? n : 4;
    if (out.size() + width > max) break;
    if (n > 0) {
      out.append(text.data() + i, n);
      i += n;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
      ++i;
    }
  }
  if (i < text.size()) {
    absl::StrAppend(&out, "... (+", text.size() - i, " bytes)");
  }
  return out;
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
