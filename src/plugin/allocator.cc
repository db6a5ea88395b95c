#include "plugin/allocator.h"

#include <sys/stat.h>

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gdp {
namespace {

const char* const kControlNodes[] = {
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset",
};

}  // namespace

Allocator::Allocator(AllocatorOptions options) : options_(std::move(options)) {
  if (!options_.pass_device_specs) return;
  for (const char* node : kControlNodes) {
    struct stat st;
    if (stat(HostPath(node).c_str(), &st) == 0) control_nodes_.push_back(node);
  }
}

std::string Allocator::HostPath(const std::string& container_path) const {
  const std::string& root = options_.dev_root;
  if (root.empty() || root == "/") return container_path;
  return absl::StrCat(
      root.back() == '/' ? root.substr(0, root.size() - 1) : root,
      container_path);
}

absl::StatusOr<ContainerAllocation> Allocator::Allocate(
    const DeviceList& list, const std::vector<std::string>& ids) const {
  if (ids.empty()) {
    return absl::InvalidArgumentError("allocate request names no devices");
  }
  absl::flat_hash_set<std::string> seen;
  std::vector<const Device*> devices;
  devices.reserve(ids.size());
  for (const std::string& id : ids) {
    const Device* d = list.Find(id);
    if (d == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown device ID '", id, "'"));
    }
    if (!seen.insert(id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ID '", id, "' is requested more than once"));
    }
    if (d->health != Health::kHealthy) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device '", id, "' is unhealthy: ", d->unhealthy_reason));
    }
    devices.push_back(d);
  }

  ContainerAllocation out;
  std::vector<std::string> visible;
  absl::flat_hash_set<std::string> visible_seen;
  for (const Device* d : devices) {
    if (visible_seen.insert(d->visible_id).second) {
      visible.push_back(d->visible_id);
    }
  }
  out.envs["NVIDIA_VISIBLE_DEVICES"] = absl::StrJoin(visible, ",");

  if (options_.pass_device_specs) {
    absl::flat_hash_set<std::string> nodes_seen;
    auto add = [&](const std::string& path) {
      if (nodes_seen.insert(path).second) {
        out.device_specs.push_back({path, HostPath(path), "rw"});
      }
    };
    for (const std::string& node : control_nodes_) add(node);
    for (const Device* d : devices) {
      for (const std::string& node : d->device_nodes) add(node);
    }
  }
  return out;
}

}  // namespace gdp
