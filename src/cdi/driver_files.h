// The NVIDIA driver's user-space files that containers need (libraries,
// tools, GSP firmware) and the control device nodes, found under a root that
// stands for the host's (see root_path.h). What is missing is left out; the
// caller decides whether that matters.
#ifndef GDP_CDI_DRIVER_FILES_H_
#define GDP_CDI_DRIVER_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gdp::cdi {

// One file (or directory) of the driver. Paths are as seen inside the root
// they were found under, i.e. as on the host when that root is the host's
// driver root.
struct DriverFile {
  // The file itself, every symlink resolved.
  std::string real_path;
  // Where a container expects it, each to be bind-mounted from real_path.
  // A library: its real path, then the links in the directory it was found
  // in that lead to it ("/usr/lib/x86_64-linux-gnu/libcuda.so.1"), so that
  // the SONAME resolves without a hook running in the container. A binary:
  // the path it was found at in a bin directory. The firmware directory:
  // "/lib/firmware/nvidia/<version>".
  std::vector<std::string> container_paths;

  bool operator==(const DriverFile&) const = default;
};

struct DriverFiles {
  // The driver version the libraries were matched against: as given, or
  // taken from the name of the file libnvidia-ml.so.1 (else libcuda.so.1)
  // leads to; empty if neither was found.
  std::string version;
  std::vector<DriverFile> libraries;  // in DriverLibraryNames() order
  std::vector<DriverFile> binaries;   // in DriverBinaryNames() order
  std::vector<DriverFile> firmware;   // at most one: the directory
  // Names looked for and not found ("libnvidia-nscq.so", "nvidia-smi",
  // "/lib/firmware/nvidia/550.54.15").
  std::vector<std::string> missing;
};

// The libraries looked for: what NVIDIA's container stack mounts for the
// "utility" and "compute" driver capabilities, plus the video codec
// libraries (NVDEC, NVENC, optical flow) that CUDA applications use.
const std::vector<std::string>& DriverLibraryNames();
// The tools looked for (utility and compute capabilities).
const std::vector<std::string>& DriverBinaryNames();
// Library directories, searched in this order (64-bit ones before /usr/lib
// and /lib, which hold 32-bit libraries on some distributions); a library is
// taken from the first directory that has it.
const std::vector<std::string>& DriverLibraryDirs();
// Binary directories, in the order of a default PATH.
const std::vector<std::string>& DriverBinaryDirs();

// Finds the driver's files under `root` (in production the plugin
// container's mount of the host driver root). A library counts when a file
// named "<lib>.<version>" (e.g. libcuda.so.550.54.15), reached directly or
// through links, is in a library directory; with `driver_version` given
// only that version counts, else the highest version in the directory is
// taken. A binary counts when it resolves to an executable regular file.
// The firmware directory counts when /lib/firmware/nvidia/<version> is a
// directory. Unreadable directories are skipped with a warning.
// Result on failure: InvalidArgument if `driver_version` is not of the form
// "550.54.15"; NotFound or FailedPrecondition if `root` is not a directory.
absl::StatusOr<DriverFiles> FindDriverFiles(const std::string& root,
                                            const std::string& driver_version);

// The control nodes (/dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools,
// /dev/nvidia-modeset, in that order) present under `dev_root`, as paths
// inside it ("/dev/nvidiactl").
std::vector<std::string> FindControlNodes(const std::string& dev_root);

}  // namespace gdp::cdi

#endif  // GDP_CDI_DRIVER_FILES_H_
