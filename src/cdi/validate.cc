#include "cdi/validate.h"

#include <cstdint>
#include <initializer_list>
#include <limits>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gdp::cdi {
namespace {

using nlohmann::json;

// Released spec versions, oldest first (specs-go/version.go).
const char* const kVersions[] = {"0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0",
                                 "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"};

// Position of `v` ("0.5.0" or "v0.5.0") in kVersions, or -1.
int VersionIndex(std::string v) {
  if (absl::StartsWith(v, "v")) v.erase(0, 1);
  for (int i = 0; i < static_cast<int>(std::size(kVersions)); ++i) {
    if (v == kVersions[i]) return i;
  }
  return -1;
}

absl::Status Invalid(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

bool IsAlnum(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c));
}

// The vendor/class rule of pkg/parser: a letter first, a letter or digit
// last, letters, digits, '_', '-', '.' between.
absl::Status CheckVendorOrClass(const std::string& what, const std::string& s,
                                size_t max_len) {
  if (s.empty())
    return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (s.size() > max_len) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " '", s, "' is longer than ", max_len, " characters"));
  }
  if (!absl::ascii_isalpha(static_cast<unsigned char>(s.front()))) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", s, "' does not start with a letter"));
  }
  if (!IsAlnum(s.back())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", s, "' does not end with a letter or digit"));
  }
  for (char c : s) {
    if (!IsAlnum(c) && c != '_' && c != '-' && c != '.') {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " '", s, "' has the invalid character '",
                       std::string(1, c), "'"));
    }
  }
  return absl::OkStatus();
}

// The field `key` of object `j`, or nullptr when absent or null (null reads
// as absent, as in the Go loader).
const json* Field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::Status CheckObject(const json& j, const std::string& where,
                         std::initializer_list<const char*> fields) {
  if (!j.is_object()) return Invalid(where, "is not an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* f : fields) known = known || it.key() == f;
    if (!known)
      return Invalid(where, absl::StrCat("unknown field '", it.key(), "'"));
  }
  return absl::OkStatus();
}

absl::Status CheckString(const json& j, const std::string& where) {
  return j.is_string() ? absl::OkStatus() : Invalid(where, "is not a string");
}

absl::Status CheckStrings(const json& j, const std::string& where) {
  if (!j.is_array()) return Invalid(where, "is not an array");
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) {
      return Invalid(absl::StrCat(where, "[", i, "]"), "is not a string");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAbsolute(const json& j, const std::string& where) {
  if (!j.is_string()) return Invalid(where, "is not a string");
  const std::string& s = j.get_ref<const std::string&>();
  if (s.empty() || s.front() != '/') {
    return Invalid(where, absl::StrCat("'", s, "' is not an absolute path"));
  }
  return absl::OkStatus();
}

absl::Status CheckEnv(const json& j, const std::string& where) {
  if (absl::Status s = CheckStrings(j, where); !s.ok()) return s;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string& e = j[i].get_ref<const std::string&>();
    size_t eq = e.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Invalid(absl::StrCat(where, "[", i, "]"),
                     absl::StrCat("'", e, "' is not NAME=VALUE"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDeviceNode(const json& j, const std::string& where) {
  if (absl::Status s =
          CheckObject(j, where, {"path", "hostPath", "type", "major", "minor"});
      !s.ok()) {
    return s;
  }
  const json* path = Field(j, "path");
  if (path == nullptr) return Invalid(where + ".path", "is missing");
  if (absl::Status s = CheckAbsolute(*path, where + ".path"); !s.ok()) return s;
  if (const json* t = Field(j, "type")) {
    if (!t->is_string() || (*t != "c" && *t != "b" && *t != "p")) {
      return Invalid(where + ".type", "must be \"c\", \"b\" or \"p\"");
    }
  }
  for (const char* number : {"major", "minor"}) {
    if (const json* n = Field(j, number)) {
      if (!n->is_number_integer() || n->get<int64_t>() < 0) {
        return Invalid(absl::StrCat(where, ".", number),
                       "must be a whole number, at least 0");
      }
    }
  }
  if (const json* f = Field(j, "hostPath")) {
    return CheckAbsolute(*f, where + ".hostPath");
  }
  return absl::OkStatus();
}

absl::Status CheckMount(const json& j, const std::string& where) {
  if (absl::Status s =
          CheckObject(j, where, {"hostPath", "containerPath", "options"});
      !s.ok()) {
    return s;
  }
  const json* host = Field(j, "hostPath");
  if (host == nullptr) return Invalid(where + ".hostPath", "is missing");
  if (absl::Status s = CheckString(*host, where + ".hostPath"); !s.ok())
    return s;
  if (host->get_ref<const std::string&>().empty()) {
    return Invalid(where + ".hostPath", "is empty");
  }
  const json* ctr = Field(j, "containerPath");
  if (ctr == nullptr) return Invalid(where + ".containerPath", "is missing");
  if (absl::Status s = CheckAbsolute(*ctr, where + ".containerPath"); !s.ok()) {
    return s;
  }
  if (const json* f = Field(j, "options")) {
    return CheckStrings(*f, where + ".options");
  }
  return absl::OkStatus();
}

// The OCI hook stages CDI accepts (pkg/cdi/container-edits.go).
bool IsHookStage(const std::string& name) {
  for (const char* stage : {"prestart", "createRuntime", "createContainer",
                            "startContainer", "poststart", "poststop"}) {
    if (name == stage) return true;
  }
  return false;
}

// A hook as CDI's Hook.Validate checks it (a known stage, a path, valid
// env) plus the OCI runtime spec's rules: an absolute path and a timeout
// above zero.
absl::Status CheckHook(const json& j, const std::string& where) {
  if (absl::Status s =
          CheckObject(j, where, {"hookName", "path", "args", "env", "timeout"});
      !s.ok()) {
    return s;
  }
  const json* name = Field(j, "hookName");
  if (name == nullptr) return Invalid(where + ".hookName", "is missing");
  if (absl::Status s = CheckString(*name, where + ".hookName"); !s.ok()) {
    return s;
  }
  const std::string& n = name->get_ref<const std::string&>();
  if (!IsHookStage(n)) {
    return Invalid(where + ".hookName",
                   absl::StrCat("'", n, "' is not an OCI hook stage"));
  }
  const json* path = Field(j, "path");
  if (path == nullptr) return Invalid(where + ".path", "is missing");
  if (absl::Status s = CheckAbsolute(*path, where + ".path"); !s.ok()) return s;
  if (const json* f = Field(j, "args")) {
    if (absl::Status s = CheckStrings(*f, where + ".args"); !s.ok()) return s;
  }
  if (const json* f = Field(j, "env")) {
    if (absl::Status s = CheckEnv(*f, where + ".env"); !s.ok()) return s;
  }
  if (const json* f = Field(j, "timeout")) {
    if (!f->is_number_integer()) {
      return Invalid(where + ".timeout", "is not an integer");
    }
    // An int in the OCI spec (Go's int; runc takes it as seconds).
    if (f->is_number_unsigned()
            ? f->get<uint64_t>() > uint64_t{std::numeric_limits<int32_t>::max()}
            : f->get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return Invalid(where + ".timeout", "is too large");
    }
    if (!f->is_number_unsigned() && f->get<int64_t>() <= 0) {
      return Invalid(where + ".timeout", "is not above zero");
    }
    if (f->is_number_unsigned() && f->get<uint64_t>() == 0) {
      return Invalid(where + ".timeout", "is not above zero");
    }
  }
  return absl::OkStatus();
}

// Checks `j` as a containerEdits object; sets *empty to whether it edits
// nothing (allowed for the spec's, not for a device's).
absl::Status CheckEdits(const json& j, const std::string& where, bool* empty) {
  if (absl::Status s =
          CheckObject(j, where, {"env", "deviceNodes", "mounts", "hooks"});
      !s.ok()) {
    return s;
  }
  *empty = true;
  if (const json* f = Field(j, "env")) {
    if (absl::Status s = CheckEnv(*f, where + ".env"); !s.ok()) return s;
    *empty = *empty && f->empty();
  }
  struct List {
    const char* key;
    absl::Status (*check)(const json&, const std::string&);
  };
  for (const List& l : {List{"deviceNodes", CheckDeviceNode},
                        List{"mounts", CheckMount}, List{"hooks", CheckHook}}) {
    const json* f = Field(j, l.key);
    if (f == nullptr) continue;
    std::string at = absl::StrCat(where, ".", l.key);
    if (!f->is_array()) return Invalid(at, "is not an array");
    for (size_t i = 0; i < f->size(); ++i) {
      if (absl::Status s = l.check((*f)[i], absl::StrCat(at, "[", i, "]"));
          !s.ok()) {
        return s;
      }
    }
    *empty = *empty && f->empty();
  }
  return absl::OkStatus();
}

// Calls fn(item) for each object in the array *list (none if null).
template <typename Fn>
void ForEachObject(const json* list, Fn fn) {
  if (list == nullptr || !list->is_array()) return;
  for (const json& item : *list) {
    if (item.is_object()) fn(item);
  }
}

// Calls fn(edits) for the spec's and each device's containerEdits objects.
template <typename Fn>
void ForEachEdits(const json& spec, Fn fn) {
  if (const json* e = Field(spec, "containerEdits"); e && e->is_object())
    fn(*e);
  ForEachObject(Field(spec, "devices"), [&](const json& d) {
    if (const json* e = Field(d, "containerEdits"); e && e->is_object()) fn(*e);
  });
}

}  // namespace

absl::Status ValidateKind(const std::string& kind) {
  size_t slash = kind.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == kind.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kind '", kind, "' is not <vendor>/<class>"));
  }
  std::string vendor = kind.substr(0, slash);
  std::string klass = kind.substr(slash + 1);
  if (absl::Status s = CheckVendorOrClass("vendor", vendor, 253); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kind '", kind, "': ", s.message()));
  }
  if (absl::StrContains(vendor, "..")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kind '", kind, "': vendor '", vendor, "' has an empty DNS label"));
  }
  if (absl::Status s = CheckVendorOrClass("class", klass, 63); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kind '", kind, "': ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status ValidateDeviceName(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("device name is empty");
  if (!IsAlnum(name.front()) || !IsAlnum(name.back())) {
    return absl::InvalidArgumentError(
        absl::StrCat("device name '", name,
                     "' does not start and end with a letter or digit"));
  }
  for (char c : name) {
    if (!IsAlnum(c) && c != '_' && c != '-' && c != '.' && c != ':') {
      return absl::InvalidArgumentError(
          absl::StrCat("device name '", name, "' has the invalid character '",
                       std::string(1, c), "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateQualifiedName(const std::string& qualified_name) {
  size_t eq = qualified_name.find('=');
  if (eq == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", qualified_name, "' is not <vendor>/<class>=<name>"));
  }
  if (absl::Status s = ValidateKind(qualified_name.substr(0, eq)); !s.ok()) {
    return s;
  }
  return ValidateDeviceName(qualified_name.substr(eq + 1));
}

std::string MinimumCdiVersion(const json& spec) {
  if (!spec.is_object()) return "0.3.0";
  if (const json* kind = Field(spec, "kind"); kind && kind->is_string()) {
    const std::string& k = kind->get_ref<const std::string&>();
    size_t slash = k.find('/');
    if (slash != std::string::npos &&
        k.find('.', slash + 1) != std::string::npos) {
      return "0.6.0";
    }
  }
  bool v050 = false;
  ForEachEdits(spec, [&](const json& e) {
    ForEachObject(Field(e, "deviceNodes"), [&](const json& n) {
      v050 = v050 || Field(n, "hostPath") != nullptr;
    });
  });
  ForEachObject(Field(spec, "devices"), [&](const json& d) {
    const json* name = Field(d, "name");
    if (name == nullptr || !name->is_string()) return;
    const std::string& n = name->get_ref<const std::string&>();
    v050 = v050 || (!n.empty() &&
                    absl::ascii_isdigit(static_cast<unsigned char>(n[0])));
  });
  return v050 ? "0.5.0" : "0.3.0";
}

absl::Status ValidateSpec(const json& spec) {
  if (absl::Status s = CheckObject(
          spec, "spec", {"cdiVersion", "kind", "devices", "containerEdits"});
      !s.ok()) {
    return s;
  }
  const json* version = Field(spec, "cdiVersion");
  if (version == nullptr) return Invalid("cdiVersion", "is missing");
  if (absl::Status s = CheckString(*version, "cdiVersion"); !s.ok()) return s;
  const std::string& v = version->get_ref<const std::string&>();
  int vi = VersionIndex(v);
  if (vi < 0) {
    return Invalid("cdiVersion",
                   absl::StrCat("'", v, "' is not a released version"));
  }

  const json* kind = Field(spec, "kind");
  if (kind == nullptr) return Invalid("kind", "is missing");
  if (absl::Status s = CheckString(*kind, "kind"); !s.ok()) return s;
  if (absl::Status s = ValidateKind(kind->get_ref<const std::string&>());
      !s.ok()) {
    return Invalid("kind", std::string(s.message()));
  }

  const json* devices = Field(spec, "devices");
  if (devices == nullptr) return Invalid("devices", "is missing");
  if (!devices->is_array()) return Invalid("devices", "is not an array");
  if (devices->empty()) return Invalid("devices", "is empty");
  absl::flat_hash_set<std::string> names;
  for (size_t i = 0; i < devices->size(); ++i) {
    const json& d = (*devices)[i];
    std::string at = absl::StrCat("devices[", i, "]");
    if (absl::Status s = CheckObject(d, at, {"name", "containerEdits"});
        !s.ok()) {
      return s;
    }
    const json* name = Field(d, "name");
    if (name == nullptr) return Invalid(at + ".name", "is missing");
    if (absl::Status s = CheckString(*name, at + ".name"); !s.ok()) return s;
    const std::string& n = name->get_ref<const std::string&>();
    if (absl::Status s = ValidateDeviceName(n); !s.ok()) {
      return Invalid(at + ".name", std::string(s.message()));
    }
    if (!names.insert(n).second) {
      return Invalid(at + ".name",
                     absl::StrCat("device '", n, "' appears twice"));
    }
    const json* edits = Field(d, "containerEdits");
    if (edits == nullptr) return Invalid(at + ".containerEdits", "is missing");
    bool empty = true;
    if (absl::Status s = CheckEdits(*edits, at + ".containerEdits", &empty);
        !s.ok()) {
      return s;
    }
    if (empty) return Invalid(at + ".containerEdits", "edits nothing");
  }
  if (const json* edits = Field(spec, "containerEdits")) {
    bool empty = true;
    if (absl::Status s = CheckEdits(*edits, "containerEdits", &empty);
        !s.ok()) {
      return s;
    }
  }

  std::string min = MinimumCdiVersion(spec);
  if (vi < VersionIndex(min)) {
    return Invalid("cdiVersion",
                   absl::StrCat("'", v, "' is below ", min,
                                ", which the spec's features need"));
  }
  return absl::OkStatus();
}

}  // namespace gdp::cdi
