#include "device/pci_root.h"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

bool IsHex(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isxdigit(static_cast<unsigned char>(c));
  });
}

// "pci<domain>:<bus>": a root bus directory of sysfs, with a domain of four
// or more hex digits and a bus of two.
bool IsRootBus(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "pci")) return false;
  const size_t colon = name.find(':');
  if (colon == absl::string_view::npos) return false;
  const absl::string_view domain = name.substr(0, colon);
  const absl::string_view bus = name.substr(colon + 1);
  return domain.size() >= 4 && IsHex(domain) && bus.size() == 2 && IsHex(bus);
}

}  // namespace

std::string ReadPcieRoot(const std::string& sysfs_root,
                         const std::string& bus_id) {
  const fs::path root(sysfs_root);
  const fs::path link = root / "bus/pci/devices" / bus_id;
  std::error_code error;
  // One readlink and one stat: sysfs links are relative and point at real
  // directories under devices/, so the target is resolved lexically
  // (fs::canonical would readlink every component of both paths, for every GPU
  // of every rediscovery).
  const fs::path to = fs::read_symlink(link, error);
  if (error) return "";  // not a link
  const fs::path target =
      (to.is_absolute() ? to : link.parent_path() / to).lexically_normal();
  if (!fs::is_directory(target, error)) return "";  // dangling
  const fs::path devices = (root / "devices").lexically_normal();
  // target must be devices/<root bus>/<at least one more component>.
  auto [in_devices, in_target] = std::mismatch(devices.begin(), devices.end(),
                                               target.begin(), target.end());
  if (in_devices != devices.end() || in_target == target.end()) return "";
  const std::string bus = in_target->string();
  if (std::next(in_target) == target.end() || !IsRootBus(bus)) return "";
  return bus;
}

}  // namespace gdp
