#include "fake_nvml/rootfs.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace gdp::fake_nvml {
namespace {

absl::Status WriteFile(const std::filesystem::path& path,
                       const std::string& contents) {
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (error) {
    return absl::InternalError(absl::StrCat(
        "cannot create ", path.parent_path().string(), ": ", error.message()));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) {
    return absl::InternalError(absl::StrCat("cannot write ", path.string(),
                                            ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteRootfs(const Machine& machine,
                         const std::filesystem::path& root) {
  const std::filesystem::path devices = root / "sys/bus/pci/devices";
  const std::filesystem::path dev = root / "dev";
  for (const Gpu& gpu : machine.gpus) {
    if (absl::Status s =
            WriteFile(devices / FormatSysfsBusId(gpu.pci) / "numa_node",
                      absl::StrCat(gpu.numa_node, "\n"));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = WriteFile(dev / absl::StrCat("nvidia", gpu.minor), "");
        !s.ok()) {
      return s;
    }
  }
  for (const char* name :
       {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}) {
    if (absl::Status s = WriteFile(dev / name, ""); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace gdp::fake_nvml
