#include "dra/quantity.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gdp::dra {

std::string CanonicalQuantity(uint64_t value) {
  if (value < 1024) {
    if (value != 0 && value % 1000 == 0) {
      return absl::StrCat(value / 1000, "k");
    }
    return absl::StrCat(value);
  }
  static constexpr const char* kSuffixes[] = {"Ki", "Mi", "Gi",
                                              "Ti", "Pi", "Ei"};
  int power = -1;
  uint64_t mantissa = value;
  while (power + 1 < 6 && mantissa % 1024 == 0) {
    mantissa /= 1024;
    ++power;
  }
  if (power < 0) return absl::StrCat(value);
  return absl::StrCat(mantissa, kSuffixes[power]);
}

std::optional<uint64_t> ParseWholeQuantity(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && absl::ascii_isdigit(text[digits])) ++digits;
  if (digits == 0 || digits > 20) return std::nullopt;
  uint64_t number = 0;
  if (!absl::SimpleAtoi(text.substr(0, digits), &number)) return std::nullopt;
  const std::string suffix = text.substr(digits);
  struct Unit {
    const char* suffix;
    uint64_t base;
    int times;
  };
  static constexpr Unit kUnits[] = {
      {"", 1, 0},      {"Ki", 1024, 1}, {"Mi", 1024, 2}, {"Gi", 1024, 3},
      {"Ti", 1024, 4}, {"Pi", 1024, 5}, {"Ei", 1024, 6}, {"k", 1000, 1},
      {"M", 1000, 2},  {"G", 1000, 3},  {"T", 1000, 4},  {"P", 1000, 5},
      {"E", 1000, 6},
  };
  uint64_t base = 0;
  int times = 0;
  bool known = false;
  for (const Unit& u : kUnits) {
    if (suffix == u.suffix) {
      base = u.base;
      times = u.times;
      known = true;
    }
  }
  if (!known && suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    int exponent = 0;
    if (!absl::SimpleAtoi(suffix.substr(1), &exponent) || exponent < 0 ||
        exponent > 19) {
      return std::nullopt;
    }
    base = 10;
    times = exponent;
    known = true;
  }
  if (!known) return std::nullopt;
  for (int i = 0; i < times; ++i) {
    if (number > UINT64_MAX / base) return std::nullopt;
    number *= base;
  }
  return number;
}

}  // namespace gdp::dra
