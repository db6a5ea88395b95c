#include "cdi/nvidia_hooks.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gdp::cdi {
namespace {

// NVIDIA's hook names (nvidia-container-toolkit internal/discover/hooks.go).
constexpr char kCreateSymlinks[] = "create-symlinks";
constexpr char kEnableCudaCompat[] = "enable-cuda-compat";
constexpr char kUpdateLdcache[] = "update-ldcache";
constexpr char kDisableDeviceNodeModification[] =
    "disable-device-node-modification";
constexpr char kUpdateApplicationProfile[] = "update-application-profile";

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The directory of an absolute path, "/" for a file in the root.
std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string InDir(const std::string& dir, const std::string& name) {
  return dir == "/" ? absl::StrCat("/", name) : absl::StrCat(dir, "/", name);
}

// "libcuda.so" for "libcuda.so.550.54.15"; empty if the name has no ".so".
std::string DotSo(const std::string& name) {
  size_t so = name.find(".so");
  if (so == std::string::npos) return "";
  size_t end = so + 3;
  if (end != name.size() && name[end] != '.') return "";
  return name.substr(0, end);
}

// Whether `name` is "<base>.<something>", e.g. libcuda.so.550.54.15 for
// base libcuda.so.
bool IsVersionOf(const std::string& name, const std::string& base) {
  return name.size() > base.size() + 1 && absl::StartsWith(name, base) &&
         name[base.size()] == '.';
}

class HookMaker {
 public:
  explicit HookMaker(const std::string& path)
      : path_(path), command_(NvidiaHookCommand(path)) {}

  CdiDevice::Hook Make(const char* name, std::vector<std::string> args) const {
    CdiDevice::Hook h;
    h.hook_name = kNvidiaCdiHookStage;
    h.path = path_;
    h.args = command_;
    h.args.push_back(name);
    for (std::string& a : args) h.args.push_back(std::move(a));
    h.env = {kNvidiaCdiHookEnv};
    return h;
  }

  // create-symlinks with "--link" before each of `links`.
  CdiDevice::Hook Symlinks(const std::vector<std::string>& links) const {
    std::vector<std::string> args;
    for (const std::string& l : links) {
      args.push_back("--link");
      args.push_back(l);
    }
    return Make(kCreateSymlinks, std::move(args));
  }

 private:
  const std::string path_;
  const std::vector<std::string> command_;
};

// The links NVIDIA's generator asks for one library mounted at `f.real_path`
// ("<target>::<link path>"), in its order: the fixed ones for libcuda and
// libnvidia-opticalflow, the SONAME link, then the .so link.
std::vector<std::string> LibraryLinks(const DriverFile& f) {
  const std::string dir = DirName(f.real_path);
  const std::string file = BaseName(f.real_path);
  const std::string so = DotSo(file);
  std::vector<std::string> out;
  if (so.empty()) return out;
  if (so == "libcuda.so" || so == "libnvidia-opticalflow.so") {
    out.push_back(absl::StrCat(so, ".1::", InDir(dir, so)));
  }
  // The links found beside the file, in its directory.
  std::string soname;  // the shortest "<so>.<n>" link
  bool dev_link = false;
  for (const std::string& p : f.container_paths) {
    if (p == f.real_path || DirName(p) != dir) continue;
    std::string name = BaseName(p);
    if (name == so) {
      dev_link = true;
    } else if (IsVersionOf(name, so) && name != file &&
               (soname.empty() || name.size() < soname.size())) {
      soname = std::move(name);
    }
  }
  if (!soname.empty()) {
    out.push_back(absl::StrCat(file, "::", InDir(dir, soname)));
  }
  if (dev_link) {
    out.push_back(
        absl::StrCat(soname.empty() ? file : soname, "::", InDir(dir, so)));
  }
  return out;
}

}  // namespace

std::vector<std::string> NvidiaHookCommand(const std::string& hook_path) {
  std::string base = BaseName(hook_path);
  if (base == "nvidia-ctk") return {base, "hook"};
  return {base};
}

absl::StatusOr<std::vector<CdiDevice::Hook>> NvidiaSharedHooks(
    const std::string& hook_path, const DriverFiles& files) {
  if (hook_path.empty() || hook_path.front() != '/' ||
      hook_path.back() == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("NVIDIA CDI hook path '", hook_path,
                     "' is not the absolute path of an executable"));
  }
  for (const DriverFile& f : files.libraries) {
    if (f.real_path.empty() || f.real_path.front() != '/') {
      return absl::InvalidArgumentError(absl::StrCat(
          "driver library path '", f.real_path, "' is not absolute"));
    }
  }
  HookMaker maker(hook_path);
  std::vector<CdiDevice::Hook> hooks;

  for (const DriverFile& f : files.libraries) {
    const std::string file = BaseName(f.real_path);
    if (DotSo(file) == "libnvidia-allocator.so") {
      hooks.push_back(maker.Symlinks({absl::StrCat(
          "../libnvidia-allocator.so.1::",
          InDir(DirName(f.real_path), "gbm/nvidia-drm_gbm.so"))}));
      break;
    }
  }

  std::vector<std::string> links;
  absl::flat_hash_set<std::string> seen_links;
  std::vector<std::string> folders;
  absl::flat_hash_set<std::string> seen_folders;
  for (const DriverFile& f : files.libraries) {
    for (std::string& l : LibraryLinks(f)) {
      if (seen_links.insert(l).second) links.push_back(std::move(l));
    }
    std::string dir = DirName(f.real_path);
    if (seen_folders.insert(dir).second) folders.push_back(std::move(dir));
  }
  if (!links.empty()) hooks.push_back(maker.Symlinks(links));

  std::vector<std::string> compat;
  if (!files.version.empty()) {
    compat.push_back(absl::StrCat("--host-driver-version=", files.version));
  }
  hooks.push_back(maker.Make(kEnableCudaCompat, std::move(compat)));

  if (!folders.empty()) {
    std::vector<std::string> args;
    for (std::string& d : folders) {
      args.push_back("--folder");
      args.push_back(std::move(d));
    }
    hooks.push_back(maker.Make(kUpdateLdcache, std::move(args)));
  }
  hooks.push_back(maker.Make(kDisableDeviceNodeModification, {}));
  hooks.push_back(maker.Make(kUpdateApplicationProfile, {}));
  return hooks;
}

DriverFiles MountsForNvidiaHooks(DriverFiles files) {
  for (DriverFile& f : files.libraries) f.container_paths = {f.real_path};
  return files;
}

}  // namespace gdp::cdi
