#include "device/gpu.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nvml/nvml.h"

namespace gdp {
namespace {

// Prefixes an NVML error with the GPU it concerns.
absl::Status ForGpu(unsigned index, const absl::Status& s) {
  absl::Status out(s.code(), absl::StrCat("GPU ", index, ": ", s.message()));
  s.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

absl::StatusOr<GpuInfo> DiscoverOne(const Nvml& nvml, unsigned index,
                                    const std::string& sysfs_root) {
  GpuInfo g;
  g.index = index;
  auto handle = nvml.DeviceByIndex(index);
  if (!handle.ok()) return handle.status();
  nvmlDevice_t d = *handle;
  auto uuid = nvml.Uuid(d);
  if (!uuid.ok()) return uuid.status();
  g.uuid = *uuid;
  auto name = nvml.Name(d);
  if (!name.ok()) return name.status();
  g.name = *name;
  auto minor = nvml.MinorNumber(d);
  if (!minor.ok()) return minor.status();
  g.minor = *minor;
  auto mem = nvml.MemoryTotal(d);
  if (!mem.ok()) return mem.status();
  g.memory_bytes = *mem;
  auto pci = nvml.PciInfo(d);
  if (!pci.ok()) return pci.status();
  g.pci_bus_id =
      absl::StrFormat("%04x:%02x:%02x.0", pci->domain, pci->bus, pci->device);
  auto cc = nvml.ComputeCapability(d);
  if (!cc.ok()) return cc.status();
  g.cc_major = cc->first;
  g.cc_minor = cc->second;
  auto mig = nvml.MigEnabled(d);
  if (mig.ok()) {
    g.mig_capable = true;
    g.mig_enabled = *mig;
  } else if (mig.status().code() != absl::StatusCode::kUnimplemented) {
    return mig.status();
  }
  g.numa_node = ReadNumaNode(sysfs_root, g.pci_bus_id);
  return g;
}

}  // namespace

int ReadNumaNode(const std::string& sysfs_root, const std::string& bus_id) {
  std::ifstream in(
      absl::StrCat(sysfs_root, "/bus/pci/devices/", bus_id, "/numa_node"));
  int node = -1;
  if (!(in >> node) || node < 0) return -1;
  return node;
}

absl::StatusOr<NodeGpus> DiscoverGpus(const Nvml& nvml,
                                      const std::string& sysfs_root) {
  NodeGpus node;
  auto driver = nvml.DriverVersion();
  if (!driver.ok()) return driver.status();
  node.driver_version = *driver;
  auto cuda = nvml.CudaDriverVersion();
  if (!cuda.ok()) return cuda.status();
  node.cuda_driver_version = *cuda;
  auto count = nvml.DeviceCount();
  if (!count.ok()) return count.status();
  for (unsigned i = 0; i < *count; ++i) {
    auto gpu = DiscoverOne(nvml, i, sysfs_root);
    if (gpu.ok()) {
      node.gpus.push_back(*std::move(gpu));
    } else {
      node.unusable.push_back(ForGpu(i, gpu.status()));
    }
  }
  return node;
}

}  // namespace gdp
