#include "dra/claim_edits.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "config/config.h"

namespace gdp::dra {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

bool NamesRequest(const DeviceConfig& c, const std::string& request) {
  return std::any_of(
      c.requests.begin(), c.requests.end(), [&](const std::string& r) {
        return r == request || absl::StartsWith(request, absl::StrCat(r, "/"));
      });
}

const char* KindName(DeviceConfig::Kind k) {
  return k == DeviceConfig::Kind::kGpu ? "GpuConfig" : "MigDeviceConfig";
}

const char* IntervalName(Sharing::Interval i) {
  switch (i) {
    case Sharing::Interval::kDefault:
      return "Default";
    case Sharing::Interval::kShort:
      return "Short";
    case Sharing::Interval::kMedium:
      return "Medium";
    case Sharing::Interval::kLong:
      return "Long";
  }
  return "unknown";
}

// A mount as NVIDIA's MPS edits make them.
cdi::CdiDevice::Mount RwBind(std::string host, std::string container) {
  return {
      std::move(host), std::move(container), {"rw", "nosuid", "nodev", "bind"}};
}

}  // namespace

std::string ClaimCdiDeviceName(const std::string& claim_uid,
                               const std::string& device,
                               const std::string& share_id) {
  if (share_id.empty()) return absl::StrCat(claim_uid, "-", device);
  return absl::StrCat(claim_uid, "-", device, "-share-", share_id);
}

std::string ClaimCdiKind(const std::string& driver_name) {
  return absl::StrCat("k8s.", driver_name, "/claim");
}

std::string ClaimCdiId(const std::string& driver_name,
                       const std::string& claim_uid, const std::string& device,
                       const std::string& share_id) {
  return absl::StrCat(ClaimCdiKind(driver_name), "=",
                      ClaimCdiDeviceName(claim_uid, device, share_id));
}

std::string ClaimSpecFileName(const std::string& driver_name,
                              const std::string& claim_uid) {
  return absl::StrCat("k8s.", driver_name, "-claim_", claim_uid, ".json");
}

absl::StatusOr<Sharing> SharingFor(const std::vector<DeviceConfig>& configs,
                                   const AllocatedDevice& result,
                                   const Device& device) {
  const DeviceConfig::Kind kind =
      device.mig_gi >= 0 ? DeviceConfig::Kind::kMig : DeviceConfig::Kind::kGpu;
  for (auto it = configs.rbegin(); it != configs.rend(); ++it) {
    if (it->requests.empty()) continue;
    if (!NamesRequest(*it, result.request)) continue;
    if (it->kind != kind) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot apply ", KindName(it->kind), " to device ", result.device,
          " of type ", kind == DeviceConfig::Kind::kMig ? "mig" : "gpu",
          " (request: ", result.request, ")"));
    }
    return it->sharing;
  }
  for (auto it = configs.rbegin(); it != configs.rend(); ++it) {
    if (it->requests.empty() && it->kind == kind) return it->sharing;
  }
  return Sharing{};
}

absl::StatusOr<std::vector<cdi::CdiDevice>> ClaimCdiDevices(
    const std::string& claim_uid, const std::vector<ClaimDevice>& devices,
    const std::string& driver_name, const std::string& mps_root,
    const ShareLimits& share_limits) {
  // The MPS devices in the order CUDA numbers them in a container.
  std::vector<const ClaimDevice*> mps;
  for (const ClaimDevice& d : devices) {
    const Sharing& s = d.sharing;
    if (s.strategy == Sharing::Strategy::kTimeSlicing &&
        s.interval != Sharing::Interval::kDefault) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device ", d.name, ": time-slice interval ", IntervalName(s.interval),
          " cannot be applied: this driver does not change a GPU's time "
          "slice (use interval Default, or leave sharing out)"));
    }
    if (s.strategy == Sharing::Strategy::kMps) {
      if (mps_root.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "device ", d.name,
            ": MPS sharing needs the host's MPS control daemon directory "
            "(--mps-root), which is not set"));
      }
      mps.push_back(&d);
    }
  }
  std::stable_sort(mps.begin(), mps.end(),
                   [](const ClaimDevice* a, const ClaimDevice* b) {
                     return a->device.gpu_index < b->device.gpu_index;
                   });
  std::vector<std::string> mps_env;
  std::vector<cdi::CdiDevice::Mount> mps_mounts;
  if (!mps.empty()) {
    const std::string pipe = absl::StrCat("/", driver_name, "/pipe");
    const std::string container_pipe = absl::StrCat(kMpsContainerRoot, pipe);
    mps_env.push_back(absl::StrCat("CUDA_MPS_PIPE_DIRECTORY=", container_pipe));
    mps_mounts.push_back(RwBind(absl::StrCat(mps_root, pipe), container_pipe));
    mps_mounts.push_back(RwBind(absl::StrCat(mps_root, "/shm"), "/dev/shm"));
    // One value for the claim: the first device's percentage (NVIDIA's
    // daemon takes one default too), lowered to the first share's part of
    // its GPU.
    std::optional<int> percentage;
    for (const ClaimDevice* d : mps) {
      if (d->sharing.active_thread_percentage.has_value()) {
        percentage = *d->sharing.active_thread_percentage;
        break;
      }
    }
    for (const ClaimDevice* d : mps) {
      if (d->shares == 0 || d->share_count == 0) continue;
      const int part = static_cast<int>(std::clamp<uint64_t>(
          d->shares * 100 / d->share_count, uint64_t{1}, uint64_t{100}));
      percentage = percentage.has_value() ? std::min(*percentage, part) : part;
      break;
    }
    if (percentage.has_value()) {
      mps_env.push_back(
          absl::StrCat("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=", *percentage));
    }
    std::vector<std::string> limits;
    for (size_t i = 0; i < mps.size(); ++i) {
      const Sharing& s = mps[i]->sharing;
      std::optional<uint64_t> bytes = s.pinned_memory_limit;
      for (const std::string& key :
           {absl::StrCat(mps[i]->device.gpu_index), mps[i]->device.visible_id,
            mps[i]->device.gpu_uuid}) {
        if (auto it = s.per_device_pinned_memory_limit.find(key);
            it != s.per_device_pinned_memory_limit.end()) {
          bytes = it->second;
          break;
        }
      }
      if (mps[i]->memory_limit > 0) {
        bytes = bytes.has_value() ? std::min(*bytes, mps[i]->memory_limit)
                                  : mps[i]->memory_limit;
      }
      if (bytes.has_value() && *bytes / kMiB > 0) {
        limits.push_back(absl::StrCat(i, "=", *bytes / kMiB, "M"));
      }
    }
    if (!limits.empty()) {
      mps_env.push_back(absl::StrCat("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=",
                                     absl::StrJoin(limits, ",")));
    }
  }
  std::vector<cdi::CdiDevice> out;
  for (const ClaimDevice& d : devices) {
    cdi::CdiDevice c;
    c.name = ClaimCdiDeviceName(claim_uid, d.name, d.share_id);
    c.device_nodes = d.device.device_nodes;
    c.char_nodes = d.char_nodes;
    if (d.sharing.strategy == Sharing::Strategy::kMps) {
      c.env = mps_env;
      c.mounts = mps_mounts;
    }
    if (!d.share_id.empty() && d.memory_limit > 0) {
      if (!share_limits.hook.has_value()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "device ", d.name, " share ", d.share_id,
            ": a memory limit is asked for and no memory-limit hook is "
            "configured"));
      }
      if (absl::Status s = cdi::AddShareLimit(
              *share_limits.hook, d.device.gpu_uuid, d.memory_limit,
              absl::StrCat(claim_uid, "-", d.share_id), &c);
          !s.ok()) {
        return absl::Status(
            s.code(), absl::StrCat("device ", d.name, " share ", d.share_id,
                                   ": ", s.message()));
      }
    }
    out.push_back(std::move(c));
  }
  // Each share is valid alone; a container given the claim gets all of
  // them, so the hook must be able to apply them together (NVIDIA's cannot
  // add up two shares of one GPU, nor hold different limits).
  if (share_limits.hook.has_value()) {
    std::vector<cdi::ShareLimit> shares;
    for (const ClaimDevice& d : devices) {
      if (!d.share_id.empty() && d.memory_limit > 0) {
        shares.push_back({d.device.gpu_uuid, d.memory_limit});
      }
    }
    if (absl::Status s = cdi::CheckContainerShares(*share_limits.hook, shares);
        !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("the claim's ", shares.size(),
                                                 " shares: ", s.message()));
    }
  }
  return out;
}

}  // namespace gdp::dra
