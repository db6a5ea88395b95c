#include "cdi/driver_files.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cdi/root_path.h"
#include "util/logging.h"

namespace gdp::cdi {
namespace {

// "550", "550.54.15": digits in dot-separated groups.
bool IsVersion(const std::string& s) {
  if (s.empty() || s.front() == '.' || s.back() == '.') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      if (s[i - 1] == '.') return false;
    } else if (!absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

// Numeric order of versions: "9.1" < "10.0" < "10.0.1".
bool VersionLess(const std::string& a, const std::string& b) {
  std::vector<std::string> pa = absl::StrSplit(a, '.');
  std::vector<std::string> pb = absl::StrSplit(b, '.');
  for (size_t i = 0; i < pa.size() && i < pb.size(); ++i) {
    uint64_t x = 0, y = 0;
    if (!absl::SimpleAtoi(pa[i], &x) || !absl::SimpleAtoi(pb[i], &y)) {
      return pa[i] < pb[i];
    }
    if (x != y) return x < y;
  }
  return pa.size() < pb.size();
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string InDir(const std::string& dir, const std::string& name) {
  return dir == "/" ? absl::StrCat("/", name) : absl::StrCat(dir, "/", name);
}

// The version in `file_name` if it is "<base>.<version>", else nullopt.
std::optional<std::string> VersionOf(const std::string& file_name,
                                     const std::string& base) {
  if (!absl::StartsWith(file_name, base + ".")) return std::nullopt;
  std::string v = file_name.substr(base.size() + 1);
  if (!IsVersion(v)) return std::nullopt;
  return v;
}

std::string FirmwareDir(const std::string& version) {
  return absl::StrCat("/lib/firmware/nvidia/", version);
}

// A directory of the tree with its entries' names, sorted.
struct Listing {
  std::string path;  // resolved, inside the root
  std::vector<std::string> names;
};

class Finder {
 public:
  explicit Finder(std::string root) : root_(std::move(root)) {}

  // The directories among `dirs` that exist, resolved and without repeats.
  std::vector<Listing> List(const std::vector<std::string>& dirs) const {
    std::vector<Listing> out;
    absl::flat_hash_set<std::string> seen;
    for (const std::string& d : dirs) {
      absl::StatusOr<std::string> real = ResolveInRoot(root_, d);
      if (!real.ok()) {
        if (!absl::IsNotFound(real.status())) {
          LOG_WARN("skipping driver directory {}: {}", d,
                   real.status().ToString());
        }
        continue;
      }
      if (!seen.insert(*real).second) continue;
      std::string outside = JoinRoot(root_, *real);
      DIR* dir = opendir(outside.c_str());
      if (dir == nullptr) {
        if (errno != ENOENT && errno != ENOTDIR) {
          LOG_WARN("skipping driver directory {}: {}", outside,
                   std::strerror(errno));
        }
        continue;
      }
      Listing l{*real, {}};
      while (struct dirent* e = readdir(dir)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") l.names.push_back(std::move(name));
      }
      closedir(dir);
      std::sort(l.names.begin(), l.names.end());
      out.push_back(std::move(l));
    }
    return out;
  }

  // The resolved path of `path` if that is a file of `type` (S_IFREG,
  // S_IFDIR), else nullopt.
  std::optional<std::string> Resolve(const std::string& path, mode_t type,
                                     struct stat* st_out = nullptr) const {
    absl::StatusOr<std::string> real = ResolveInRoot(root_, path);
    if (!real.ok()) {
      if (!absl::IsNotFound(real.status())) {
        VLOG(1, "skipping {}: {}", path, real.status().ToString());
      }
      return std::nullopt;
    }
    struct stat st;
    if (stat(JoinRoot(root_, *real).c_str(), &st) != 0 ||
        (st.st_mode & S_IFMT) != type) {
      return std::nullopt;
    }
    if (st_out != nullptr) *st_out = st;
    return *real;
  }

  // The version named by the file `dir`/`link` leads to, if it is
  // "<base>.<major>.<minor>[...]".
  std::optional<std::string> LinkedVersion(const std::vector<Listing>& dirs,
                                           const std::string& base,
                                           const std::string& link) const {
    for (const Listing& d : dirs) {
      if (!std::binary_search(d.names.begin(), d.names.end(), link)) continue;
      std::optional<std::string> real = Resolve(InDir(d.path, link), S_IFREG);
      if (!real) continue;
      std::optional<std::string> v = VersionOf(BaseName(*real), base);
      if (v && absl::StrContains(*v, '.')) return v;
    }
    return std::nullopt;
  }

  // The library `base` ("libcuda.so") in the first directory of `dirs` that
  // has a file "<base>.<version>" (any version if `version` is empty, the
  // highest winning).
  std::optional<DriverFile> Library(const std::vector<Listing>& dirs,
                                    const std::string& base,
                                    const std::string& version) const {
    struct Candidate {
      std::string name;
      std::string real;
      std::string version;
    };
    for (const Listing& d : dirs) {
      std::vector<Candidate> found;
      auto first = std::lower_bound(d.names.begin(), d.names.end(), base);
      for (auto it = first; it != d.names.end() && absl::StartsWith(*it, base);
           ++it) {
        if (*it != base && !VersionOf(*it, base)) continue;
        std::optional<std::string> real = Resolve(InDir(d.path, *it), S_IFREG);
        if (!real) continue;
        std::optional<std::string> v = VersionOf(BaseName(*real), base);
        if (!v || (!version.empty() && *v != version)) continue;
        found.push_back({*it, *std::move(real), *std::move(v)});
      }
      if (found.empty()) continue;
      const Candidate& best =
          *std::max_element(found.begin(), found.end(),
                            [](const Candidate& a, const Candidate& b) {
                              return VersionLess(a.version, b.version);
                            });
      DriverFile f{best.real, {best.real}};
      for (const Candidate& c : found) {
        std::string path = InDir(d.path, c.name);
        if (c.real == best.real && path != best.real) {
          f.container_paths.push_back(std::move(path));
        }
      }
      return f;
    }
    return std::nullopt;
  }

  // The executable `name` in the first directory of `dirs` that has it.
  std::optional<DriverFile> Binary(const std::vector<Listing>& dirs,
                                   const std::string& name) const {
    for (const Listing& d : dirs) {
      if (!std::binary_search(d.names.begin(), d.names.end(), name)) continue;
      std::string path = InDir(d.path, name);
      struct stat st;
      std::optional<std::string> real = Resolve(path, S_IFREG, &st);
      if (!real || (st.st_mode & 0111) == 0) continue;
      return DriverFile{*std::move(real), {std::move(path)}};
    }
    return std::nullopt;
  }

  std::optional<DriverFile> Firmware(const std::string& version) const {
    if (version.empty()) return std::nullopt;
    std::string path = FirmwareDir(version);
    std::optional<std::string> real = Resolve(path, S_IFDIR);
    if (!real) return std::nullopt;
    return DriverFile{*std::move(real), {std::move(path)}};
  }

 private:
  std::string root_;
};

}  // namespace

const std::vector<std::string>& DriverLibraryNames() {
  static const auto* const kNames = new std::vector<std::string>{
      // utility
      "libnvidia-ml.so",    // NVML
      "libnvidia-cfg.so",   // GPU configuration
      "libnvidia-nscq.so",  // NVSwitch topology (fabric manager hosts)
      // compute
      "libcuda.so",                    // CUDA driver API
      "libcudadebugger.so",            // CUDA debugger
      "libnvidia-opencl.so",           // OpenCL ICD
      "libnvidia-gpucomp.so",          // shared shader/compute compiler
      "libnvidia-ptxjitcompiler.so",   // PTX JIT (used by libcuda)
      "libnvidia-fatbinaryloader.so",  // fatbin loader (older drivers)
      "libnvidia-allocator.so",        // allocator runtime
      "libnvidia-compiler.so",         // NVVM-PTX for OpenCL (older drivers)
      "libnvidia-pkcs11.so",           // confidential computing crypto
      "libnvidia-pkcs11-openssl3.so",  // the same on OpenSSL 3
      "libnvidia-nvvm.so",             // NVVM compiler
      "libnvidia-tileiras.so",         // Tile IR JIT
      // video
      "libnvcuvid.so",            // NVDEC
      "libnvidia-encode.so",      // NVENC
      "libnvidia-opticalflow.so"  // optical flow
  };
  return *kNames;
}

const std::vector<std::string>& DriverBinaryNames() {
  static const auto* const kNames = new std::vector<std::string>{
      "nvidia-smi",
      "nvidia-debugdump",
      "nvidia-persistenced",
      "nvidia-cuda-mps-control",
      "nvidia-cuda-mps-server",
  };
  return *kNames;
}

const std::vector<std::string>& DriverLibraryDirs() {
  static const auto* const kDirs = new std::vector<std::string>{
      "/usr/lib64",
      "/usr/lib/x86_64-linux-gnu",
      "/usr/lib/aarch64-linux-gnu",
      "/usr/lib/x86_64-linux-gnu/nvidia/current",
      "/usr/lib/aarch64-linux-gnu/nvidia/current",
      "/lib64",
      "/lib/x86_64-linux-gnu",
      "/lib/aarch64-linux-gnu",
      "/lib/x86_64-linux-gnu/nvidia/current",
      "/lib/aarch64-linux-gnu/nvidia/current",
      "/usr/lib",
      "/lib",
  };
  return *kDirs;
}

const std::vector<std::string>& DriverBinaryDirs() {
  static const auto* const kDirs = new std::vector<std::string>{
      "/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
      "/usr/bin",        "/sbin",          "/bin",
  };
  return *kDirs;
}

absl::StatusOr<DriverFiles> FindDriverFiles(const std::string& root,
                                            const std::string& driver_version) {
  if (!driver_version.empty() && !IsVersion(driver_version)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "driver version '", driver_version, "' is not like 550.54.15"));
  }
  struct stat st;
  if (stat(root.c_str(), &st) != 0) {
    int err = errno;
    std::string msg =
        absl::StrCat("driver root ", root, ": ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg)
                         : absl::FailedPreconditionError(msg);
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("driver root ", root, " is not a directory"));
  }

  Finder finder(root);
  std::vector<Listing> lib_dirs = finder.List(DriverLibraryDirs());
  DriverFiles out;
  out.version = driver_version;
  if (out.version.empty()) {
    std::optional<std::string> v =
        finder.LinkedVersion(lib_dirs, "libnvidia-ml.so", "libnvidia-ml.so.1");
    if (!v) v = finder.LinkedVersion(lib_dirs, "libcuda.so", "libcuda.so.1");
    if (v) out.version = *std::move(v);
  }
  for (const std::string& name : DriverLibraryNames()) {
    if (std::optional<DriverFile> f =
            finder.Library(lib_dirs, name, out.version)) {
      out.libraries.push_back(*std::move(f));
    } else {
      out.missing.push_back(name);
    }
  }
  std::vector<Listing> bin_dirs = finder.List(DriverBinaryDirs());
  for (const std::string& name : DriverBinaryNames()) {
    if (std::optional<DriverFile> f = finder.Binary(bin_dirs, name)) {
      out.binaries.push_back(*std::move(f));
    } else {
      out.missing.push_back(name);
    }
  }
  if (std::optional<DriverFile> f = finder.Firmware(out.version)) {
    out.firmware.push_back(*std::move(f));
  } else if (!out.version.empty()) {
    out.missing.push_back(FirmwareDir(out.version));
  }
  return out;
}

std::vector<std::string> FindControlNodes(const std::string& dev_root) {
  static const char* const kControlNodes[] = {
      "/dev/nvidiactl",
      "/dev/nvidia-uvm",
      "/dev/nvidia-uvm-tools",
      "/dev/nvidia-modeset",
  };
  std::vector<std::string> out;
  for (const char* node : kControlNodes) {
    struct stat st;
    if (stat(JoinRoot(dev_root, node).c_str(), &st) == 0) {
      out.push_back(node);
    }
  }
  return out;
}

}  // namespace gdp::cdi
