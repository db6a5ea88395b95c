// Strict, typed access to the maps of a machine YAML file. Every problem is
// raised as a FieldError carrying the position of the offending node and the
// dotted path of the field (e.g. "gpus[2].nvlinks[5].peer_gpu"), so the
// loader can report "file:line: field: problem".
#ifndef GDP_FAKE_NVML_YAML_READER_H_
#define GDP_FAKE_NVML_YAML_READER_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace gdp::fake_nvml {

// A problem with one field of a machine file. Thrown by YamlMap and the
// Parse* helpers; caught at the loader's boundary and never let out of it.
class FieldError : public std::runtime_error {
 public:
  // `line` is 1-based; `field` the dotted path of the field.
  FieldError(int line, std::string field, const std::string& message);

  int line() const { return line_; }
  const std::string& field() const { return field_; }

 private:
  int line_;
  std::string field_;
};

// The 1-based line of a node, for messages.
int LineOf(const YAML::Node& node);

// Scalar conversions. Each throws FieldError naming `field` when `node` is
// not a scalar of the expected form. Integers are decimal or 0x-prefixed
// hexadecimal; booleans are true/false.
std::string ParseString(const YAML::Node& node, const std::string& field);
uint64_t ParseUint(const YAML::Node& node, const std::string& field,
                   uint64_t max);
int64_t ParseInt(const YAML::Node& node, const std::string& field, int64_t min,
                 int64_t max);
bool ParseBool(const YAML::Node& node, const std::string& field);

// Returns the elements of a sequence node; throws FieldError otherwise.
std::vector<YAML::Node> ParseSequence(const YAML::Node& node,
                                      const std::string& field);

// A YAML mapping read with a fixed set of keys. Construction throws if the
// node is not a mapping, has a non-scalar key or repeats a key. Each getter
// records the key as known; Finish() then throws for any key never asked
// for, so typos in a machine file are errors rather than silently ignored.
class YamlMap {
 public:
  // `path` is the dotted path of the map itself ("" for the document root).
  YamlMap(const YAML::Node& node, std::string path);

  // The dotted path of `key` inside this map.
  std::string FieldPath(absl::string_view key) const;

  // The value of `key`, or nullopt when absent (or null).
  std::optional<YAML::Node> Optional(absl::string_view key);

  // The value of `key`; throws "missing required field" when absent.
  YAML::Node Required(absl::string_view key);

  // Throws for the first key no getter asked for.
  void Finish() const;

  // The position of the map itself.
  int line() const { return LineOf(node_); }

 private:
  YAML::Node node_;
  std::string path_;
  std::vector<std::string> known_;
};

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_YAML_READER_H_
