#include "fake_nvml/rootfs.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
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

// Makes a device node at `path` of the kind `nodes` asks for, replacing
// whatever file or node is there (writing a regular file through an
// existing character device would reach its driver instead).
absl::Status WriteNode(const std::filesystem::path& path, DeviceNodes nodes,
                       unsigned major, unsigned minor) {
  std::error_code error;
  const std::filesystem::file_status old =
      std::filesystem::symlink_status(path, error);
  error.clear();
  if (std::filesystem::exists(old) && !std::filesystem::is_directory(old)) {
    std::filesystem::remove(path, error);
    if (error) {
      return absl::InternalError(absl::StrCat("cannot replace ", path.string(),
                                              ": ", error.message()));
    }
  }
  if (nodes == DeviceNodes::kFiles) return WriteFile(path, "");
  std::filesystem::create_directories(path.parent_path(), error);
  if (error) {
    return absl::InternalError(absl::StrCat(
        "cannot create ", path.parent_path().string(), ": ", error.message()));
  }
  // chmod after mknod: the umask would narrow the mode given to mknod.
  if (mknod(path.c_str(), S_IFCHR | 0666, makedev(major, minor)) != 0 ||
      chmod(path.c_str(), 0666) != 0) {
    return absl::InternalError(
        absl::StrFormat("cannot make character device %s (%u:%u): %s",
                        path.string(), major, minor, std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Replaces whatever is at `link` (a link, file or directory of an earlier
// fixture) with a symbolic link to `target`.
absl::Status WriteSymlink(const std::filesystem::path& target,
                          const std::filesystem::path& link) {
  std::error_code error;
  std::filesystem::create_directories(link.parent_path(), error);
  if (!error) {
    const std::filesystem::file_status old =
        std::filesystem::symlink_status(link, error);
    error.clear();
    if (std::filesystem::is_directory(old)) {
      std::filesystem::remove_all(link, error);
    } else if (std::filesystem::exists(old) ||
               std::filesystem::is_symlink(old)) {
      std::filesystem::remove(link, error);
    }
  }
  if (!error) std::filesystem::create_directory_symlink(target, link, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot link ", link.string(),
                                            " to ", target.string(), ": ",
                                            error.message()));
  }
  return absl::OkStatus();
}

// Lays the machine's PCIe tree out as sysfs directories (see GpuDevicePaths
// in rootfs.h for the naming), one GPU at a time.
class PcieTree {
 public:
  explicit PcieTree(const Machine& machine) {
    for (const Gpu& gpu : machine.gpus) {
      Reserve(gpu.pci.domain, gpu.pci.bus, FormatSysfsBusId(gpu.pci));
      buses_[gpu.pci.domain].insert(gpu.host_bridge);
    }
    for (const NvSwitch& nvswitch : machine.nvswitches) {
      Reserve(nvswitch.pci.domain, nvswitch.pci.bus,
              FormatSysfsBusId(nvswitch.pci));
    }
  }

  // The directory of `gpu` (GPU number `index`), relative to sys/devices.
  absl::StatusOr<std::string> PathOf(const Gpu& gpu, size_t index) {
    const uint32_t domain = gpu.pci.domain;
    std::string path = absl::StrFormat("pci%04x:%02x", domain, gpu.host_bridge);
    uint32_t bus = gpu.host_bridge;  // the bus the next port sits on
    const std::string gpu_key = absl::StrCat("gpu ", index);
    for (const unsigned id : gpu.pcie_switches) {
      absl::StatusOr<std::pair<uint32_t, uint32_t>> buses =
          SwitchBuses(domain, id);
      if (!buses.ok()) return buses.status();
      // The port above the switch, then the switch's upstream port.
      absl::StrAppend(&path, "/",
                      Port(path, domain, bus, absl::StrCat("switch ", id)));
      absl::StrAppend(&path, "/",
                      absl::StrFormat("%04x:%02x:00.0", domain, buses->first));
      bus = buses->second;
    }
    absl::StrAppend(&path, "/", Port(path, domain, bus, gpu_key), "/",
                    FormatSysfsBusId(gpu.pci));
    return path;
  }

 private:
  void Reserve(uint32_t domain, uint32_t bus, const std::string& address) {
    buses_[domain].insert(bus);
    addresses_.insert(address);
  }

  // The name of the port below directory `parent` (on bus `bus`) that leads
  // to `child`: the k-th new child of `parent` gets device 1 + k / 8,
  // function k % 8, skipping addresses a device of the machine has.
  std::string Port(const std::string& parent, uint32_t domain, uint32_t bus,
                   const std::string& child) {
    auto [it, added] = ports_.try_emplace(parent + "/" + child);
    if (!added) return it->second;
    unsigned& k = next_port_[parent];
    std::string name;
    do {
      name =
          absl::StrFormat("%04x:%02x:%02x.%x", domain, bus, 1 + k / 8, k % 8);
      ++k;
    } while (!addresses_.insert(name).second);
    it->second = name;
    return name;
  }

  // The buses of PCIe switch `id`: above its upstream port, and inside it
  // (where its downstream ports sit). Allocated at first use, lowest free
  // bus numbers of the domain first.
  absl::StatusOr<std::pair<uint32_t, uint32_t>> SwitchBuses(uint32_t domain,
                                                            unsigned id) {
    auto found = switch_buses_.find(id);
    if (found != switch_buses_.end()) return found->second;
    std::set<uint32_t>& used = buses_[domain];
    uint32_t pair[2];
    uint32_t next = 1;
    for (uint32_t& bus : pair) {
      while (next <= 0xFF && used.count(next) > 0) ++next;
      if (next > 0xFF) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "PCI domain %04x has no bus number left for PCIe switch %u", domain,
            id));
      }
      bus = next;
      used.insert(next);
    }
    return switch_buses_[id] = std::pair(pair[0], pair[1]);
  }

  std::map<uint32_t, std::set<uint32_t>> buses_;  // per domain, in use
  std::set<std::string> addresses_;               // PCI addresses in use
  std::map<std::string, std::string> ports_;      // parent/child -> port
  std::map<std::string, unsigned> next_port_;     // parent -> next k
  std::map<unsigned, std::pair<uint32_t, uint32_t>> switch_buses_;
};

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

// /proc/devices as a node with the driver loaded lists it: the character
// device majors by name (the fixture's numbers), then the block devices.
// Readers find the dynamic majors there, e.g. nvidia-caps for capability
// nodes that do not exist on the host (NVIDIA's DRA driver does so).
std::string ProcDevices() {
  return absl::StrCat("Character devices:\n  1 mem\n  5 /dev/tty\n",
                      kNvidiaUvmMajor, " nvidia-uvm\n", kNvidiaCapsMajor,
                      " nvidia-caps\n", kNvidiaMajor,
                      " nvidia-frontend\n\nBlock devices:\n  7 loop\n");
}

absl::Status WriteMigCaps(const Machine& machine,
                          const std::filesystem::path& root,
                          DeviceNodes nodes) {
  if (absl::Status s = WriteFile(root / "proc/driver/nvidia-caps/mig-minors",
                                 MigMinors(machine));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = WriteFile(root / "proc/devices", ProcDevices());
      !s.ok()) {
    return s;
  }
  const std::filesystem::path caps = root / "dev/nvidia-caps";
  auto cap = [&](unsigned n) {
    return WriteNode(caps / absl::StrCat("nvidia-cap", n), nodes,
                     kNvidiaCapsMajor, n);
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

absl::StatusOr<std::vector<std::string>> GpuDevicePaths(
    const Machine& machine) {
  PcieTree tree(machine);
  std::vector<std::string> paths;
  for (size_t i = 0; i < machine.gpus.size(); ++i) {
    absl::StatusOr<std::string> path = tree.PathOf(machine.gpus[i], i);
    if (!path.ok()) return path.status();
    paths.push_back(*std::move(path));
  }
  return paths;
}

absl::Status WriteRootfs(const Machine& machine,
                         const std::filesystem::path& root, DeviceNodes nodes) {
  absl::StatusOr<std::vector<std::string>> paths = GpuDevicePaths(machine);
  if (!paths.ok()) return paths.status();
  const std::filesystem::path devices = root / "sys/devices";
  const std::filesystem::path links = root / "sys/bus/pci/devices";
  const std::filesystem::path dev = root / "dev";
  for (size_t i = 0; i < machine.gpus.size(); ++i) {
    const Gpu& gpu = machine.gpus[i];
    const std::filesystem::path dir = devices / (*paths)[i];
    if (absl::Status s =
            WriteFile(dir / "numa_node", absl::StrCat(gpu.numa_node, "\n"));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = WriteFile(dir / "class",
                                   absl::StrFormat("0x%06x\n", gpu.pci_class));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = WriteSymlink(
            std::filesystem::path("../../../devices") / (*paths)[i],
            links / FormatSysfsBusId(gpu.pci));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = WriteNode(dev / absl::StrCat("nvidia", gpu.minor),
                                   nodes, kNvidiaMajor, gpu.minor);
        !s.ok()) {
      return s;
    }
  }
  const struct {
    const char* name;
    unsigned major, minor;
  } kControlNodes[] = {
      {"nvidiactl", kNvidiaMajor, kNvidiaCtlMinor},
      {"nvidia-uvm", kNvidiaUvmMajor, 0},
      {"nvidia-uvm-tools", kNvidiaUvmMajor, 1},
      {"nvidia-modeset", kNvidiaMajor, kNvidiaModesetMinor},
  };
  for (const auto& node : kControlNodes) {
    if (absl::Status s =
            WriteNode(dev / node.name, nodes, node.major, node.minor);
        !s.ok()) {
      return s;
    }
  }
  return WriteMigCaps(machine, root, nodes);
}

}  // namespace gdp::fake_nvml
