// Parsing JSON that came from outside (the API server's answers, files on
// the host) without letting its shape take the daemon's memory: nesting
// and the number of values are bounded while parsing, before the tree is
// built; and memory freed after a large document is given back.
#ifndef GDP_UTIL_BOUNDED_JSON_H_
#define GDP_UTIL_BOUNDED_JSON_H_

#include <cstddef>
#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gdp {

struct JsonLimits {
  // Arrays and objects inside one another, the outermost counting 1.
  // Kubernetes objects nest about 10 deep (opaque claim parameters a few
  // more); a million '[' in 1 MB cost ~60 MB as a tree, so text of a few
  // MiB could otherwise take hundreds of MiB.
  size_t max_depth = 100;
  // Values of any kind, members and elements included. A tree costs 16 to
  // ~100 bytes per value (an empty object: "{}," is 30 times smaller as
  // text), so this bounds the tree at ~50 MiB whatever the text's size.
  // Our largest legitimate document, a LIST of a node's ResourceSlices (a
  // few slices of at most 128 devices of ~100 values each), has some 10^4
  // to 10^5.
  size_t max_values = 1 << 19;
};

// Parses `text` (strict JSON, one value) into a tree, stopping at the first
// array or object nested deeper than max_depth or the first value past
// max_values, before building it.
// Result on failure: ResourceExhausted "JSON nested deeper than N levels" or
// "JSON with more than N values"; InvalidArgument "not valid JSON: <the
// parser's message>" (which gives the byte offset, not the text).
absl::StatusOr<nlohmann::json> ParseBoundedJson(absl::string_view text,
                                                const JsonLimits& limits = {});

// The threshold above which parsed text counts as large for
// ScopedMemoryRelease.
inline constexpr size_t kLargeParseBytes = 1 << 20;

// Gives memory back to the system (malloc_trim) when the scope ends if
// ParseBoundedJson parsed kLargeParseBytes or more on this thread during
// it. Declare it before the tree it should outlive: glibc keeps the freed
// small blocks of a large tree (tens of MiB) in its heap otherwise, and a
// container's memory limit counts them.
class ScopedMemoryRelease {
 public:
  ScopedMemoryRelease();
  ~ScopedMemoryRelease();
  ScopedMemoryRelease(const ScopedMemoryRelease&) = delete;
  ScopedMemoryRelease& operator=(const ScopedMemoryRelease&) = delete;

 private:
  size_t start_;
};

}  // namespace gdp

#endif  // GDP_UTIL_BOUNDED_JSON_H_
