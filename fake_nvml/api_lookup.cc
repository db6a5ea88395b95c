// Exported NVML entry points: finding device handles.
#include <cstring>
#include <optional>

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
