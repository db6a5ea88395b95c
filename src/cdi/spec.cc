#include "cdi/spec.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cdi/nvidia_hooks.h"
#include "cdi/root_path.h"
#include "cdi/validate.h"
#include "util/logging.h"

namespace gdp::cdi {
namespace {

using nlohmann::json;

bool IsSlash(const std::string& root) {
  return root.empty() || root.find_first_not_of('/') == std::string::npos;
}

json DeviceNode(const std::string& path, const std::string& dev_root) {
  json node = {{"path", path}};
  if (!IsSlash(dev_root)) node["hostPath"] = JoinRoot(dev_root, path);
  return node;
}

json Hooks(const std::vector<CdiDevice::Hook>& hooks) {
  json out = json::array();
  for (const CdiDevice::Hook& h : hooks) {
    json hook = {{"hookName", h.hook_name}, {"path", h.path}};
    if (!h.args.empty()) hook["args"] = h.args;
    if (!h.env.empty()) hook["env"] = h.env;
    if (h.timeout_seconds != 0) hook["timeout"] = h.timeout_seconds;
    out.push_back(std::move(hook));
  }
  return out;
}

}  // namespace

const std::vector<std::string>& DriverMountOptions() {
  static const auto* const kOptions =
      new std::vector<std::string>{"ro", "nosuid", "nodev", "bind"};
  return *kOptions;
}

std::string QualifiedName(const std::string& device_name) {
  return absl::StrCat(kKind, "=", device_name);
}

std::string SpecFileName() {
  return absl::StrCat(kVendor, "-", kClass, ".json");
}

absl::StatusOr<json> BuildSpec(const CdiSpecOptions& options,
                               const DriverFiles& files,
                               const std::vector<std::string>& control_nodes,
                               const std::vector<Device>& devices,
                               const DeviceEdit& edit,
                               const ReplicaEdit& replica_edit) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("no devices to put in the CDI spec");
  }
  std::vector<CdiDevice> units;
  std::vector<CdiDevice> replicas;
  // visible_id -> the first device with it
  absl::flat_hash_map<std::string, const Device*> seen;
  for (const Device& d : devices) {
    if (replica_edit && d.replica >= 0) {
      CdiDevice replica;
      replica.name = d.id;
      replica.device_nodes = d.device_nodes;
      absl::StatusOr<bool> own = replica_edit(d, &replica);
      if (!own.ok()) return own.status();
      if (*own) {
        if (absl::Status s = ValidateDeviceName(d.id); !s.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "replica '", d.id, "' cannot be named in CDI: ", s.message()));
        }
        replicas.push_back(std::move(replica));
      }
    }
    auto [it, added] = seen.emplace(d.visible_id, &d);
    if (!added) {
      if (it->second->device_nodes != d.device_nodes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "devices '", it->second->id, "' and '", d.id, "' are both unit '",
            d.visible_id, "' but have different nodes (",
            absl::StrJoin(it->second->device_nodes, ", "), " vs ",
            absl::StrJoin(d.device_nodes, ", "), ")"));
      }
      continue;
    }
    if (absl::Status s = ValidateDeviceName(d.visible_id); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device '", d.id, "' cannot be named in CDI: ", s.message()));
    }
    CdiDevice unit;
    unit.name = d.visible_id;
    unit.device_nodes = d.device_nodes;
    if (edit) {
      if (absl::Status s = edit(d, &unit); !s.ok()) return s;
    }
    units.push_back(std::move(unit));
  }
  for (CdiDevice& r : replicas) units.push_back(std::move(r));
  return BuildDeviceSpec(options, files, control_nodes, units);
}

absl::StatusOr<json> BuildDeviceSpec(
    const CdiSpecOptions& options, const DriverFiles& files,
    const std::vector<std::string>& control_nodes,
    const std::vector<CdiDevice>& devices) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("no devices to put in the CDI spec");
  }
  json cdi_devices = json::array();
  absl::flat_hash_map<std::string, size_t> names;
  for (const CdiDevice& d : devices) {
    if (absl::Status s = ValidateDeviceName(d.name); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device '", d.name, "' cannot be named in CDI: ", s.message()));
    }
    if (!names.emplace(d.name, cdi_devices.size()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device '", d.name, "' is named twice"));
    }
    if (d.device_nodes.empty() && d.char_nodes.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device '", d.name, "' has no device nodes"));
    }
    json nodes = json::array();
    for (const std::string& path : d.device_nodes) {
      if (path.empty() || path.front() != '/') {
        return absl::InvalidArgumentError(absl::StrCat(
            "device '", d.name, "' has the relative node path '", path, "'"));
      }
      nodes.push_back(DeviceNode(path, options.dev_root));
    }
    for (const CdiDevice::CharNode& n : d.char_nodes) {
      if (n.path.empty() || n.path.front() != '/') {
        return absl::InvalidArgumentError(absl::StrCat(
            "device '", d.name, "' has the relative node path '", n.path, "'"));
      }
      json node = DeviceNode(n.path, options.dev_root);
      node["type"] = "c";
      node["major"] = n.major;
      node["minor"] = n.minor;
      nodes.push_back(std::move(node));
    }
    json edits = {{"deviceNodes", std::move(nodes)}};
    if (!d.env.empty()) edits["env"] = d.env;
    if (!d.mounts.empty()) {
      json mounts = json::array();
      for (const CdiDevice::Mount& m : d.mounts) {
        mounts.push_back({{"hostPath", m.host_path},
                          {"containerPath", m.container_path},
                          {"options", m.options}});
      }
      edits["mounts"] = std::move(mounts);
    }
    if (!d.hooks.empty()) edits["hooks"] = Hooks(d.hooks);
    cdi_devices.push_back(
        {{"name", d.name}, {"containerEdits", std::move(edits)}});
  }

  json edits = {{"env", json::array({kVisibleDevicesVoid})}};
  if (!control_nodes.empty()) {
    json nodes = json::array();
    for (const std::string& path : control_nodes) {
      nodes.push_back(DeviceNode(path, options.dev_root));
    }
    edits["deviceNodes"] = std::move(nodes);
  }
  const bool nvidia_hooks = !options.nvidia_cdi_hook_path.empty();
  const DriverFiles mounted =
      nvidia_hooks ? MountsForNvidiaHooks(files) : files;
  json mounts = json::array();
  for (const auto* group :
       {&mounted.libraries, &mounted.binaries, &mounted.firmware}) {
    for (const DriverFile& f : *group) {
      std::string host = JoinRoot(options.host_driver_root, f.real_path);
      for (const std::string& path : f.container_paths) {
        mounts.push_back({{"hostPath", host},
                          {"containerPath", path},
                          {"options", DriverMountOptions()}});
      }
    }
  }
  if (!mounts.empty()) edits["mounts"] = std::move(mounts);
  if (nvidia_hooks) {
    absl::StatusOr<std::vector<CdiDevice::Hook>> hooks =
        NvidiaSharedHooks(options.nvidia_cdi_hook_path, files);
    if (!hooks.ok()) return hooks.status();
    if (!hooks->empty()) edits["hooks"] = Hooks(*hooks);
  }

  json spec = {{"cdiVersion", kCdiVersion},
               {"kind", options.kind},
               {"devices", std::move(cdi_devices)},
               {"containerEdits", std::move(edits)}};
  if (absl::Status s = ValidateSpec(spec); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("generated CDI spec is invalid: ", s.message()));
  }
  return spec;
}

absl::StatusOr<json> GenerateSpec(const CdiSpecOptions& options,
                                  const std::vector<Device>& devices,
                                  const DeviceEdit& edit,
                                  const ReplicaEdit& replica_edit) {
  const std::string& lookup = options.lookup_root.empty()
                                  ? options.host_driver_root
                                  : options.lookup_root;
  absl::StatusOr<DriverFiles> files =
      FindDriverFiles(lookup.empty() ? "/" : lookup, options.driver_version);
  if (!files.ok()) return files.status();
  if (!files->missing.empty()) {
    VLOG(1, "driver files not found under {}: {}", lookup,
         absl::StrJoin(files->missing, ", "));
  }
  if (files->libraries.empty()) {
    LOG_WARN(
        "no NVIDIA driver libraries found under {}; the CDI spec mounts "
        "none",
        lookup);
  }
  const std::string& dev_lookup = options.dev_lookup_root.empty()
                                      ? options.dev_root
                                      : options.dev_lookup_root;
  return BuildSpec(options, *files, FindControlNodes(dev_lookup), devices, edit,
                   replica_edit);
}

}  // namespace gdp::cdi
