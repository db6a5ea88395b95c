// The CDI spec for our devices: one CDI device per physical unit (GPU or MIG
// device) with its own device nodes, and edits shared by all of them (control
// nodes, the driver's libraries, tools and firmware). Named and shaped like
// the spec NVIDIA's plugin generates, so pod specs and runtimes that name
// "k8s.device-plugin.nvidia.com/gpu=<id>" keep working.
#ifndef GDP_CDI_SPEC_H_
#define GDP_CDI_SPEC_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cdi/driver_files.h"
#include "device/device.h"

namespace gdp::cdi {

inline constexpr char kVendor[] = "k8s.device-plugin.nvidia.com";
inline constexpr char kClass[] = "gpu";
inline constexpr char kKind[] = "k8s.device-plugin.nvidia.com/gpu";
// The lowest CDI version with what we emit: device names may start with a
// digit (index IDs "3", "0:1") and device nodes may carry hostPath, both
// added in 0.5.0.
inline constexpr char kCdiVersion[] = "0.5.0";
// Set in the shared edits, as NVIDIA's generated specs do: an NVIDIA runtime
// hook still installed on the node then injects no GPUs besides the ones CDI
// gave the container (CUDA images set NVIDIA_VISIBLE_DEVICES=all).
inline constexpr char kVisibleDevicesVoid[] = "NVIDIA_VISIBLE_DEVICES=void";
// Options of every driver file mount (read-only bind, as NVIDIA's specs).
const std::vector<std::string>& DriverMountOptions();

// "k8s.device-plugin.nvidia.com/gpu=<device_name>": how the CRI and CDI
// annotations name a device of our spec. `device_name` is a Device's
// visible_id.
std::string QualifiedName(const std::string& device_name);

// The spec's file name in the CDI directory, as CDI's GenerateNameForSpec
// makes it for our kind: "k8s.device-plugin.nvidia.com-gpu.json".
std::string SpecFileName();

struct CdiSpecOptions {
  // The spec's kind, "<vendor>/<class>"; device names are qualified with it.
  std::string kind = kKind;
  // The driver root as the host sees it (--driver-root): mount host paths
  // are this + the path found under lookup_root.
  std::string host_driver_root = "/";
  // Where that root is visible to this process (the plugin container's
  // mount of it, or a test tree); empty: host_driver_root.
  std::string lookup_root;
  // The host root of /dev/nvidia* (--dev-root): device node host paths are
  // this + the node's path; with "/" no hostPath is written.
  std::string dev_root = "/";
  // Where the dev root is visible to this process; control nodes are looked
  // for under it. Empty: dev_root.
  std::string dev_lookup_root;
  // The driver version (NVML's, "550.54.15"); only libraries of this version
  // are taken. Empty: read from the libraries found (see FindDriverFiles).
  std::string driver_version;
  // Host path of NVIDIA's hook binary (nvidia-cdi-hook, or nvidia-ctk with
  // its `hook` subcommand; --nvidia-cdi-hook-path). Set: the shared edits
  // carry NVIDIA's hooks and each library is mounted at its real path only
  // (nvidia_hooks.h). Empty: no hooks; each library is also mounted at the
  // links found beside it.
  std::string nvidia_cdi_hook_path;
};

struct CdiDevice;
// Adds to the CDI device made for a unit (see BuildSpec).
using DeviceEdit = std::function<absl::Status(const Device&, CdiDevice*)>;
// For one replica (Device.replica >= 0): whether it gets a CDI device of
// its own (see BuildSpec), adding to it when it does.
using ReplicaEdit =
    std::function<absl::StatusOr<bool>(const Device&, CdiDevice*)>;

// Builds the spec from what was found, touching no files. `devices` are the
// advertised devices of all resources together; devices sharing a
// visible_id (replicas) become one CDI device named by it, in order of first
// appearance. `control_nodes` are container paths ("/dev/nvidiactl").
// Result on failure: InvalidArgument when `devices` is empty, a visible_id
// is not a valid CDI device name, a device has no nodes or a relative node
// path, or devices with one visible_id have different nodes (the message
// names the device); also when the result would fail ValidateSpec for
// another reason, e.g. a relative control node path (the message is
// ValidateSpec's). A result is always valid.
// `edit`, when set, is called once per unit's CDI device, with the first
// device of its unit, to add to it (e.g. a hook entry); its failure is
// BuildSpec's.
// `replica_edit`, when set, is called for every replica (replica >= 0) with
// a CDI device named by the replica's ID ("<visible_id>::<k>", NVIDIA's
// replica ID form; ':' is valid in CDI names) holding its unit's nodes;
// when it returns true that device is added after all the units' devices,
// in the order of `devices` (e.g. one per replica carrying its memory
// share); false adds nothing. Its failure is BuildSpec's, as is a replica
// ID that is not a valid CDI device name.
absl::StatusOr<nlohmann::json> BuildSpec(
    const CdiSpecOptions& options, const DriverFiles& files,
    const std::vector<std::string>& control_nodes,
    const std::vector<Device>& devices, const DeviceEdit& edit = {},
    const ReplicaEdit& replica_edit = {});

// One device of a spec and what it adds to a container besides the spec's
// shared edits.
struct CdiDevice {
  std::string name;                       // the CDI device name
  std::vector<std::string> device_nodes;  // container paths, absolute
  std::vector<std::string> env;           // "KEY=value"
  struct Mount {
    std::string host_path;
    std::string container_path;
    std::vector<std::string> options;
  };
  std::vector<Mount> mounts;
  // An OCI hook the runtime runs for a container given the device (CDI's
  // containerEdits.hooks; see ValidateSpec for the rules).
  struct Hook {
    std::string hook_name;          // the OCI stage: "createRuntime", ...
    std::string path;               // the executable's host path, absolute
    std::vector<std::string> args;  // argv, args[0] included
    std::vector<std::string> env;   // "KEY=value"
    int timeout_seconds = 0;        // > 0; 0: none (the runtime's default)
  };
  std::vector<Hook> hooks;
  // Character device nodes given by number too (CDI's "type": "c",
  // "major", "minor", written after device_nodes), for nodes the host may
  // lack, such as the capability nodes of a MIG instance made at run time
  // (no nvidia-modprobe made them): the runtime makes them in the
  // container without looking at the host.
  struct CharNode {
    std::string path;  // container path, absolute
    unsigned major = 0;
    unsigned minor = 0;
  };
  std::vector<CharNode> char_nodes = {};
};

// The spec of kind options.kind with `devices`, and the shared edits as
// BuildSpec makes them (NVIDIA_VISIBLE_DEVICES=void, control nodes, driver
// files; with options.nvidia_cdi_hook_path NVIDIA's hooks, NvidiaSharedHooks,
// and the libraries' mounts as MountsForNvidiaHooks). Device node host
// paths as BuildSpec; each device's hooks are written as its
// containerEdits.hooks ("timeout" only when > 0).
// Result on failure: InvalidArgument when `devices` is empty, a name is
// not a valid CDI device name or repeated, a device has no nodes or a
// relative node path (naming the device), the NVIDIA hook path is not
// absolute, or the spec is otherwise invalid (ValidateSpec's message: e.g.
// a hook's stage, path or env).
absl::StatusOr<nlohmann::json> BuildDeviceSpec(
    const CdiSpecOptions& options, const DriverFiles& files,
    const std::vector<std::string>& control_nodes,
    const std::vector<CdiDevice>& devices);

// FindDriverFiles(lookup_root, driver_version) and FindControlNodes(
// dev_lookup_root), then BuildSpec. Logs the driver files not found.
// Result on failure: as FindDriverFiles and BuildSpec.
absl::StatusOr<nlohmann::json> GenerateSpec(
    const CdiSpecOptions& options, const std::vector<Device>& devices,
    const DeviceEdit& edit = {}, const ReplicaEdit& replica_edit = {});

}  // namespace gdp::cdi

#endif  // GDP_CDI_SPEC_H_
