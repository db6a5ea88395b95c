// Reading a YAML file that people write, for the config file: one
// document, bounded in depth and value length before any node is built, and
// typed readers whose failures name the file, the line and the field
// ("c.yaml:3: flags.migStrategy: must be none, single or mixed, got 'x'").
// The schema itself (which fields, what they fill) is config_file.cc's.
#ifndef GDP_CONFIG_YAML_FIELDS_H_
#define GDP_CONFIG_YAML_FIELDS_H_

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "config/names.h"

namespace gdp {

struct YamlLimits {
  int max_depth = 32;              // nesting of mappings and lists
  size_t max_scalar_bytes = 4096;  // one value
};

// Parses `text` (named `path` in messages) as at most one YAML document.
// Result: the document (a null node for empty text); on failure
// InvalidArgument "<path>:<line>: ..." for invalid YAML, a second document
// (or text after the first, such as a trailing comma), or nesting or a value
// beyond `limits`. Never allocates much more than `text` takes.
absl::StatusOr<YAML::Node> LoadOneYamlDocument(absl::string_view text,
                                               const std::string& path,
                                               const YamlLimits& limits);

// A value in the file: its node, its path ("flags.migStrategy") and the
// line of its key (or of the list item).
struct YamlField {
  YAML::Node node;
  std::string path;
  int line;
};

// The 1-based line of `node`.
int LineOfNode(const YAML::Node& node);

// Whether `node` is a plain (unquoted) scalar.
bool IsPlain(const YAML::Node& node);

// Reads the fields of one document. Each reader returns false on the first
// problem and keeps it as status(); readers of a mapping stop there. Not
// thread-safe.
class YamlFieldReader {
 public:
  using Handler = std::function<bool(const YamlField&)>;
  using Handlers = std::vector<std::pair<absl::string_view, Handler>>;

  // `path` names the file in messages. `lines` (not owned, may be null)
  // receives the line of every field read, by its path.
  YamlFieldReader(std::string path,
                  std::map<std::string, int, std::less<>>* lines)
      : path_(std::move(path)), lines_(lines) {}

  // The first problem met; OK if none.
  const absl::Status& status() const { return status_; }

  // Records InvalidArgument "<file>:<line>: <path>: <message>".
  // Result: false, to be returned.
  bool Fail(int line, absl::string_view path, absl::string_view message);
  // Fails with "must be <expected>, got <what f is>".
  bool WrongType(const YamlField& f, absl::string_view expected);

  // `f` must be a mapping whose keys each have a handler, each once; records
  // the line of, and calls the handler of, every key whose value is not
  // null.
  bool Mapping(const YamlField& f, const Handlers& handlers);
  // `f` must be a list; calls `item` for each element, as "<path>[i]".
  bool List(const YamlField& f, const Handler& item);

  bool String(const YamlField& f, std::optional<std::string>* out);
  bool Bool(const YamlField& f, std::optional<bool>* out);
  bool Int(const YamlField& f, int* out);
  // "60s", "1h30m", "infinite", or a bare number of nanoseconds (as
  // NVIDIA's).
  bool Duration(const YamlField& f, std::optional<absl::Duration>* out);
  // One of the names config/names.h knows for E.
  template <typename E>
  bool Enum(const YamlField& f, std::optional<E>* out) {
    std::optional<std::string> text;
    if (!String(f, &text)) return false;
    *out = ParseName<E>(*text);
    if (!out->has_value()) {
      return Fail(
          f.line, f.path,
          absl::StrCat("must be ", NameChoices<E>(), ", got '", *text, "'"));
    }
    return true;
  }
  // A bool that must be false: the feature it enables is not ours.
  bool UnsupportedBool(const YamlField& f);

 private:
  void Record(const YamlField& f) {
    if (lines_ != nullptr) lines_->emplace(f.path, f.line);
  }

  const std::string path_;
  std::map<std::string, int, std::less<>>* const lines_;
  absl::Status status_;
};

}  // namespace gdp

#endif  // GDP_CONFIG_YAML_FIELDS_H_
