#include "hook/apply.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "hook/cgroup.h"
#include "hook/limits.h"
#include "nvml/nvml.h"
#include "util/atomic_file.h"
#include "util/bounded_json.h"
#include "util/read_file.h"

namespace gdp::hook {
namespace {

constexpr size_t kMaxBundleFiles = 256;
constexpr size_t kMaxBundleFileBytes = 256 << 20;

absl::Status Prefixed(const absl::Status& s, const std::string& prefix) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

absl::Status ErrnoStatus(int err, const std::string& what) {
  absl::StatusCode code = err == ENOENT   ? absl::StatusCode::kNotFound
                          : err == EACCES ? absl::StatusCode::kPermissionDenied
                                          : absl::StatusCode::kInternal;
  return absl::Status(code, absl::StrCat(what, ": ", std::strerror(err)));
}

// Sets `hard` bytes (soft 0) on every GPU of `hard_bytes` for `cgroup`.
absl::Status SetLimits(const std::string& driver_root,
                       const std::map<std::string, uint64_t>& hard_bytes,
                       const std::string& cgroup) {
  absl::StatusOr<std::unique_ptr<Nvml>> nvml =
      Nvml::Open(driver_root.empty() ? "/" : driver_root);
  if (!nvml.ok()) {
    return Prefixed(
        nvml.status(),
        absl::StrCat("cannot limit GPU memory of cgroup ", cgroup,
                     ": NVML under driver root '", driver_root, "': "));
  }
  if (!(*nvml)->HasMemoryLimits()) {
    absl::StatusOr<std::string> version = (*nvml)->DriverVersion();
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot limit GPU memory of cgroup ", cgroup, ": NVML ",
        (*nvml)->library_path(), " (driver ",
        version.ok() ? *version : "of unknown version",
        ") has no nvmlDeviceSetMemoryLimits_v1: per-cgroup GPU memory limits "
        "need driver R615 (CUDA 13.4) or later"));
  }
  for (const auto& [uuid, bytes] : hard_bytes) {
    std::string where =
        absl::StrCat("cannot limit GPU ", uuid, " to ", bytes >> 20,
                     " MiB in cgroup ", cgroup, ": ");
    absl::StatusOr<nvmlDevice_t> dev = (*nvml)->DeviceByUuid(uuid);
    if (!dev.ok()) return Prefixed(dev.status(), where);
    if ((*nvml)->HasMig()) {
      absl::StatusOr<bool> mig = (*nvml)->IsMigDevice(*dev);
      if (mig.ok() && *mig) {
        return absl::FailedPreconditionError(absl::StrCat(
            where, "it is a MIG device; NVML limits whole GPUs only"));
      }
    }
    if (absl::Status s = (*nvml)->SetMemoryLimits(*dev, cgroup, 0, bytes);
        !s.ok()) {
      if (NvmlCode(s) == NVML_ERROR_NOT_SUPPORTED) {
        absl::StatusOr<std::string> version = (*nvml)->DriverVersion();
        return absl::Status(
            s.code(),
            absl::StrCat(where, s.message(), "; driver ",
                         version.ok() ? *version : "of unknown version",
                         ": per-cgroup GPU memory limits need driver R615 "
                         "(CUDA 13.4) or later, a GPU that is not in MIG "
                         "mode and cgroup v2"));
      }
      return Prefixed(s, where);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadFdBounded(int fd, size_t max_bytes) {
  std::string out;
  char buf[16 << 10];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot read the OCI state on stdin");
    }
    if (n == 0) return out;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the OCI state on stdin is larger than ", max_bytes, " bytes"));
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

absl::Status ApplyMemoryLimits(const std::vector<std::string>& args,
                               const ApplyOptions& options) {
  absl::StatusOr<HookArgs> parsed = ParseHookArgs(args);
  if (!parsed.ok()) return parsed.status();
  absl::StatusOr<std::string> state_text =
      parsed->container_spec.empty() || parsed->container_spec == "-"
          ? ReadFdBounded(options.state_fd, kMaxStateBytes)
          : ReadRegularFile(parsed->container_spec,
                            {.max_bytes = kMaxStateBytes, .what = "OCI state"});
  if (!state_text.ok()) return state_text.status();
  absl::StatusOr<OciState> state = ParseOciState(*state_text);
  if (!state.ok()) return state.status();
  std::string prefix = absl::StrCat("container ", state->id, ": ");

  std::string config_path = absl::StrCat(state->bundle, "/config.json");
  absl::StatusOr<std::string> config_text = ReadRegularFile(
      config_path, {.max_bytes = kMaxConfigBytes, .what = "OCI config"});
  if (!config_text.ok()) return Prefixed(config_text.status(), prefix);
  absl::StatusOr<nlohmann::json> config = ParseBoundedJson(*config_text);
  if (!config.ok()) {
    return Prefixed(config.status(), absl::StrCat(prefix, config_path, ": "));
  }
  absl::StatusOr<LimitPlan> plan = PlanLimits(args, *config);
  if (!plan.ok()) return Prefixed(plan.status(), prefix);
  if (plan->done_by_earlier_entry || plan->hard_bytes.empty()) {
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> cgroup =
      ContainerCgroupDir(options.proc_root, state->pid);
  if (!cgroup.ok()) {
    return Prefixed(cgroup.status(),
                    absl::StrCat(prefix, "cannot limit GPU memory: "));
  }
  if (absl::Status s =
          SetLimits(parsed->driver_root, plan->hard_bytes, *cgroup);
      !s.ok()) {
    return Prefixed(s, prefix);
  }
  return absl::OkStatus();
}

absl::Status InstallBundle(const std::string& from, const std::string& to) {
  size_t files = 0;
  for (const char* sub : {"bin", "lib"}) {
    std::string src_dir = absl::StrCat(from, "/", sub);
    DIR* dir = opendir(src_dir.c_str());
    if (dir == nullptr) {
      if (errno == ENOENT && std::string(sub) == "lib") continue;
      return ErrnoStatus(errno, absl::StrCat("cannot open ", src_dir));
    }
    absl::Cleanup close_dir = [dir] { closedir(dir); };
    size_t here = 0;
    while (dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string src = absl::StrCat(src_dir, "/", name);
      struct stat st;
      if (stat(src.c_str(), &st) != 0) {
        return ErrnoStatus(errno, absl::StrCat("cannot stat ", src));
      }
      if (!S_ISREG(st.st_mode)) continue;
      if (++files > kMaxBundleFiles) {
        return absl::ResourceExhaustedError(
            absl::StrCat(from, " holds more than ", kMaxBundleFiles, " files"));
      }
      absl::StatusOr<std::string> content = ReadRegularFile(
          src, {.max_bytes = kMaxBundleFileBytes, .what = "bundle file"});
      if (!content.ok()) return content.status();
      std::string dst = absl::StrCat(to, "/", sub, "/", name);
      if (absl::Status s =
              WriteFileAtomically(dst, *content, st.st_mode & 07777, 0755);
          !s.ok()) {
        return s;
      }
      ++here;
    }
    if (here == 0 && std::string(sub) == "bin") {
      return absl::FailedPreconditionError(
          absl::StrCat(src_dir, " holds no file to install"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gdp::hook
