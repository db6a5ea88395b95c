#include "nvml/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "metrics/registry.h"
#include "nvml/nvml_internal.h"
#include "util/logging.h"

namespace gdp {

namespace {

constexpr char kSoname[] = "libnvidia-ml.so.1";

// Library directories under a driver root, as drivers install them.
const char* const kLibDirs[] = {
    "usr/lib64",
    "usr/lib/x86_64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "lib64",
    "lib/x86_64-linux-gnu",
    "lib/aarch64-linux-gnu",
    "usr/lib",
    "lib",
};

absl::StatusCode CodeFor(nvmlReturn_t r) {
  switch (r) {
    case NVML_ERROR_INVALID_ARGUMENT:
      return absl::StatusCode::kInvalidArgument;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return absl::StatusCode::kUnimplemented;
    case NVML_ERROR_NO_PERMISSION:
      return absl::StatusCode::kPermissionDenied;
    case NVML_ERROR_NOT_FOUND:
      return absl::StatusCode::kNotFound;
    case NVML_ERROR_TIMEOUT:
      return absl::StatusCode::kDeadlineExceeded;
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return absl::StatusCode::kResourceExhausted;
    case NVML_ERROR_IN_USE:
      return absl::StatusCode::kFailedPrecondition;
    case NVML_ERROR_UNINITIALIZED:
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return absl::StatusCode::kFailedPrecondition;
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_RESET_REQUIRED:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

// Counts a failed NVML call in gpu_device_plugin_nvml_errors_total. A
// timeout is an event wait that saw no event, not an error.
void CountError(const char* call, nvmlReturn_t r) {
  static metrics::Family<metrics::Counter>& errors =
      metrics::DefaultRegistry().AddCounter(
          "gpu_device_plugin_nvml_errors_total",
          "NVML calls that returned an error, by function and nvmlReturn_t "
          "code; event wait timeouts are not counted.",
          {"function", "code"});
  if (r == NVML_SUCCESS || r == NVML_ERROR_TIMEOUT) return;
  errors.With({call, absl::StrCat(static_cast<int>(r))}).Increment();
}

// `s` with the cgroup it was about added to its message; the payload (the
// NVML code) stays.
absl::Status AddCgroup(const absl::Status& s, const std::string& cgroup_dir) {
  absl::Status out(s.code(),
                   absl::StrCat(s.message(), " (cgroup ", cgroup_dir, ")"));
  s.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Nvml>> Nvml::Open(
    const std::string& driver_root) {
  std::vector<std::string> candidates;
  if (driver_root.empty() || driver_root == "/") {
    candidates.push_back(kSoname);
  } else {
    for (const char* dir : kLibDirs) {
      candidates.push_back(absl::StrCat(driver_root, "/", dir, "/", kSoname));
    }
  }
  void* lib = nullptr;
  std::string path;
  std::vector<std::string> failures;
  for (const std::string& c : candidates) {
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      path = c;
      break;
    }
    const char* err = dlerror();
    failures.push_back(err != nullptr ? err : c);
  }
  if (lib == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "cannot load NVML (", kSoname, ") from driver root '",
        driver_root.empty() ? "/" : driver_root,
        "': is the NVIDIA driver installed and the driver root right? tried: ",
        absl::StrJoin(failures, "; ")));
  }
  auto fns = std::make_unique<NvmlSymbols>();
  std::vector<std::string> missing;
#define GDP_NVML_RESOLVE(name)                                \
  fns->name = reinterpret_cast<Fn_##name>(dlsym(lib, #name)); \
  if (fns->name == nullptr) missing.push_back(#name);
  GDP_NVML_SYMBOLS(GDP_NVML_RESOLVE)
#undef GDP_NVML_RESOLVE
#define GDP_NVML_RESOLVE_OPTIONAL(name) \
  fns->name = reinterpret_cast<Fn_##name>(dlsym(lib, #name));
  GDP_NVML_MIG_SYMBOLS(GDP_NVML_RESOLVE_OPTIONAL)
  GDP_NVML_MIG_MAKE_SYMBOLS(GDP_NVML_RESOLVE_OPTIONAL)
  GDP_NVML_WAIT_SYMBOLS(GDP_NVML_RESOLVE_OPTIONAL)
  GDP_NVML_TOPOLOGY_SYMBOLS(GDP_NVML_RESOLVE_OPTIONAL)
  GDP_NVML_IDENTITY_SYMBOLS(GDP_NVML_RESOLVE_OPTIONAL)
  GDP_NVML_HEALTH_SYMBOLS(GDP_NVML_RESOLVE_OPTIONAL)
  GDP_NVML_MEMORY_LIMIT_SYMBOLS(GDP_NVML_RESOLVE_OPTIONAL)
#undef GDP_NVML_RESOLVE_OPTIONAL
  if (!missing.empty()) {
    dlclose(lib);
    return absl::FailedPreconditionError(
        absl::StrCat(path, " lacks NVML entry points (driver too old?): ",
                     absl::StrJoin(missing, ", ")));
  }
  nvmlReturn_t r = fns->nvmlInit_v2();
  if (r != NVML_SUCCESS) {
    CountError("nvmlInit_v2", r);
    absl::Status s(CodeFor(r), absl::StrCat("nvmlInit_v2 (", path, ") failed: ",
                                            fns->nvmlErrorString(r)));
    s.SetPayload(kNvmlPayloadUrl,
                 absl::Cord(absl::StrCat(static_cast<int>(r))));
    dlclose(lib);
    return s;
  }
  return std::unique_ptr<Nvml>(new Nvml(lib, path, std::move(fns)));
}

Nvml::Nvml(void* lib, std::string path, std::unique_ptr<NvmlSymbols> fns)
    : lib_(lib), library_path_(std::move(path)), fns_(std::move(fns)) {}

Nvml::~Nvml() {
  // A runner's worker left behind (a given-up job) may still call in; its
  // call returns by itself unless it hangs, and then main never destroys
  // this (util/keep_until_exit.h).
  if (!gate_.WaitForWorkers(absl::Seconds(10))) {
    LOG_ERROR("NVML is still in use by a hung call; not shutting it down");
    return;
  }
  fns_->nvmlShutdown();
  dlclose(lib_);
}

absl::Status Nvml::Check(nvmlReturn_t r, const char* call) const {
  if (r == NVML_SUCCESS) return absl::OkStatus();
  CountError(call, r);
  absl::Status s(CodeFor(r),
                 absl::StrCat(call, ": ", fns_->nvmlErrorString(r)));
  s.SetPayload(kNvmlPayloadUrl, absl::Cord(absl::StrCat(static_cast<int>(r))));
  return s;
}

absl::StatusOr<std::string> Nvml::DeviceString(Fn_nvmlDeviceGetName fn,
                                               nvmlDevice_t device,
                                               unsigned size,
                                               const char* call) const {
  std::string buf(size, '\0');
  absl::Status s = Guarded(call, device, nullptr,
                           [&] { return fn(device, buf.data(), size); });
  if (!s.ok()) return s;
  buf.resize(buf.find('\0'));
  return buf;
}

absl::StatusOr<std::string> Nvml::DriverVersion() const {
  std::string buf(NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE, '\0');
  absl::Status s = Guarded("nvmlSystemGetDriverVersion", nullptr, nullptr, [&] {
    return fns_->nvmlSystemGetDriverVersion(buf.data(),
                                            static_cast<unsigned>(buf.size()));
  });
  if (!s.ok()) return s;
  buf.resize(buf.find('\0'));
  return buf;
}

absl::StatusOr<int> Nvml::CudaDriverVersion() const {
  int v = 0;
  absl::Status s =
      Guarded("nvmlSystemGetCudaDriverVersion_v2", nullptr, nullptr,
              [&] { return fns_->nvmlSystemGetCudaDriverVersion_v2(&v); });
  if (!s.ok()) return s;
  return v;
}

absl::StatusOr<unsigned> Nvml::DeviceCount() const {
  unsigned n = 0;
  absl::Status s = Guarded("nvmlDeviceGetCount_v2", nullptr, nullptr,
                           [&] { return fns_->nvmlDeviceGetCount_v2(&n); });
  if (!s.ok()) return s;
  return n;
}

absl::StatusOr<nvmlDevice_t> Nvml::DeviceByIndex(unsigned index) const {
  nvmlDevice_t d = nullptr;
  absl::Status s =
      Guarded("nvmlDeviceGetHandleByIndex_v2", gate_.HandleAt(index), nullptr,
              [&] { return fns_->nvmlDeviceGetHandleByIndex_v2(index, &d); });
  if (!s.ok()) return s;
  gate_.NameIndex(index, d);
  return d;
}

absl::StatusOr<std::string> Nvml::Name(nvmlDevice_t device) const {
  return DeviceString(fns_->nvmlDeviceGetName, device,
                      NVML_DEVICE_NAME_V2_BUFFER_SIZE, "nvmlDeviceGetName");
}

absl::StatusOr<std::string> Nvml::Uuid(nvmlDevice_t device) const {
  absl::StatusOr<std::string> uuid =
      DeviceString(fns_->nvmlDeviceGetUUID, device,
                   NVML_DEVICE_UUID_V2_BUFFER_SIZE, "nvmlDeviceGetUUID");
  if (uuid.ok()) gate_.Name(device, *uuid);
  return uuid;
}

absl::StatusOr<unsigned> Nvml::MinorNumber(nvmlDevice_t device) const {
  unsigned minor = 0;
  absl::Status s = Guarded("nvmlDeviceGetMinorNumber", device, nullptr, [&] {
    return fns_->nvmlDeviceGetMinorNumber(device, &minor);
  });
  if (!s.ok()) return s;
  return minor;
}

absl::StatusOr<bool> Nvml::NvLinkActive(nvmlDevice_t device,
                                        unsigned link) const {
  nvmlEnableState_t state = NVML_FEATURE_DISABLED;
  absl::Status s =
      CallOptional(fns_->nvmlDeviceGetNvLinkState, "nvmlDeviceGetNvLinkState",
                   device, link, &state);
  if (!s.ok()) return s;
  return state == NVML_FEATURE_ENABLED;
}

absl::StatusOr<NvmlNvLinkPeer> Nvml::NvLinkPeer(nvmlDevice_t device,
                                                unsigned link) const {
  nvmlPciInfo_t pci{};
  absl::Status s =
      CallOptional(fns_->nvmlDeviceGetNvLinkRemotePciInfo_v2,
                   "nvmlDeviceGetNvLinkRemotePciInfo_v2", device, link, &pci);
  if (!s.ok()) return s;
  NvmlNvLinkPeer peer;
  peer.pci = NvmlPci{pci.domain, pci.bus, pci.device, pci.pciDeviceId};
  nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
  s = CallOptional(fns_->nvmlDeviceGetNvLinkRemoteDeviceType,
                   "nvmlDeviceGetNvLinkRemoteDeviceType", device, link, &type);
  if (!s.ok() && NvmlCode(s) != NVML_ERROR_FUNCTION_NOT_FOUND) return s;
  peer.type = s.ok() ? type : NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
  return peer;
}

absl::StatusOr<nvmlGpuTopologyLevel_t> Nvml::CommonAncestor(
    nvmlDevice_t a, nvmlDevice_t b) const {
  nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
  absl::Status s;
  if (fns_->nvmlDeviceGetTopologyCommonAncestor == nullptr) {
    s = CallOptional(fns_->nvmlDeviceGetTopologyCommonAncestor,
                     "nvmlDeviceGetTopologyCommonAncestor", a, b, &level);
  } else {
    s = Guarded("nvmlDeviceGetTopologyCommonAncestor", a, b, [&] {
      return fns_->nvmlDeviceGetTopologyCommonAncestor(a, b, &level);
    });
  }
  if (!s.ok()) return s;
  return level;
}

absl::StatusOr<NvmlPci> Nvml::PciInfo(nvmlDevice_t device) const {
  nvmlPciInfo_t pci{};
  absl::Status s = Guarded("nvmlDeviceGetPciInfo_v3", device, nullptr, [&] {
    return fns_->nvmlDeviceGetPciInfo_v3(device, &pci);
  });
  if (!s.ok()) return s;
  return NvmlPci{pci.domain, pci.bus, pci.device, pci.pciDeviceId};
}

absl::StatusOr<nvmlBrandType_t> Nvml::Brand(nvmlDevice_t device) const {
  nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
  absl::Status s = CallOptional(fns_->nvmlDeviceGetBrand, "nvmlDeviceGetBrand",
                                device, &brand);
  if (!s.ok()) return s;
  return brand;
}

absl::StatusOr<nvmlDeviceArchitecture_t> Nvml::Architecture(
    nvmlDevice_t device) const {
  nvmlDeviceArchitecture_t arch = NVML_DEVICE_ARCH_UNKNOWN;
  absl::Status s = CallOptional(fns_->nvmlDeviceGetArchitecture,
                                "nvmlDeviceGetArchitecture", device, &arch);
  if (!s.ok()) return s;
  return arch;
}

absl::StatusOr<unsigned long long> Nvml::MemoryTotal(
    nvmlDevice_t device) const {
  nvmlMemory_t mem{};
  absl::Status s = Guarded("nvmlDeviceGetMemoryInfo", device, nullptr, [&] {
    return fns_->nvmlDeviceGetMemoryInfo(device, &mem);
  });
  if (!s.ok()) return s;
  return mem.total;
}

absl::StatusOr<std::pair<int, int>> Nvml::ComputeCapability(
    nvmlDevice_t device) const {
  int major = 0, minor = 0;
  absl::Status s =
      Guarded("nvmlDeviceGetCudaComputeCapability", device, nullptr, [&] {
        return fns_->nvmlDeviceGetCudaComputeCapability(device, &major, &minor);
      });
  if (!s.ok()) return s;
  return std::pair{major, minor};
}

absl::StatusOr<nvmlDevice_t> Nvml::DeviceByUuid(const std::string& uuid) const {
  nvmlDevice_t d = nullptr;
  absl::Status s = Guarded(
      "nvmlDeviceGetHandleByUUID", gate_.HandleOf(uuid), nullptr,
      [&] { return fns_->nvmlDeviceGetHandleByUUID(uuid.c_str(), &d); });
  if (!s.ok()) return s;
  return d;
}

absl::StatusOr<NvmlRemappedRows> Nvml::RemappedRows(nvmlDevice_t device) const {
  unsigned corrected = 0, uncorrectable = 0, pending = 0, failure = 0;
  absl::Status s =
      CallOptional(fns_->nvmlDeviceGetRemappedRows, "nvmlDeviceGetRemappedRows",
                   device, &corrected, &uncorrectable, &pending, &failure);
  if (!s.ok()) return s;
  return NvmlRemappedRows{corrected, uncorrectable, pending != 0, failure != 0};
}

absl::StatusOr<bool> Nvml::RetiredPagesPending(nvmlDevice_t device) const {
  nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
  absl::Status s =
      CallOptional(fns_->nvmlDeviceGetRetiredPagesPendingStatus,
                   "nvmlDeviceGetRetiredPagesPendingStatus", device, &pending);
  if (!s.ok()) return s;
  return pending == NVML_FEATURE_ENABLED;
}

absl::StatusOr<NvmlPcieLink> Nvml::PcieLink(nvmlDevice_t device) const {
  NvmlPcieLink link;
  absl::Status s =
      CallOptional(fns_->nvmlDeviceGetCurrPcieLinkGeneration,
                   "nvmlDeviceGetCurrPcieLinkGeneration", device, &link.gen);
  if (s.ok()) {
    s = CallOptional(fns_->nvmlDeviceGetMaxPcieLinkGeneration,
                     "nvmlDeviceGetMaxPcieLinkGeneration", device,
                     &link.max_gen);
  }
  if (s.ok()) {
    s = CallOptional(fns_->nvmlDeviceGetCurrPcieLinkWidth,
                     "nvmlDeviceGetCurrPcieLinkWidth", device, &link.width);
  }
  if (s.ok()) {
    s = CallOptional(fns_->nvmlDeviceGetMaxPcieLinkWidth,
                     "nvmlDeviceGetMaxPcieLinkWidth", device, &link.max_width);
  }
  if (!s.ok()) return s;
  return link;
}

absl::StatusOr<unsigned long long> Nvml::ThrottleReasons(
    nvmlDevice_t device) const {
  unsigned long long reasons = 0;
  absl::Status s = CallOptional(fns_->nvmlDeviceGetCurrentClocksThrottleReasons,
                                "nvmlDeviceGetCurrentClocksThrottleReasons",
                                device, &reasons);
  if (!s.ok()) return s;
  return reasons;
}

namespace {

// A field's value as an unsigned integer; nullopt for a negative or
// fractional one, or a type this code does not know.
std::optional<unsigned long long> UnsignedValue(const nvmlFieldValue_t& v) {
  switch (v.valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return v.value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return v.value.ulVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return v.value.ullVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
      return v.value.usVal;
    case NVML_VALUE_TYPE_SIGNED_INT:
      if (v.value.siVal >= 0) return v.value.siVal;
      return std::nullopt;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      if (v.value.sllVal >= 0) return v.value.sllVal;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

}  // namespace

absl::StatusOr<NvmlResetMarkers> Nvml::ResetMarkers(nvmlDevice_t device) const {
  nvmlFieldValue_t values[3] = {};
  values[0].fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
  values[1].fieldId = NVML_FI_DEV_ECC_SBE_VOL_TOTAL;
  values[2].fieldId = NVML_FI_DEV_ECC_DBE_VOL_TOTAL;
  absl::Status s = CallOptional(fns_->nvmlDeviceGetFieldValues,
                                "nvmlDeviceGetFieldValues", device, 3, values);
  if (!s.ok()) return s;
  std::optional<unsigned long long> read[3];
  for (int i = 0; i < 3; ++i) {
    if (values[i].nvmlReturn == NVML_ERROR_GPU_IS_LOST) {
      return Check(NVML_ERROR_GPU_IS_LOST, "nvmlDeviceGetFieldValues");
    }
    if (values[i].nvmlReturn == NVML_SUCCESS)
      read[i] = UnsignedValue(values[i]);
  }
  NvmlResetMarkers m;
  if (read[0].has_value() && *read[0] <= 0xFFFFFFFFu) {
    m.recovery_action = static_cast<unsigned>(*read[0]);
  }
  m.volatile_sbe = read[1];
  m.volatile_dbe = read[2];
  return m;
}

absl::StatusOr<unsigned long long> Nvml::SupportedEventTypes(
    nvmlDevice_t device) const {
  unsigned long long types = 0;
  absl::Status s = Guarded(
      "nvmlDeviceGetSupportedEventTypes", device, nullptr,
      [&] { return fns_->nvmlDeviceGetSupportedEventTypes(device, &types); });
  if (!s.ok()) return s;
  return types;
}

bool Nvml::HasMemoryLimits() const {
  return fns_->nvmlDeviceSetMemoryLimits_v1 != nullptr &&
         fns_->nvmlDeviceGetMemoryLimits_v1 != nullptr;
}

absl::Status Nvml::SetMemoryLimits(nvmlDevice_t device,
                                   const std::string& cgroup_dir,
                                   unsigned long long soft,
                                   unsigned long long hard) const {
  nvmlSetMemoryLimits_v1_t limits{};
  limits.nameSpace = cgroup_dir.c_str();
  limits.softLimit = soft;
  limits.hardLimit = hard;
  absl::Status s =
      CallOptional(fns_->nvmlDeviceSetMemoryLimits_v1,
                   "nvmlDeviceSetMemoryLimits_v1", device, &limits);
  if (s.ok()) return s;
  return AddCgroup(s, cgroup_dir);
}

absl::StatusOr<NvmlMemoryLimits> Nvml::GetMemoryLimits(
    nvmlDevice_t device, const std::string& cgroup_dir) const {
  nvmlGetMemoryLimits_v1_t limits{};
  limits.nameSpace = cgroup_dir.c_str();
  absl::Status s =
      CallOptional(fns_->nvmlDeviceGetMemoryLimits_v1,
                   "nvmlDeviceGetMemoryLimits_v1", device, &limits);
  if (!s.ok()) return AddCgroup(s, cgroup_dir);
  return NvmlMemoryLimits{limits.softLimit, limits.hardLimit,
                          limits.currentUsed};
}

nvmlReturn_t NvmlCode(const absl::Status& status) {
  if (status.ok()) return NVML_SUCCESS;
  auto p = status.GetPayload(kNvmlPayloadUrl);
  int code = 0;
  if (!p.has_value() || !absl::SimpleAtoi(std::string(*p), &code)) {
    return NVML_ERROR_UNKNOWN;
  }
  return static_cast<nvmlReturn_t>(code);
}

}  // namespace gdp
