// The Container Device Interface's rules for a spec file (cncf-tags/
// container-device-interface: SPEC.md, and what its loader enforces in
// pkg/parser and pkg/cdi) for the fields BuildDeviceSpec writes, so a spec
// we write is one that container runtimes load. Any other CDI field (
// intelRdt, additionalGids, netDevices, annotations, a device node's type,
// numbers and permissions, a mount's type) is refused as unknown: we never
// write one. Used on generated specs in tests and before writing.
#ifndef GDP_CDI_VALIDATE_H_
#define GDP_CDI_VALIDATE_H_

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"

namespace gdp::cdi {

// A spec's `kind`, "<vendor>/<class>": vendor a DNS-subdomain-like name of at
// most 253 characters, class at most 63; both start with a letter, end with
// a letter or digit, and have only letters, digits, '-', '_' and '.'.
// Result on failure: InvalidArgument naming the kind and the rule broken.
absl::Status ValidateKind(const std::string& kind);

// A device's name: starts and ends with a letter or digit, with letters,
// digits, '-', '_', '.' and ':' between. (A leading digit needs cdiVersion
// 0.5.0 or later; ValidateSpec checks that.)
// Result on failure: InvalidArgument naming the name and the rule broken.
absl::Status ValidateDeviceName(const std::string& name);

// A fully qualified device name, "<vendor>/<class>=<name>", as used in the
// CRI's CDI device list and in CDI annotations.
// Result on failure: InvalidArgument naming the name and the rule broken.
absl::Status ValidateQualifiedName(const std::string& qualified_name);

// The lowest cdiVersion that has every feature of ours `spec` uses: "0.5.0"
// for a device name starting with a digit or a device node `hostPath`,
// "0.6.0" for a '.' in the class; else "0.3.0". Fields of unexpected types
// are ignored.
std::string MinimumCdiVersion(const nlohmann::json& spec);

// Checks the whole spec: only the fields we write, each of its type
// (`cdiVersion`, `kind`, `devices` of `name` and `containerEdits`, edits of
// `env`, `deviceNodes` of `path` and `hostPath`, `mounts` of `hostPath`,
// `containerPath` and `options`, `hooks` of `hookName`, `path`, `args`,
// `env` and `timeout`); `cdiVersion` a released version not below
// MinimumCdiVersion(spec); a valid `kind`; at least one device, names valid
// and unique, each with non-empty `containerEdits`; env entries "K=V" with a
// non-empty K; device nodes with an absolute `path` (and `hostPath` if
// given); mounts with a non-empty `hostPath` and an absolute
// `containerPath`; hooks with an OCI stage as `hookName` (prestart,
// createRuntime, createContainer, startContainer, poststart, poststop), an
// absolute `path`, `args` strings, `env` as above and a `timeout` (seconds)
// above zero when given (the OCI runtime spec's rules). Absolute paths are
// stricter than CDI's own loader, which only requires them to be non-empty;
// runtimes need them absolute. Result on failure: InvalidArgument naming the
// first offending field by its JSON path
// ("devices[2].containerEdits.deviceNodes[0].path: ...").
absl::Status ValidateSpec(const nlohmann::json& spec);

}  // namespace gdp::cdi

#endif  // GDP_CDI_VALIDATE_H_
