#include "fake_nvml/machine_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fake_nvml/machine_parse.h"
#include "fake_nvml/yaml_reader.h"

namespace gdp::fake_nvml {
namespace {

// Parses the document root; throws FieldError (yaml-cpp reports through
// exceptions, so the loader does too, internally).
Machine ParseRoot(const YAML::Node& root) {
  YamlMap map(root, "");
  Machine machine;
  const YAML::Node driver = map.Required("driver_version");
  machine.driver_version = ParseString(driver, "driver_version");
  if (machine.driver_version.empty() ||
      machine.driver_version.size() >= NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE) {
    throw FieldError(LineOf(driver), "driver_version",
                     absl::StrCat("must be 1 to ",
                                  NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE - 1,
                                  " characters"));
  }
  machine.cuda_driver_version = static_cast<int>(
      ParseInt(map.Required("cuda_driver_version"), "cuda_driver_version", 1,
               std::numeric_limits<int>::max()));

  std::vector<NvSwitchLines> switch_lines;
  if (auto switches = map.Optional("nvswitches")) {
    std::vector<YAML::Node> items = ParseSequence(*switches, "nvswitches");
    switch_lines.resize(items.size());
    for (size_t s = 0; s < items.size(); ++s) {
      machine.nvswitches.push_back(ParseNvSwitch(
          items[s], absl::StrCat("nvswitches[", s, "]"), &switch_lines[s]));
    }
  }

  const YAML::Node gpus = map.Required("gpus");
  std::vector<YAML::Node> items = ParseSequence(gpus, "gpus");
  if (items.size() > kMaxGpus) {
    throw FieldError(LineOf(gpus), "gpus",
                     absl::StrCat("at most ", kMaxGpus, " GPUs"));
  }
  std::vector<GpuLines> gpu_lines(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    machine.gpus.push_back(ParseGpu(items[i], absl::StrCat("gpus[", i, "]"),
                                    machine.driver_version, &gpu_lines[i]));
  }
  map.Finish();
  CheckMachine(machine, gpu_lines, switch_lines);
  return machine;
}

}  // namespace

absl::StatusOr<Machine> ParseMachine(const std::string& yaml_text,
                                     const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", std::max(1, e.mark.line + 1),
                     ": (syntax): invalid YAML: ", e.msg));
  }
  try {
    return ParseRoot(root);
  } catch (const FieldError& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", e.line(), ": ", e.field(), ": ", e.what()));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ":", std::max(1, e.mark.line + 1), ": (document): ", e.msg));
  }
}

absl::StatusOr<Machine> LoadMachineFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::NotFoundError(
        absl::StrCat("machine file ", path, " is a directory"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read machine file ", path,
                                            ": ", std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::NotFoundError(absl::StrCat("cannot read machine file ", path,
                                            ": ", std::strerror(errno)));
  }
  return ParseMachine(text.str(), path);
}

}  // namespace gdp::fake_nvml
