// The NVIDIA container toolkit's CDI hooks (nvidia-cdi-hook, or nvidia-ctk's
// `hook` subcommand) as NVIDIA's generated specs carry them in their shared
// edits, for a spec of ours when a hook path is configured
// (--nvidia-cdi-hook-path; docs/deploy.md, "NVIDIA's CDI hooks").
//
// What NVIDIA's spec generator (nvidia-container-toolkit pkg/nvcdi, v1.20,
// as vendored by NVIDIA's device plugin) puts in the shared edits, in this
// order, each at the OCI stage createContainer (run in the container's
// mount namespace before pivot_root) with env NVIDIA_CTK_DEBUG=false:
//  1. create-symlinks --link ../libnvidia-allocator.so.1::<dir>/gbm/
//     nvidia-drm_gbm.so, when libnvidia-allocator is mounted (its graphics
//     discoverer; <dir> is the library's directory);
//  2. create-symlinks with the libraries' links, per library in mount
//     order: libcuda.so.1::<dir>/libcuda.so and libnvidia-opticalflow.so.1
//     ::<dir>/libnvidia-opticalflow.so always, then <file>::<dir>/<SONAME>
//     and <SONAME>::<dir>/<lib>.so where the host's directory has those
//     links; a link given twice is written once; no links, no hook;
//  3. enable-cuda-compat --host-driver-version=<version>;
//  4. update-ldcache --folder <dir> for each library directory, in order of
//     first appearance; no libraries, no hook;
//  5. disable-device-node-modification;
//  6. update-application-profile.
// args[0] is the path's base name; a path whose base name is "nvidia-ctk"
// gets "hook" before the hook's name ("nvidia-ctk hook update-ldcache").
// Hooks that NVIDIA's binary does not know are skipped by it with a
// warning, so a spec with a newer hook still starts containers.
//
// The SONAME of a library is not read from its ELF header: the links found
// beside it (DriverFile::container_paths) stand for it, the shortest
// "<lib>.so.<n>" link being the SONAME link and "<lib>.so" the
// development link.
#ifndef GDP_CDI_NVIDIA_HOOKS_H_
#define GDP_CDI_NVIDIA_HOOKS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cdi/driver_files.h"
#include "cdi/spec.h"

namespace gdp::cdi {

// The OCI stage of every one of these hooks.
inline constexpr char kNvidiaCdiHookStage[] = "createContainer";
// The env NVIDIA's generator gives each hook.
inline constexpr char kNvidiaCdiHookEnv[] = "NVIDIA_CTK_DEBUG=false";

// The arguments before a hook's name for the binary at `hook_path`:
// {"nvidia-ctk", "hook"} when its base name is nvidia-ctk, else {base name}.
std::vector<std::string> NvidiaHookCommand(const std::string& hook_path);

// The hooks NVIDIA's spec carries in its shared edits for `files` (see the
// file comment), with each library mounted only at its real path (the
// links being the hooks' work: see MountsForNvidiaHooks).
// Result on failure: InvalidArgument when `hook_path` is not absolute or
// ends in '/' (naming it), or a library's path is not absolute.
absl::StatusOr<std::vector<CdiDevice::Hook>> NvidiaSharedHooks(
    const std::string& hook_path, const DriverFiles& files);

// `files` with each library's container paths reduced to its real path: a
// bind mount on a link's path would make create-symlinks fail (a mount
// point cannot be replaced), and NVIDIA's specs mount each library once.
DriverFiles MountsForNvidiaHooks(DriverFiles files);

}  // namespace gdp::cdi

#endif  // GDP_CDI_NVIDIA_HOOKS_H_
