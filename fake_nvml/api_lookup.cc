// Exported NVML entry points: finding device handles.
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fake_nvml/api_call.h"
#include "fake_nvml/machine.h"
#include "fake_nvml/nvml_exports.h"

namespace fn = gdp::fake_nvml;

namespace {

// Hands out the handle of GPU `index`, which must exist: GPU_IS_LOST when it
// is lost, INVALID_ARGUMENT for a null `device`.
nvmlReturn_t HandOut(const fn::ApiCall& call, unsigned index,
                     nvmlDevice_t* device) {
  if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (call.session().lost(index)) return NVML_ERROR_GPU_IS_LOST;
  *device = call.session().Handle(index);
  return NVML_SUCCESS;
}

// Hands out the handle of MIG device `mig` of GPU `gpu`, as HandOut.
nvmlReturn_t HandOutMig(const fn::ApiCall& call, unsigned gpu, unsigned mig,
                        nvmlDevice_t* device) {
  if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (call.session().lost(gpu)) return NVML_ERROR_GPU_IS_LOST;
  *device = call.session().MigHandle(gpu, mig);
  return NVML_SUCCESS;
}

// Finds the MIG device named by `uuid`, either its own UUID ("MIG-<uuid>")
// or the older form "MIG-GPU-<gpu uuid>/<gi>/<ci>".
std::optional<std::pair<unsigned, unsigned>> FindMig(const fn::Machine& machine,
                                                     absl::string_view uuid) {
  for (unsigned g = 0; g < machine.gpus.size(); ++g) {
    const fn::Gpu& gpu = machine.gpus[g];
    for (unsigned m = 0; m < gpu.mig_devices.size(); ++m) {
      const fn::MigDevice& mig = gpu.mig_devices[m];
      const fn::GpuInstance& gi = gpu.gpu_instances[mig.gpu_instance];
      const unsigned ci = gi.compute_instances[mig.compute_instance].id;
      if (uuid == mig.uuid ||
          uuid == absl::StrCat("MIG-", gpu.uuid, "/", gi.id, "/", ci)) {
        return std::pair{g, m};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                           nvmlDevice_t* device) {
  fn::ApiCall call;
  if (call.status() != NVML_SUCCESS) return call.status();
  if (index >= call.session().gpu_count()) return NVML_ERROR_INVALID_ARGUMENT;
  return HandOut(call, index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index,
                                        nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  fn::ApiCall call;
  if (call.status() != NVML_SUCCESS) return call.status();
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto& gpus = call.session().machine().gpus;
  for (unsigned i = 0; i < gpus.size(); ++i) {
    if (gpus[i].uuid == uuid) return HandOut(call, i, device);
  }
  if (auto mig = FindMig(call.session().machine(), uuid)) {
    return HandOutMig(call, mig->first, mig->second, device);
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pci_bus_id,
                                              nvmlDevice_t* device) {
  fn::ApiCall call;
  if (call.status() != NVML_SUCCESS) return call.status();
  if (pci_bus_id == nullptr || device == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const std::optional<fn::PciAddress> address = fn::ParsePciAddress(pci_bus_id);
  if (!address.has_value()) return NVML_ERROR_INVALID_ARGUMENT;
  const auto& gpus = call.session().machine().gpus;
  for (unsigned i = 0; i < gpus.size(); ++i) {
    if (gpus[i].pci == *address) return HandOut(call, i, device);
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* pci_bus_id,
                                           nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id, device);
}

}  // extern "C"
