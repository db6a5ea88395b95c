// What a prepared claim gives its containers, decided from the claim's
// devices and configuration: which configuration applies to which device
// (NVIDIA's precedence rules), and the CDI devices of the claim's spec
// (device nodes, and MPS settings when asked for). Pure.
#ifndef GDP_DRA_CLAIM_EDITS_H_
#define GDP_DRA_CLAIM_EDITS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cdi/memory_limit.h"
#include "cdi/spec.h"
#include "device/device.h"
#include "dra/claim.h"

namespace gdp::dra {

// The CDI kind of claim specs and how its devices and files are named, as
// NVIDIA's driver names them from its driver name: vendor "k8s.<driver>",
// class "claim", so kind "k8s.<driver>/claim" (k8s.gpu.nvidia.com/claim for
// gpu.nvidia.com), device "<claim UID>-<device name>", file
// "k8s.<driver>-claim_<claim UID>.json". A claim UID with a '/' would make
// a file name cdi::WriteSpec and cdi::RemoveSpec refuse.
std::string ClaimCdiKind(const std::string& driver_name);
// A share of a device (a result with a shareID) is a CDI device of its
// own, "<claim UID>-<device name>-share-<share ID>", so that two shares of
// one GPU (in one claim or two) have distinct names.
std::string ClaimCdiDeviceName(const std::string& claim_uid,
                               const std::string& device,
                               const std::string& share_id = "");
std::string ClaimCdiId(const std::string& driver_name,
                       const std::string& claim_uid, const std::string& device,
                       const std::string& share_id = "");
std::string ClaimSpecFileName(const std::string& driver_name,
                              const std::string& claim_uid);

// The sharing configuration for `result` (a result of our driver, on
// `device`, a MIG device when mig_gi >= 0): the last of `configs` whose
// requests name the result's request (or its parent request, for
// "<request>/<subrequest>"), else the last one naming no request whose
// kind matches the device; NVIDIA's default (time-slicing, Default
// interval) when none does.
// Result on failure: InvalidArgument when the config naming the request is
// of the other kind ("cannot apply GpuConfig to device gpu-0-mig-... of
// type mig (request: gpu)").
absl::StatusOr<Sharing> SharingFor(const std::vector<DeviceConfig>& configs,
                                   const AllocatedDevice& result,
                                   const Device& device);

// One device of a claim: its name (DRA), our model of it, its sharing;
// for a share of it, the share's ID, hard memory limit (bytes, 0: none),
// `shares` consumed and the device's count of shares (0: none).
struct ClaimDevice {
  std::string name;
  Device device;
  Sharing sharing;
  std::string share_id = "";
  uint64_t memory_limit = 0;
  uint64_t shares = 0;
  uint64_t share_count = 0;
  // Nodes given by number as well (a MIG instance made at prepare: its
  // capability nodes, which the host may lack), after device.device_nodes.
  std::vector<cdi::CdiDevice::CharNode> char_nodes = {};
};

// How shares' memory limits are applied: the hook (nullopt: no hook is
// configured, and a share with a memory limit is refused).
struct ShareLimits {
  std::optional<cdi::MemoryLimitHook> hook;
};

// The CDI devices of a claim's spec, one per device: named
// ClaimCdiDeviceName(uid, name), with the device's nodes (and its
// char_nodes, by number). MPS sharing adds
// CUDA_MPS_PIPE_DIRECTORY=/mps/<driver>/pipe with the mounts
// <mps_root>/<driver>/pipe -> /mps/<driver>/pipe and <mps_root>/shm ->
// /dev/shm (the host's MPS control daemon, as the device plugin's MPS),
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE from defaultActiveThreadPercentage and
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT "<ordinal>=<MiB>M,..." (ordinals of the
// claim's MPS devices by GPU index, limits from the per-device map by GPU
// index or UUID, else the default), the same on each MPS device.
// A share (share_id set) is named ClaimCdiDeviceName(uid, name, share_id)
// and, with a memory limit, carries cdi::AddShareLimit's edits for the GPU's
// UUID, keyed "<claim UID>-<share ID>". An MPS share also gets its part of
// the GPU as an MPS client: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE =
// shares * 100 / share_count (at least 1; the lower of that and the
// config's), and its memory limit as its pinned device memory limit (the
// lower of that and the config's), so that a driver without cgroup memory
// limits still holds the share to it.
// Result on failure: FailedPrecondition for MPS without `mps_root`, or a
// time-slice interval other than Default (this driver does not change a
// GPU's time slice), or a share with a memory limit and no hook, naming the
// device, or shares the hook cannot apply in one container
// (cdi::CheckContainerShares: with NVIDIA's hook, two shares of one GPU or
// shares of different limits in one claim); InvalidArgument from
// cdi::AddShareLimit (a limit not in whole MiB, a MIG device's UUID, a share
// key over 128 characters).
absl::StatusOr<std::vector<cdi::CdiDevice>> ClaimCdiDevices(
    const std::string& claim_uid, const std::vector<ClaimDevice>& devices,
    const std::string& driver_name, const std::string& mps_root,
    const ShareLimits& limits = {});

}  // namespace gdp::dra

#endif  // GDP_DRA_CLAIM_EDITS_H_
