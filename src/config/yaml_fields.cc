#include "config/yaml_fields.h"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"

namespace gdp {
namespace {

// Thrown by Bounds to stop the parser at the first excess.
struct OutOfBounds {
  int line;
  std::string what;
};

// Checks a document's events, before any node is built: nesting and
// scalars within the limits. Throws OutOfBounds.
class Bounds final : public YAML::EventHandler {
 public:
  explicit Bounds(const YamlLimits& limits) : limits_(limits) {}

  void OnDocumentStart(const YAML::Mark& mark) override { line_ = mark.line; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Seen(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Seen(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    Seen(mark);
    if (value.size() > limits_.max_scalar_bytes) {
      throw OutOfBounds{mark.line + 1, absl::StrCat("a value of ", value.size(),
                                                    " bytes; at most ",
                                                    limits_.max_scalar_bytes)};
    }
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&,
                       YAML::anchor_t, YAML::EmitterStyle::value) override {
    Enter(mark);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Enter(mark);
  }
  void OnMapEnd() override { --depth_; }

  // The line of the document's first value (else of its start).
  int document_line() const { return line_ + 1; }

 private:
  void Seen(const YAML::Mark& mark) {
    if (!content_) line_ = mark.line;
    content_ = true;
  }

  void Enter(const YAML::Mark& mark) {
    Seen(mark);
    if (++depth_ > limits_.max_depth) {
      throw OutOfBounds{
          mark.line + 1,
          absl::StrCat("nested deeper than ", limits_.max_depth, " levels")};
    }
  }

  const YamlLimits& limits_;
  int depth_ = 0;
  int line_ = 0;
  bool content_ = false;
};

// What YAML makes of a plain scalar other than a string, for messages;
// empty if it is a string.
absl::string_view PlainScalarType(const YAML::Node& node) {
  if (!IsPlain(node)) return {};
  bool b = false;
  if (YAML::convert<bool>::decode(node, b)) return "a bool";
  double d = 0;
  if (YAML::convert<double>::decode(node, d)) return "a number";
  return {};
}

absl::string_view TypeOf(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar: {
      absl::string_view t = PlainScalarType(node);
      return t.empty() ? "a string" : t;
    }
    default:
      return "nothing";
  }
}

}  // namespace

absl::StatusOr<YAML::Node> LoadOneYamlDocument(absl::string_view text,
                                               const std::string& path,
                                               const YamlLimits& limits) {
  // The events first, for the bounds and for a second document: yaml-cpp
  // 0.7's LoadAll never ends on text after a flow document (a trailing
  // comma) and allocates without end, so at most two documents are asked
  // for.
  try {
    std::istringstream stream{std::string(text)};
    YAML::Parser events(stream);
    Bounds first(limits);
    if (!events.HandleNextDocument(first)) return YAML::Node();  // empty
    Bounds second(limits);
    if (events.HandleNextDocument(second)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", second.document_line(),
          ": holds more than one YAML document (or text after the config, "
          "such as a trailing comma); give one config"));
    }
    return YAML::Load(std::string(text));
  } catch (const OutOfBounds& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", e.line, ": too large: ", e.what));
  } catch (const YAML::ParserException& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", e.mark.line + 1, ": invalid YAML: ", e.msg));
  }
}

int LineOfNode(const YAML::Node& node) {
  return std::max(1, node.Mark().line + 1);
}

// Quoted scalars carry the tag "!", plain ones "?".
bool IsPlain(const YAML::Node& node) { return node.Tag() == "?"; }

bool YamlFieldReader::Fail(int line, absl::string_view path,
                           absl::string_view message) {
  status_ = absl::InvalidArgumentError(
      absl::StrCat(path_, ":", line, ": ", path.empty() ? "the document" : path,
                   ": ", message));
  return false;
}

bool YamlFieldReader::WrongType(const YamlField& f,
                                absl::string_view expected) {
  return Fail(
      f.line, f.path,
      absl::StrCat(
          "must be ", expected, ", got ", TypeOf(f.node),
          f.node.IsScalar() ? absl::StrCat(" '", f.node.Scalar(), "'") : ""));
}

bool YamlFieldReader::Mapping(const YamlField& f, const Handlers& handlers) {
  if (!f.node.IsMap()) return WrongType(f, "a mapping");
  std::set<std::string, std::less<>> seen;
  for (auto it = f.node.begin(); it != f.node.end(); ++it) {
    // Copies: the iterator's pair is a temporary.
    const YAML::Node key = it->first;
    const int line = LineOfNode(key);
    if (!key.IsScalar()) {
      return Fail(line, f.path, "has a key that is not a string");
    }
    const std::string& name = key.Scalar();
    const std::string path =
        f.path.empty() ? name : absl::StrCat(f.path, ".", name);
    auto handler = std::find_if(handlers.begin(), handlers.end(),
                                [&](const auto& h) { return h.first == name; });
    if (handler == handlers.end()) {
      std::vector<absl::string_view> known;
      for (const auto& h : handlers) known.push_back(h.first);
      return Fail(line, path,
                  absl::StrCat("unknown field; known here: ",
                               absl::StrJoin(known, ", ")));
    }
    if (!seen.insert(name).second) {
      return Fail(line, path, "is given more than once");
    }
    YamlField value{it->second, path, line};
    if (value.node.IsNull()) continue;
    Record(value);
    if (!handler->second(value)) return false;
  }
  return true;
}

bool YamlFieldReader::List(const YamlField& f, const Handler& item) {
  if (!f.node.IsSequence()) return WrongType(f, "a list");
  for (size_t i = 0; i < f.node.size(); ++i) {
    YamlField element{f.node[i], absl::StrCat(f.path, "[", i, "]"),
                      LineOfNode(f.node[i])};
    Record(element);
    if (!item(element)) return false;
  }
  return true;
}

bool YamlFieldReader::String(const YamlField& f,
                             std::optional<std::string>* out) {
  if (!f.node.IsScalar() || !PlainScalarType(f.node).empty()) {
    return WrongType(f, "a string");
  }
  *out = f.node.Scalar();
  return true;
}

bool YamlFieldReader::Bool(const YamlField& f, std::optional<bool>* out) {
  bool value = false;
  if (!f.node.IsScalar() || !IsPlain(f.node) ||
      !YAML::convert<bool>::decode(f.node, value)) {
    return WrongType(f, "true or false");
  }
  *out = value;
  return true;
}

bool YamlFieldReader::Int(const YamlField& f, int* out) {
  if (!f.node.IsScalar() || !IsPlain(f.node) ||
      !absl::SimpleAtoi(f.node.Scalar(), out)) {
    return WrongType(f, "an integer");
  }
  return true;
}

bool YamlFieldReader::Duration(const YamlField& f,
                               std::optional<absl::Duration>* out) {
  if (!f.node.IsScalar()) return WrongType(f, "a duration");
  const std::string& text = f.node.Scalar();
  int64_t nanoseconds = 0;
  absl::Duration d;
  if (IsPlain(f.node) && absl::SimpleAtoi(text, &nanoseconds)) {
    *out = absl::Nanoseconds(nanoseconds);  // as NVIDIA: a number is in ns
  } else if (text == "infinite") {
    *out = absl::InfiniteDuration();
  } else if (text != "inf" && text != "-inf" && absl::ParseDuration(text, &d)) {
    *out = d;
  } else {
    return Fail(f.line, f.path,
                absl::StrCat("must be a duration such as \"60s\" or \"1h30m\", "
                             "or \"infinite\", got '",
                             text, "'"));
  }
  return true;
}

bool YamlFieldReader::UnsupportedBool(const YamlField& f) {
  std::optional<bool> value;
  if (!Bool(f, &value)) return false;
  if (*value) {
    return Fail(f.line, f.path,
                "is not supported by gpu-device-plugin; remove it or set it "
                "to false");
  }
  return true;
}

}  // namespace gdp
