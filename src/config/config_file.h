// NVIDIA's config file (api/config/v1 of NVIDIA/k8s-device-plugin),
// `version: v1`, in YAML or JSON (JSON is read as YAML).
//
// Accepted, with NVIDIA's names:
//   version                      "v1"; empty or absent means v1
//   flags.*, health.*            the settings of settings.h that have a
//                                path in the file, each as its row reads it
//                                (deviceAPI and health are ours)
//   dra.devices                  the GPUs DRA serves, as sharing's devices
//                                (ours; required with deviceAPI both)
//   resources.gpus, resources.mig  [{pattern, name}], both required
//   sharing.timeSlicing | sharing.mps  (at most one):
//     renameByDefault, failRequestsGreaterThanOne  bool
//     resources: [{name (required), rename, devices, replicas (required)}]
//     devices: "all" (default), a number N (the first N), or a list of GPU
//     indices, "i:j" MIG indices, GPU and MIG UUIDs
// Resource names without "nvidia.com/" get it, as in NVIDIA's plugin.
// failRequestsGreaterThanOne defaults to false for timeSlicing and to true
// for mps, as in NVIDIA's plugin.
//
// Fields NVIDIA knows for features we do not have are accepted while they
// ask for nothing: flags.{gdrcopyEnabled, gdsEnabled, mofedEnabled} false,
// flags.deviceDiscoveryStrategy auto or nvml, imex.channelIDs empty (and
// imex.required). flags.useNodeFeatureAPI is accepted and has no effect.
//
// Stricter than NVIDIA: unknown fields, repeated keys, values of the wrong
// type (a quoted "true" is not a bool, an unquoted 5 is not a string), more
// than one YAML document and unknown versions are refused. A field whose
// value is null counts as absent, as in NVIDIA's plugin. Errors read
// "<file>:<line>: <field path>: <what is wrong>", for example
//   /etc/gdp/config.yaml:7: sharing.timeSlicing.resources[0].replicas: ...
// Values are checked against each other, with the flags, by LoadConfig
// (config/load.h).
#ifndef GDP_CONFIG_CONFIG_FILE_H_
#define GDP_CONFIG_CONFIG_FILE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/config.h"

namespace gdp {

// What a config file sets; absent members were not in the file.
struct ConfigFile {
  std::string path;  // as given to ReadConfigFile / ParseConfigFile

  // The values of the settings of settings.h the file gives (Gives), over
  // the defaults.
  Config settings;
  // dra
  std::optional<SharedDevices> dra_devices;
  // resources; names qualified ("nvidia.com/...")
  std::optional<std::vector<ResourcePattern>> gpu_resources;
  std::optional<std::vector<ResourcePattern>> mig_resources;
  // sharing; names qualified; fail_requests_greater_than_one defaulted
  std::optional<Sharing> sharing;

  // The line (1-based) of each field present in the file, by its path:
  // "flags.migStrategy", "sharing.mps.resources[0].devices[1]".
  std::map<std::string, int, std::less<>> lines;

  // Whether the file gives the field at `path` ("flags.mpsRoot"): it is
  // there and not null.
  bool Gives(absl::string_view path) const {
    return !path.empty() && lines.contains(path);
  }

  // The line of `path`, or of its nearest enclosing field present in the
  // file ("a.b[1].c", then "a.b[1]", "a.b", "a"); 0 if none is.
  int LineOf(absl::string_view path) const;
};

// Parses `text` as a config file named `path` in messages. An empty
// document sets nothing.
// Result on failure: InvalidArgument "<path>:<line>: <field>: <message>"
// (or "<path>:<line>: invalid YAML: ..." for a syntax error).
absl::StatusOr<ConfigFile> ParseConfigFile(absl::string_view text,
                                           const std::string& path);

// Reads and parses the regular file at `path` (following symlinks), never
// blocking on a FIFO in its place (ReadRegularFile).
// Result on failure: as ParseConfigFile (InvalidArgument "<path>: larger
// than 1048576 bytes ..." without reading a larger file), FailedPrecondition
// "config file <path> is not a regular file (...)", or the errno-derived
// status ("cannot read config file <path>: <reason>") if it cannot be read.
absl::StatusOr<ConfigFile> ReadConfigFile(const std::string& path);

}  // namespace gdp

#endif  // GDP_CONFIG_CONFIG_FILE_H_
