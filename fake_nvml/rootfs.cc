#include "fake_nvml/rootfs.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

// GPU instance IDs 0-14 and compute instance IDs 0-7 per GPU instance.
constexpr unsigned kGpuInstanceIds = 15;
constexpr unsigned kComputeInstanceIds = 8;

std::string MigMinors(const Machine& machine) {
  std::vector<unsigned> minors;
  for (const Gpu& gpu : machine.gpus) minors.push_back(gpu.minor);
  std::sort(minors.begin(), minors.end());
  std::string text = "config 1\nmonitor 2\n";
  for (unsigned minor : minors) {
    for (unsigned gi = 0; gi < kGpuInstanceIds; ++gi) {
      absl::StrAppend(&text, "gpu", minor, "/gi", gi, "/access ",
                      MigCapMinor(minor, gi), "\n");
      for (unsigned ci = 0; ci < kComputeInstanceIds; ++ci) {
        absl::StrAppend(&text, "gpu", minor, "/gi", gi, "/ci", ci, "/access ",
                        MigCapMinor(minor, gi, ci), "\n");
      }
    }
  }
  return text;
}

absl::Status WriteMigCaps(const Machine& machine,
                          const std::filesystem::path& root) {
  if (absl::Status s = WriteFile(root / "proc/driver/nvidia-caps/mig-minors",
                                 MigMinors(machine));
      !s.ok()) {
    return s;
  }
  const std::filesystem::path caps = root / "dev/nvidia-caps";
  auto cap = [&](unsigned n) {
    return WriteFile(caps / absl::StrCat("nvidia-cap", n), "");
  };
  bool any_capable = false;
  for (const Gpu& gpu : machine.gpus) {
    any_capable = any_capable || gpu.mig_capable;
    for (const GpuInstance& gi : gpu.gpu_instances) {
      if (absl::Status s = cap(MigCapMinor(gpu.minor, gi.id)); !s.ok()) {
        return s;
      }
      for (const ComputeInstance& ci : gi.compute_instances) {
        if (absl::Status s = cap(MigCapMinor(gpu.minor, gi.id, ci.id));
            !s.ok()) {
          return s;
        }
      }
    }
  }
  if (any_capable) {
    for (unsigned n : {1u, 2u}) {
      if (absl::Status s = cap(n); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

unsigned MigCapMinor(unsigned gpu_minor, unsigned gi,
                     std::optional<unsigned> ci) {
  const unsigned per_gi = 1 + kComputeInstanceIds;
  const unsigned base = 3 + gpu_minor * kGpuInstanceIds * per_gi + gi * per_gi;
  return ci.has_value() ? base + 1 + *ci : base;
}

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
    if (absl::Status s =
            WriteFile(devices / FormatSysfsBusId(gpu.pci) / "class",
                      absl::StrFormat("0x%06x\n", gpu.pci_class));
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
  return WriteMigCaps(machine, root);
}

}  // namespace gdp::fake_nvml
