// The daemon's settings as a plain struct. Filled from flags and environment
// in main (cmd/flags.cc) and validated once before anything starts; nothing
// below main reads the environment.
#ifndef GDP_CONFIG_CONFIG_H_
#define GDP_CONFIG_CONFIG_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "device/device.h"

namespace gdp {

inline constexpr char kResourceName[] = "nvidia.com/gpu";
inline constexpr char kSocketName[] = "nvidia-gpu.sock";

struct Config {
  std::string kubelet_socket = "/var/lib/kubelet/device-plugins/kubelet.sock";
  std::string driver_root = "/";  // where the driver (NVML) is installed
  std::string dev_root;  // host root of /dev/nvidia*; empty: driver_root
  std::string sysfs_root = "/sys";
  bool fail_on_init_error = true;
  bool pass_device_specs = false;
  DeviceIdStrategy device_id_strategy = DeviceIdStrategy::kUuid;
  int verbosity = 0;
  // Between NVML load/init attempts when fail_on_init_error is false.
  absl::Duration nvml_retry_interval = absl::Seconds(30);

  const std::string& DevRoot() const {
    return dev_root.empty() ? driver_root : dev_root;
  }
};

// Result on failure: InvalidArgument naming the setting and what is wrong.
absl::Status Validate(const Config& config);

}  // namespace gdp

#endif  // GDP_CONFIG_CONFIG_H_
