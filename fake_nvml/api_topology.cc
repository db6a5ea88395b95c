// Exported NVML entry points: PCIe topology and NVLink.
#include <optional>

#include "fake_nvml/api_call.h"
#include "fake_nvml/machine.h"
#include "fake_nvml/nvml_exports.h"

namespace fn = gdp::fake_nvml;

namespace {

// Finds link `link` of the call's GPU: the GPU's "fail-nvlink" code while
// that fault is active, NOT_SUPPORTED when the GPU has no NVLink,
// INVALID_ARGUMENT when `link` is past its last link.
nvmlReturn_t FindLink(const fn::ApiCall& call, unsigned link,
                      const fn::NvLink** out) {
  if (std::optional<nvmlReturn_t> failure =
          call.session().nvlink_failure(call.index())) {
    return *failure;
  }
  const std::vector<fn::NvLink>& links = call.gpu().nvlinks;
  if (links.empty()) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= links.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *out = &links[link];
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(
    nvmlDevice_t device1, nvmlDevice_t device2,
    nvmlGpuTopologyLevel_t* path_info) {
  fn::ApiCall call(device1, device2);
  if (call.status() != NVML_SUCCESS) return call.status();
  unsigned other = 0;
  if (nvmlReturn_t r = call.Resolve(device2, &other); r != NVML_SUCCESS) {
    return r;
  }
  if (path_info == nullptr || other == call.index()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *path_info =
      fn::CommonAncestor(call.gpu(), call.session().machine().gpus[other]);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* is_active) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  const fn::NvLink* nvlink = nullptr;
  if (nvmlReturn_t r = FindLink(call, link, &nvlink); r != NVML_SUCCESS) {
    return r;
  }
  if (is_active == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *is_active = call.session().signals(call.index()).nvlink_active[link]
                   ? NVML_FEATURE_ENABLED
                   : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                 unsigned int link,
                                                 nvmlPciInfo_t* pci) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  const fn::NvLink* nvlink = nullptr;
  if (nvmlReturn_t r = FindLink(call, link, &nvlink); r != NVML_SUCCESS) {
    return r;
  }
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const fn::Machine& machine = call.session().machine();
  if (nvlink->peer_kind == fn::LinkPeer::kGpu) {
    const fn::Gpu& peer = machine.gpus[nvlink->peer];
    *pci = fn::MakePciInfo(peer.pci, peer.pci_device_id, peer.pci_subsystem_id);
  } else {
    const fn::NvSwitch& peer = machine.nvswitches[nvlink->peer];
    *pci = fn::MakePciInfo(peer.pci, peer.pci_device_id, 0);
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(
    nvmlDevice_t device, unsigned int link,
    nvmlIntNvLinkDeviceType_t* node_type) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  const fn::NvLink* nvlink = nullptr;
  if (nvmlReturn_t r = FindLink(call, link, &nvlink); r != NVML_SUCCESS) {
    return r;
  }
  if (node_type == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *node_type = nvlink->peer_kind == fn::LinkPeer::kGpu
                   ? NVML_NVLINK_DEVICE_TYPE_GPU
                   : NVML_NVLINK_DEVICE_TYPE_SWITCH;
  return NVML_SUCCESS;
}

}  // extern "C"
