#include "device/gpu.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "device/pci_root.h"
#include "nvml/nvml.h"
#include "util/read_file.h"

namespace gdp {
namespace {

// Prefixes an NVML error with `what` (the GPU or MIG device it concerns),
// keeping its NVML code.
absl::Status Prefixed(const std::string& what, const absl::Status& s) {
  absl::Status out(s.code(), absl::StrCat(what, ": ", s.message()));
  s.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

absl::Status ForGpu(unsigned index, const absl::Status& s) {
  return Prefixed(absl::StrCat("GPU ", index), s);
}

LeftOut GpuLeftOut(unsigned index, const absl::Status& s) {
  return {.gpu = index, .mig = std::nullopt, .error = ForGpu(index, s)};
}

LeftOut MigLeftOut(unsigned gpu, unsigned mig, const absl::Status& s) {
  return {.gpu = gpu,
          .mig = mig,
          .error = Prefixed(absl::StrCat("GPU ", gpu, " MIG ", mig), s)};
}

// The name `name_of` gives an identity fact NVML answered, "Unknown" when
// the library lacks its entry point or the GPU does not support the query,
// and NVML's error otherwise.
template <typename T>
absl::StatusOr<std::string> NameOrUnknown(const absl::StatusOr<T>& value,
                                          std::string (*name_of)(T)) {
  if (value.ok()) return name_of(*value);
  const nvmlReturn_t code = NvmlCode(value.status());
  if (code == NVML_ERROR_FUNCTION_NOT_FOUND ||
      code == NVML_ERROR_NOT_SUPPORTED) {
    return std::string("Unknown");
  }
  return value.status();
}

// GPU instance profile ID -> NVML_GPU_INSTANCE_PROFILE_* of GPU `gpu`, for
// the profiles it has.
using GiProfiles = absl::flat_hash_map<unsigned, unsigned>;

absl::StatusOr<GiProfiles> ReadGiProfiles(const Nvml& nvml, nvmlDevice_t gpu) {
  GiProfiles profiles;
  for (unsigned p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; ++p) {
    auto info = nvml.GpuInstanceProfileInfo(gpu, p);
    if (info.ok()) {
      profiles.emplace(info->id, p);
      continue;
    }
    // Profiles the GPU lacks, or this driver does not know.
    const nvmlReturn_t code = NvmlCode(info.status());
    if (code == NVML_ERROR_NOT_SUPPORTED ||
        code == NVML_ERROR_INVALID_ARGUMENT) {
      continue;
    }
    return info.status();
  }
  return profiles;
}

// Describes MIG device `index` (handle `mig`) of GPU `gpu`, whose memory is
// `gpu_memory_bytes`.
absl::StatusOr<MigInfo> DescribeMig(const Nvml& nvml, nvmlDevice_t gpu,
                                    uint64_t gpu_memory_bytes,
                                    const GiProfiles& profiles, unsigned index,
                                    nvmlDevice_t mig) {
  MigInfo m;
  m.index = index;
  auto uuid = nvml.Uuid(mig);
  if (!uuid.ok()) return uuid.status();
  m.uuid = *uuid;
  auto gi = nvml.GpuInstanceId(mig);
  if (!gi.ok()) return gi.status();
  m.gi = *gi;
  auto ci = nvml.ComputeInstanceId(mig);
  if (!ci.ok()) return ci.status();
  m.ci = *ci;
  auto memory = nvml.MemoryTotal(mig);
  if (!memory.ok()) return memory.status();
  m.memory_bytes = *memory;
  auto attributes = nvml.Attributes(mig);
  if (!attributes.ok()) return attributes.status();
  m.gi_slices = attributes->gpuInstanceSliceCount;
  m.ci_slices = attributes->computeInstanceSliceCount;
  m.multiprocessors = attributes->multiprocessorCount;
  m.copy_engines = attributes->sharedCopyEngineCount;
  m.decoders = attributes->sharedDecoderCount;
  m.encoders = attributes->sharedEncoderCount;
  m.jpegs = attributes->sharedJpegCount;
  m.ofas = attributes->sharedOfaCount;
  // The GPU instance's profile decides the name's suffix (e.g. "+me").
  auto gpu_instance = nvml.GpuInstanceById(gpu, m.gi);
  if (!gpu_instance.ok()) return gpu_instance.status();
  auto gi_info = nvml.GpuInstanceInfo(*gpu_instance);
  if (!gi_info.ok()) return gi_info.status();
  m.gi_profile_id = gi_info->profileId;
  m.placement_start = gi_info->placement.start;
  m.placement_size = gi_info->placement.size;
  const auto profile = profiles.find(gi_info->profileId);
  if (profile == profiles.end()) {
    return absl::NotFoundError(absl::StrCat(
        "GPU instance ", m.gi, " has profile ID ", gi_info->profileId,
        ", which no GPU instance profile of its GPU reports"));
  }
  m.profile = MigProfileName(m.gi_slices, m.ci_slices, gpu_memory_bytes,
                             attributes->memorySizeMB,
                             MigProfileSuffix(profile->second));
  return m;
}

// Fills g->migs for GPU `gpu` with MIG enabled. A MIG device NVML cannot
// describe is left out with its error in *unusable. Result on failure: the
// MIG devices cannot be enumerated, or the GPU was lost meanwhile.
absl::Status DiscoverMigs(const Nvml& nvml, nvmlDevice_t gpu, GpuInfo* g,
                          std::vector<LeftOut>* unusable) {
  auto count = nvml.MaxMigDeviceCount(gpu);
  if (!count.ok()) return count.status();
  std::optional<GiProfiles> profiles;
  for (unsigned j = 0; j < *count; ++j) {
    auto mig = nvml.MigDeviceByIndex(gpu, j);
    if (NvmlCode(mig.status()) == NVML_ERROR_NOT_FOUND) continue;
    // A GPU lost on the way is lost as a whole, not MIG device by device.
    if (NvmlCode(mig.status()) == NVML_ERROR_GPU_IS_LOST) return mig.status();
    if (!mig.ok()) {
      unusable->push_back(MigLeftOut(g->index, j, mig.status()));
      continue;
    }
    if (!profiles.has_value()) {
      auto read = ReadGiProfiles(nvml, gpu);
      if (!read.ok()) return read.status();
      profiles = *std::move(read);
    }
    auto info = DescribeMig(nvml, gpu, g->memory_bytes, *profiles, j, *mig);
    if (info.ok()) {
      g->migs.push_back(*std::move(info));
    } else if (NvmlCode(info.status()) == NVML_ERROR_GPU_IS_LOST) {
      return info.status();
    } else {
      unusable->push_back(MigLeftOut(g->index, j, info.status()));
    }
  }
  return absl::OkStatus();
}

// The GPU of `known` (may be null) with `g`'s UUID and PCI bus ID, or null.
const GpuInfo* InSameSlot(const NodeGpus* known, const GpuInfo& g) {
  if (known == nullptr) return nullptr;
  auto it = std::find_if(
      known->gpus.begin(), known->gpus.end(), [&](const GpuInfo& k) {
        return k.uuid == g.uuid && k.pci_bus_id == g.pci_bus_id;
      });
  return it == known->gpus.end() ? nullptr : &*it;
}

absl::StatusOr<GpuInfo> DiscoverOne(const Nvml& nvml, unsigned index,
                                    const std::string& sysfs_root,
                                    const NodeGpus* known,
                                    const DiscoverOptions& options,
                                    std::vector<LeftOut>* unusable) {
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
  auto brand = NameOrUnknown(nvml.Brand(d), BrandName);
  if (!brand.ok()) return brand.status();
  g.brand = *std::move(brand);
  auto architecture = NameOrUnknown(nvml.Architecture(d), ArchitectureName);
  if (!architecture.ok()) return architecture.status();
  g.architecture = *std::move(architecture);
  auto mig = nvml.MigEnabled(d);
  if (mig.ok()) {
    g.mig_capable = true;
    g.mig_enabled = *mig;
  } else if (mig.status().code() != absl::StatusCode::kUnimplemented) {
    return mig.status();
  }
  if (g.mig_enabled) {
    if (absl::Status s = DiscoverMigs(nvml, d, &g, unusable); !s.ok()) {
      return s;
    }
    if (options.mig_profiles) {
      auto profiles = ReadMigProfiles(nvml, d);
      if (!profiles.ok()) return profiles.status();
      g.mig_profiles = *std::move(profiles);
    }
  }
  if (const GpuInfo* before = InSameSlot(known, g); before != nullptr) {
    g.numa_node = before->numa_node;
    g.pcie_root = before->pcie_root;
  } else {
    g.numa_node = ReadNumaNode(sysfs_root, g.pci_bus_id);
    g.pcie_root = ReadPcieRoot(sysfs_root, g.pci_bus_id);
  }
  return g;
}

}  // namespace

std::string MigProfileName(unsigned gi_slices, unsigned ci_slices,
                           uint64_t gpu_memory_bytes, uint64_t mig_memory_mib,
                           const std::string& suffix) {
  constexpr double kEighths = 8;
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  uint64_t gb = 0;
  if (gpu_memory_bytes > 0) {
    double fraction = static_cast<double>(mig_memory_mib << 20) /
                      static_cast<double>(gpu_memory_bytes);
    fraction = std::ceil(fraction * kEighths) / kEighths;
    const auto gpu_gib =
        static_cast<double>((gpu_memory_bytes + kGiB - 1) / kGiB);
    gb = static_cast<uint64_t>(std::round(fraction * gpu_gib));
  }
  const std::string name = absl::StrCat(gi_slices, "g.", gb, "gb", suffix);
  if (ci_slices < gi_slices) return absl::StrCat(ci_slices, "c.", name);
  return name;
}

std::string MigProfileSuffix(unsigned profile) {
  switch (profile) {
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1:
      return "+me";
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
      return "+me.all";
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
      return "-me";
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX:
      return "+gfx";
    default:
      return "";
  }
}

std::string BrandName(nvmlBrandType_t brand) {
  switch (brand) {
    case NVML_BRAND_QUADRO:
      return "Quadro";
    case NVML_BRAND_TESLA:
      return "Tesla";
    case NVML_BRAND_NVS:
      return "NVS";
    case NVML_BRAND_GRID:
      return "Grid";
    case NVML_BRAND_GEFORCE:
      return "GeForce";
    case NVML_BRAND_TITAN:
      return "Titan";
    case NVML_BRAND_NVIDIA_VAPPS:
      return "NvidiaVApps";
    case NVML_BRAND_NVIDIA_VPC:
      return "NvidiaVPC";
    case NVML_BRAND_NVIDIA_VCS:
      return "NvidiaVCS";
    case NVML_BRAND_NVIDIA_VWS:
      return "NvidiaVWS";
    case NVML_BRAND_NVIDIA_CLOUD_GAMING:
      return "NvidiaCloudGaming";
    case NVML_BRAND_QUADRO_RTX:
      return "QuadroRTX";
    case NVML_BRAND_NVIDIA_RTX:
      return "NvidiaRTX";
    case NVML_BRAND_NVIDIA:
      return "Nvidia";
    case NVML_BRAND_GEFORCE_RTX:
      return "GeForceRTX";
    case NVML_BRAND_TITAN_RTX:
      return "TitanRTX";
    default:
      return "Unknown";
  }
}

std::string ArchitectureName(nvmlDeviceArchitecture_t architecture) {
  switch (architecture) {
    case NVML_DEVICE_ARCH_KEPLER:
      return "Kepler";
    case NVML_DEVICE_ARCH_MAXWELL:
      return "Maxwell";
    case NVML_DEVICE_ARCH_PASCAL:
      return "Pascal";
    case NVML_DEVICE_ARCH_VOLTA:
      return "Volta";
    case NVML_DEVICE_ARCH_TURING:
      return "Turing";
    case NVML_DEVICE_ARCH_AMPERE:
      return "Ampere";
    case NVML_DEVICE_ARCH_ADA:
      return "Ada Lovelace";
    case NVML_DEVICE_ARCH_HOPPER:
      return "Hopper";
    case NVML_DEVICE_ARCH_BLACKWELL:
      return "Blackwell";
    case NVML_DEVICE_ARCH_T23X:
      return "Orin";
    default:
      return "Unknown";
  }
}

int ReadNumaNode(const std::string& sysfs_root, const std::string& bus_id) {
  absl::StatusOr<std::string> text = ReadRegularFile(
      absl::StrCat(sysfs_root, "/bus/pci/devices/", bus_id, "/numa_node"),
      {.max_bytes = 64});
  int node = -1;
  if (!text.ok() ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &node) || node < 0) {
    return -1;
  }
  return node;
}

absl::StatusOr<NodeGpus> DiscoverGpus(const Nvml& nvml,
                                      const std::string& sysfs_root,
                                      const NodeGpus* known,
                                      const DiscoverOptions& options) {
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
    std::vector<LeftOut> mig_errors;
    auto gpu = DiscoverOne(nvml, i, sysfs_root, known, options, &mig_errors);
    if (gpu.ok()) {
      node.gpus.push_back(*std::move(gpu));
      for (LeftOut& s : mig_errors) node.unusable.push_back(std::move(s));
    } else {
      node.unusable.push_back(GpuLeftOut(i, gpu.status()));
    }
  }
  return node;
}

}  // namespace gdp
