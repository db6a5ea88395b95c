#include "config/names.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gdp {
namespace {

template <typename E>
struct Names;

template <>
struct Names<MigStrategy> {
  static constexpr std::pair<MigStrategy, absl::string_view> kAll[] = {
      {MigStrategy::kNone, "none"},
      {MigStrategy::kSingle, "single"},
      {MigStrategy::kMixed, "mixed"},
  };
};

template <>
struct Names<DeviceListStrategy> {
  static constexpr std::pair<DeviceListStrategy, absl::string_view> kAll[] = {
      {DeviceListStrategy::kEnvvar, "envvar"},
      {DeviceListStrategy::kVolumeMounts, "volume-mounts"},
      {DeviceListStrategy::kCdiAnnotations, "cdi-annotations"},
      {DeviceListStrategy::kCdiCri, "cdi-cri"},
  };
};

template <>
struct Names<DeviceIdStrategy> {
  static constexpr std::pair<DeviceIdStrategy, absl::string_view> kAll[] = {
      {DeviceIdStrategy::kUuid, "uuid"},
      {DeviceIdStrategy::kIndex, "index"},
  };
};

template <>
struct Names<SharedAllocationPolicy> {
  static constexpr std::pair<SharedAllocationPolicy, absl::string_view> kAll[] =
      {
          {SharedAllocationPolicy::kDistributed, "distributed"},
          {SharedAllocationPolicy::kPacked, "packed"},
      };
};

template <>
struct Names<SharingStrategy> {
  static constexpr std::pair<SharingStrategy, absl::string_view> kAll[] = {
      {SharingStrategy::kNone, "none"},
      {SharingStrategy::kTimeSlicing, "time-slicing"},
      {SharingStrategy::kMps, "mps"},
  };
};

template <>
struct Names<DeviceApi> {
  static constexpr std::pair<DeviceApi, absl::string_view> kAll[] = {
      {DeviceApi::kDevicePlugin, "device-plugin"},
      {DeviceApi::kDra, "dra"},
      {DeviceApi::kBoth, "both"},
  };
};

template <>
struct Names<MemoryLimitHookKind> {
  static constexpr std::pair<MemoryLimitHookKind, absl::string_view> kAll[] = {
      {MemoryLimitHookKind::kOurs, "gdp"},
      {MemoryLimitHookKind::kNvidia, "nvidia"},
  };
};

template <>
struct Names<UnenforcedShares> {
  static constexpr std::pair<UnenforcedShares, absl::string_view> kAll[] = {
      {UnenforcedShares::kRefuse, "refuse"},
      {UnenforcedShares::kAllow, "allow"},
  };
};

// Checks here are loops, not std::regex: libstdc++'s regex recurses per
// character, so a long value (a 26,000-digit device reference) overflowed
// the stack.

bool IsLowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// One DNS label: [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool IsDnsLabel(absl::string_view s) {
  if (s.empty() || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) {
    return false;
  }
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

bool IsDnsSubdomain(absl::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (absl::string_view label : absl::StrSplit(s, '.')) {
    if (!IsDnsLabel(label)) return false;
  }
  return true;
}

bool IsUuid(absl::string_view s) {
  // 8-4-4-4-12 hex digits.
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-'
             : !absl::ascii_isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

// A decimal number that fits 64 bits, as Go's strconv.ParseUint(s, 10, 0).
bool IsUnsigned(absl::string_view s) {
  uint64_t unused = 0;
  return !s.empty() && s.size() <= 20 &&
         std::all_of(s.begin(), s.end(),
                     [](char c) { return c >= '0' && c <= '9'; }) &&
         absl::SimpleAtoi(s, &unused);
}

bool IsGpuUuid(absl::string_view s) {
  return absl::ConsumePrefix(&s, "GPU-") && IsUuid(s);
}

}  // namespace

template <typename E>
std::optional<E> ParseName(absl::string_view name) {
  for (const auto& [value, spelling] : Names<E>::kAll) {
    if (spelling == name) return value;
  }
  return std::nullopt;
}

template <typename E>
absl::string_view NameOf(E value) {
  for (const auto& [v, spelling] : Names<E>::kAll) {
    if (v == value) return spelling;
  }
  return "unknown";
}

template <typename E>
std::vector<std::string> AllNames() {
  std::vector<std::string> out;
  for (const auto& entry : Names<E>::kAll) {
    out.emplace_back(entry.second);
  }
  return out;
}

template <typename E>
std::string NameChoices() {
  std::string out;
  const size_t n = std::size(Names<E>::kAll);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) absl::StrAppend(&out, i + 1 == n ? " or " : ", ");
    absl::StrAppend(&out, Names<E>::kAll[i].second);
  }
  return out;
}

#define GDP_NAMES_INSTANTIATE(E)                             \
  template std::optional<E> ParseName<E>(absl::string_view); \
  template absl::string_view NameOf<E>(E);                   \
  template std::vector<std::string> AllNames<E>();           \
  template std::string NameChoices<E>();
GDP_NAMES_INSTANTIATE(MigStrategy)
GDP_NAMES_INSTANTIATE(DeviceListStrategy)
GDP_NAMES_INSTANTIATE(DeviceIdStrategy)
GDP_NAMES_INSTANTIATE(SharedAllocationPolicy)
GDP_NAMES_INSTANTIATE(SharingStrategy)
GDP_NAMES_INSTANTIATE(DeviceApi)
GDP_NAMES_INSTANTIATE(MemoryLimitHookKind)
GDP_NAMES_INSTANTIATE(UnenforcedShares)
#undef GDP_NAMES_INSTANTIATE

std::string QualifyResourceName(absl::string_view name) {
  if (absl::StartsWith(name, kResourcePrefix)) return std::string(name);
  return absl::StrCat(kResourcePrefix, name);
}

absl::Status CheckResourceName(absl::string_view name) {
  absl::string_view local = name;
  if (!absl::ConsumePrefix(&local, kResourcePrefix)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resource name '", name, "' must start with '", kResourcePrefix, "'"));
  }
  if (name.size() > kMaxResourceNameLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resource name '", name, "' is ", name.size(),
        " characters long; at most ", kMaxResourceNameLength, " are allowed"));
  }
  if (absl::StrContains(local, '/')) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resource name '", name, "' has more than one '/'; only the ",
        kResourcePrefix, " domain is allowed"));
  }
  if (!IsDnsSubdomain(local)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resource name '", name, "': '", local,
        "' must consist of lower-case letters, digits, '-' and '.', and "
        "start and end with a letter or digit"));
  }
  return absl::OkStatus();
}

bool IsDeviceRef(absl::string_view ref) {
  if (IsUnsigned(ref)) return true;
  std::vector<absl::string_view> mig = absl::StrSplit(ref, ':');
  if (mig.size() == 2 && IsUnsigned(mig[0]) && IsUnsigned(mig[1])) {
    return true;
  }
  if (IsGpuUuid(ref)) return true;
  absl::string_view rest = ref;
  if (!absl::ConsumePrefix(&rest, "MIG-")) return false;
  if (IsUuid(rest)) return true;
  std::vector<absl::string_view> parts = absl::StrSplit(rest, '/');
  return parts.size() == 3 && IsGpuUuid(parts[0]) && IsUnsigned(parts[1]) &&
         IsUnsigned(parts[2]);
}

absl::Status CheckDnsSubdomain(absl::string_view name, size_t max_length) {
  if (name.empty()) return absl::InvalidArgumentError("must not be empty");
  if (name.size() > max_length) {
    return absl::InvalidArgumentError(absl::StrCat("is ", name.size(),
                                                   " characters long; at most ",
                                                   max_length, " are allowed"));
  }
  if (!IsDnsSubdomain(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", name,
        "' must consist of lower-case letters, digits, '-' and '.', each "
        "dot-separated part starting and ending with a letter or digit"));
  }
  return absl::OkStatus();
}

absl::Status CheckAnnotationPrefix(absl::string_view prefix) {
  absl::string_view domain = prefix;
  if (!absl::ConsumeSuffix(&domain, "/")) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", prefix, "' must end with '/'"));
  }
  if (!IsDnsSubdomain(domain)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", domain,
        "' before the '/' must be a DNS subdomain (lower-case letters, "
        "digits, '-' and '.', starting and ending with a letter or digit)"));
  }
  return absl::OkStatus();
}

}  // namespace gdp
