// Reading a machine YAML file (schema in fake_nvml/README.md) into a
// Machine. Shared by the fake library and the fake-nvml tool.
#ifndef GDP_FAKE_NVML_MACHINE_LOADER_H_
#define GDP_FAKE_NVML_MACHINE_LOADER_H_

#include <string>

#include "absl/status/statusor.h"
#include "fake_nvml/machine.h"

namespace gdp::fake_nvml {

// Loads and validates the machine file at `path`. Errors:
//   NotFound: the file does not exist or cannot be read; the message names
//     the path and the OS error.
//   InvalidArgument: the file is not a valid machine description (bad YAML,
//     unknown key, wrong type, missing required field, out-of-range value,
//     duplicate UUID / minor / bus id, inconsistent NVLinks or PCIe layout);
//     the message reads "PATH:LINE: FIELD: problem".
// Never throws.
absl::StatusOr<Machine> LoadMachineFile(const std::string& path);

// As LoadMachineFile, for YAML text already in memory; `path` only names the
// source in messages.
absl::StatusOr<Machine> ParseMachine(const std::string& yaml_text,
                                     const std::string& path);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_MACHINE_LOADER_H_
