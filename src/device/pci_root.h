// Where a PCI device hangs in the PCIe hierarchy, as sysfs shows it.
#ifndef GDP_DEVICE_PCI_ROOT_H_
#define GDP_DEVICE_PCI_ROOT_H_

#include <string>

namespace gdp {

// The PCIe root complex above the PCI device with sysfs bus id `bus_id`
// ("0000:07:00.0"), as NVIDIA's DRA driver publishes it in
// resource.kubernetes.io/pcieRoot. The kernel makes
// <sysfs_root>/bus/pci/devices/<bus_id> a symbolic link (usually relative,
// "../../../devices/pci0000:00/0000:00:01.0/0000:07:00.0") into
// <sysfs_root>/devices/pci<domain>:<bus>/.../<bus_id>; the result is that
// first directory below <sysfs_root>/devices, e.g. "pci0000:00".
// Result: empty (never an error) when the entry is missing or not a
// symbolic link, does not resolve, or resolves to something other than a
// path below <sysfs_root>/devices/pci<hex domain>:<2 hex digits>/.
// Thread-safe (reads the filesystem only).
std::string ReadPcieRoot(const std::string& sysfs_root,
                         const std::string& bus_id);

}  // namespace gdp

#endif  // GDP_DEVICE_PCI_ROOT_H_
