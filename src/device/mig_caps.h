// The MIG capability minors the NVIDIA driver publishes: which device node
// /dev/nvidia-caps/nvidia-cap<N> guards access to each GPU instance and
// compute instance. A container using a MIG device needs its GPU's node and
// these two.
#ifndef GDP_DEVICE_MIG_CAPS_H_
#define GDP_DEVICE_MIG_CAPS_H_

#include <string>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gdp {

// The contents of <proc_root>/driver/nvidia-caps/mig-minors: lines
// "config <N>", "monitor <N>", "gpu<minor>/gi<gi>/access <N>" and
// "gpu<minor>/gi<gi>/ci<ci>/access <N>", where <minor> is the GPU's device
// minor (/dev/nvidia<minor>), not its NVML index. Immutable once made, so
// safe to share between threads.
class MigCaps {
 public:
  // Reads <proc_root>/driver/nvidia-caps/mig-minors. Result on failure:
  // NotFound naming the path when it is missing or unreadable,
  // InvalidArgument "<path>:<line>: ..." for a malformed or repeated line.
  static absl::StatusOr<MigCaps> Read(const std::string& proc_root);

  // Parses the text of such a file; `path` names it in messages. Blank
  // lines are ignored. Errors as Read.
  static absl::StatusOr<MigCaps> Parse(absl::string_view text,
                                       const std::string& path);

  // The capability minor N of GPU instance `gi` of the GPU with device minor
  // `gpu_minor`, and of compute instance `ci` in it. NotFound naming the
  // capability and the file when the file does not list it.
  absl::StatusOr<unsigned> GpuInstanceMinor(unsigned gpu_minor,
                                            unsigned gi) const;
  absl::StatusOr<unsigned> ComputeInstanceMinor(unsigned gpu_minor, unsigned gi,
                                                unsigned ci) const;

  // The device node of capability minor `cap_minor`, as a container sees
  // it: "/dev/nvidia-caps/nvidia-cap<N>".
  static std::string DevicePath(unsigned cap_minor);

  // The file the minors were read from.
  const std::string& path() const { return path_; }

 private:
  // (GPU minor, GPU instance, compute instance or kGpuInstance).
  using Key = std::tuple<unsigned, unsigned, unsigned>;
  static constexpr unsigned kGpuInstance = ~0u;

  explicit MigCaps(std::string path) : path_(std::move(path)) {}
  absl::StatusOr<unsigned> Find(const Key& key, const std::string& name) const;

  std::string path_;
  absl::flat_hash_map<Key, unsigned> minors_;
};

}  // namespace gdp

#endif  // GDP_DEVICE_MIG_CAPS_H_
