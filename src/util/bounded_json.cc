#include "util/bounded_json.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/quote.h"

namespace gdp {
namespace {

using nlohmann::json;

// Bytes parsed by ParseBoundedJson on this thread, ever.
thread_local size_t parsed_bytes = 0;

// nlohmann's DOM builder with the limits checked at each event; returning
// false stops the parse at once.
class BoundedSax {
 public:
  BoundedSax(json& root, const JsonLimits& limits)
      : dom_(root, /*allow_exceptions=*/false), limits_(limits) {}

  bool null() { return Value() && dom_.null(); }
  bool boolean(bool v) { return Value() && dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) {
    return Value() && dom_.number_integer(v);
  }
  bool number_unsigned(json::number_unsigned_t v) {
    return Value() && dom_.number_unsigned(v);
  }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    return Value() && dom_.number_float(v, s);
  }
  bool string(json::string_t& v) { return Value() && dom_.string(v); }
  bool binary(json::binary_t& v) { return Value() && dom_.binary(v); }
  bool start_object(std::size_t n) {
    return Value() && Enter() && dom_.start_object(n);
  }
  bool key(json::string_t& k) { return dom_.key(k); }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    return Value() && Enter() && dom_.start_array(n);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& e) {
    if (error_.ok()) {
      // The message quotes the last token read, which may be megabytes.
      error_ = absl::InvalidArgumentError(
          absl::StrCat("not valid JSON: ", CutText(e.what(), 200)));
    }
    return false;
  }

  const absl::Status& error() const { return error_; }

 private:
  bool Value() {
    if (++values_ <= limits_.max_values) return true;
    error_ = absl::ResourceExhaustedError(
        absl::StrCat("JSON with more than ", limits_.max_values, " values"));
    return false;
  }
  bool Enter() {
    if (++depth_ <= limits_.max_depth) return true;
    error_ = absl::ResourceExhaustedError(
        absl::StrCat("JSON nested deeper than ", limits_.max_depth, " levels"));
    return false;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const JsonLimits limits_;
  size_t depth_ = 0;
  size_t values_ = 0;
  absl::Status error_;
};

}  // namespace

absl::StatusOr<json> ParseBoundedJson(absl::string_view text,
                                      const JsonLimits& limits) {
  parsed_bytes += text.size();
  json root;
  BoundedSax sax(root, limits);
  const bool ok = json::sax_parse(text.begin(), text.end(), &sax);
  if (!ok || !sax.error().ok()) {
    if (!sax.error().ok()) return sax.error();
    return absl::InvalidArgumentError("not valid JSON");
  }
  return root;
}

ScopedMemoryRelease::ScopedMemoryRelease() : start_(parsed_bytes) {}

ScopedMemoryRelease::~ScopedMemoryRelease() {
  if (parsed_bytes - start_ < kLargeParseBytes) return;
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace gdp
