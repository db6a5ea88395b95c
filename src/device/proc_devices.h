// The character device majors the kernel lists in <proc_root>/devices. The
// NVIDIA driver's dynamic majors (nvidia-caps, nvidia-uvm) are read there:
// a MIG instance made at run time has no capability node on the host
// (nothing ran nvidia-modprobe for it), so it is given to a container by
// type, major and minor, as NVIDIA's DRA driver gives it.
#ifndef GDP_DEVICE_PROC_DEVICES_H_
#define GDP_DEVICE_PROC_DEVICES_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gdp {

// The major of character device `name` (e.g. "nvidia-caps") in
// <proc_root>/devices (a file of at most 64 KiB, read without trusting
// what is at the path).
// Result on failure: the read's error naming the path (NotFound when it is
// missing); NotFound naming `name` and the path when the "Character
// devices:" section lists no such device; InvalidArgument "<path>:<line>:
// ..." for a line of that section that is not "<major> <name>" or a major
// past 4095, or a name listed twice with different majors.
absl::StatusOr<unsigned> ReadCharDeviceMajor(const std::string& proc_root,
                                             absl::string_view name);

// As ReadCharDeviceMajor, on the text of such a file; `path` names it in
// messages.
absl::StatusOr<unsigned> ParseCharDeviceMajor(absl::string_view text,
                                              absl::string_view name,
                                              const std::string& path);

}  // namespace gdp

#endif  // GDP_DEVICE_PROC_DEVICES_H_
