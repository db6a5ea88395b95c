#include "fake_nvml/yaml_reader.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gdp::fake_nvml {
namespace {

const std::string& Scalar(const YAML::Node& node, const std::string& field,
                          absl::string_view expected) {
  if (!node.IsScalar()) {
    throw FieldError(LineOf(node), field, absl::StrCat("must be ", expected));
  }
  return node.Scalar();
}

bool AllDigits(absl::string_view text, bool hex) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [hex](char c) {
    const auto u = static_cast<unsigned char>(c);
    return hex ? absl::ascii_isxdigit(u) : absl::ascii_isdigit(u);
  });
}

// Parses an unsigned decimal or 0x-hexadecimal literal.
bool ParseUnsigned(absl::string_view text, uint64_t* out) {
  if (absl::StartsWithIgnoreCase(text, "0x")) {
    text.remove_prefix(2);
    return AllDigits(text, true) && absl::SimpleHexAtoi(text, out);
  }
  return AllDigits(text, false) && absl::SimpleAtoi(text, out);
}

}  // namespace

FieldError::FieldError(int line, std::string field, const std::string& message)
    : std::runtime_error(message), line_(line), field_(std::move(field)) {}

int LineOf(const YAML::Node& node) {
  // Null nodes (an empty document) carry no position; report line 1.
  return std::max(1, node.Mark().line + 1);
}

std::string ParseString(const YAML::Node& node, const std::string& field) {
  return Scalar(node, field, "a string");
}

uint64_t ParseUint(const YAML::Node& node, const std::string& field,
                   uint64_t max) {
  const std::string& text = Scalar(node, field, "an integer");
  uint64_t value = 0;
  if (!ParseUnsigned(text, &value) || value > max) {
    throw FieldError(LineOf(node), field,
                     absl::StrCat("must be an integer from 0 to ", max,
                                  ", got \"", text, "\""));
  }
  return value;
}

int64_t ParseInt(const YAML::Node& node, const std::string& field, int64_t min,
                 int64_t max) {
  const std::string& text = Scalar(node, field, "an integer");
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < min || value > max ||
      !AllDigits(absl::StripPrefix(text, "-"), false)) {
    throw FieldError(LineOf(node), field,
                     absl::StrCat("must be an integer from ", min, " to ", max,
                                  ", got \"", text, "\""));
  }
  return value;
}

bool ParseBool(const YAML::Node& node, const std::string& field) {
  const std::string& text = Scalar(node, field, "true or false");
  if (text == "true") return true;
  if (text == "false") return false;
  throw FieldError(LineOf(node), field,
                   absl::StrCat("must be true or false, got \"", text, "\""));
}

std::vector<YAML::Node> ParseSequence(const YAML::Node& node,
                                      const std::string& field) {
  if (!node.IsSequence()) {
    throw FieldError(LineOf(node), field, "must be a list");
  }
  return std::vector<YAML::Node>(node.begin(), node.end());
}

YamlMap::YamlMap(const YAML::Node& node, std::string path)
    : node_(node), path_(std::move(path)) {
  if (!node_.IsMap()) {
    throw FieldError(LineOf(node_), path_.empty() ? "(document)" : path_,
                     "must be a mapping");
  }
  std::vector<std::string> seen;
  for (const auto& entry : node_) {
    if (!entry.first.IsScalar()) {
      throw FieldError(LineOf(entry.first), path_, "keys must be strings");
    }
    const std::string& key = entry.first.Scalar();
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      throw FieldError(LineOf(entry.first), FieldPath(key), "duplicate key");
    }
    seen.push_back(key);
  }
}

std::string YamlMap::FieldPath(absl::string_view key) const {
  return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", key);
}

std::optional<YAML::Node> YamlMap::Optional(absl::string_view key) {
  known_.emplace_back(key);
  for (const auto& entry : node_) {
    if (entry.first.Scalar() == key) {
      if (entry.second.IsNull()) return std::nullopt;
      return entry.second;
    }
  }
  return std::nullopt;
}

YAML::Node YamlMap::Required(absl::string_view key) {
  std::optional<YAML::Node> value = Optional(key);
  if (!value.has_value()) {
    throw FieldError(line(), FieldPath(key), "missing required field");
  }
  return *value;
}

void YamlMap::Finish() const {
  for (const auto& entry : node_) {
    const std::string& key = entry.first.Scalar();
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) {
      throw FieldError(LineOf(entry.first), FieldPath(key), "unknown key");
    }
  }
}

}  // namespace gdp::fake_nvml
