// The kernel's ID of this boot, which the health state file and the DRA
// checkpoint keep to tell a reboot from a restart.
#ifndef GDP_UTIL_BOOT_ID_H_
#define GDP_UTIL_BOOT_ID_H_

#include <string>

namespace gdp {

// This boot's ID: <proc_root>/sys/kernel/random/boot_id, trimmed (the
// host's in any container). "" when it cannot be read (logged, naming the
// file).
std::string ReadBootId(const std::string& proc_root);

}  // namespace gdp

#endif  // GDP_UTIL_BOOT_ID_H_
