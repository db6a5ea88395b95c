// Names in NVIDIA's configuration, shared by the flags and the config file:
// the spellings of the enum settings, resource names, device references and
// the CDI annotation prefix. Pure functions; thread-safe.
#ifndef GDP_CONFIG_NAMES_H_
#define GDP_CONFIG_NAMES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "config/config.h"

namespace gdp {

// NVIDIA's spellings, for E one of MigStrategy ("none", "single", "mixed"),
// DeviceListStrategy ("envvar", "volume-mounts", "cdi-annotations",
// "cdi-cri"), DeviceIdStrategy ("uuid", "index"), SharedAllocationPolicy
// ("distributed", "packed"), SharingStrategy ("none", "time-slicing",
// "mps"), DeviceApi ("device-plugin", "dra", "both"), MemoryLimitHookKind
// ("gdp", "nvidia") and UnenforcedShares ("refuse", "allow").
//
// ParseName: the value spelled `name` (exact, case-sensitive); nullopt if
// none is.
template <typename E>
std::optional<E> ParseName(absl::string_view name);
template <typename E>
absl::string_view NameOf(E value);
// All spellings, in declaration order.
template <typename E>
std::vector<std::string> AllNames();
// For messages: "none, single or mixed".
template <typename E>
std::string NameChoices();

// A resource name as NVIDIA completes it: `name` unchanged if it starts with
// "nvidia.com/", else "nvidia.com/" + name ("gpu" -> "nvidia.com/gpu").
std::string QualifyResourceName(absl::string_view name);

// NVIDIA's limit on a full resource name.
inline constexpr size_t kMaxResourceNameLength = 63;
inline constexpr char kSharedSuffix[] = ".shared";

// OK if `name` is a full resource name NVIDIA accepts: "nvidia.com/"
// followed by a DNS-1123 subdomain (lower-case letters, digits, '-' and '.',
// starting and ending with a letter or digit), at most 63 characters in
// all. Result on failure: InvalidArgument saying what is wrong with the
// name (the caller names the setting).
absl::Status CheckResourceName(absl::string_view name);

// True if `ref` can name a device in sharing.*.resources[].devices: a GPU
// index ("3"), a MIG index ("3:1"), a GPU UUID ("GPU-" + a UUID in its
// 8-4-4-4-12 hexadecimal form) or a MIG UUID ("MIG-" + a UUID, or
// "MIG-GPU-<uuid>/<gi>/<ci>").
bool IsDeviceRef(absl::string_view ref);

// OK if `name` is a DNS-1123 subdomain (lower-case letters, digits, '-'
// and '.', each dot-separated part starting and ending with a letter or
// digit) of at most `max_length` characters. Result on failure:
// InvalidArgument saying what is wrong (the caller names the setting).
absl::Status CheckDnsSubdomain(absl::string_view name, size_t max_length);

// OK if `prefix` is a valid prefix of annotation keys: a DNS-1123 subdomain
// followed by '/' ("cdi.k8s.io/"). Result on failure: InvalidArgument
// saying what is wrong (the caller names the setting).
absl::Status CheckAnnotationPrefix(absl::string_view prefix);

}  // namespace gdp

#endif  // GDP_CONFIG_NAMES_H_
