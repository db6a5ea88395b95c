#include "config/feature_gates.h"

#include <map>
#include <optional>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gdp {
namespace {

constexpr absl::string_view kConsumableShares = "ConsumableShares";
constexpr absl::string_view kDynamicMig = "DynamicMIG";
constexpr absl::string_view kNoComputeDomains =
    "ComputeDomains (IMEX) are not supported here; accepted, no effect";

// Go's strconv.ParseBool, which component-base's Set uses.
std::optional<bool> ParseGoBool(absl::string_view v) {
  for (absl::string_view t : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (v == t) return true;
  }
  for (absl::string_view f : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (v == f) return false;
  }
  return std::nullopt;
}

const GateInfo* FindGate(absl::string_view name) {
  for (const GateInfo& g : NvidiaFeatureGates()) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

std::string KnownGates() {
  std::vector<absl::string_view> names;
  for (const GateInfo& g : NvidiaFeatureGates()) names.push_back(g.name);
  names.push_back("AllAlpha");
  names.push_back("AllBeta");
  return absl::StrJoin(names, ", ");
}

}  // namespace

const std::vector<GateInfo>& NvidiaFeatureGates() {
  static const std::vector<GateInfo>* const gates = new std::vector<GateInfo>{
      {kConsumableShares, false, GateSupport::kImplemented,
       "with `--consumable-shares`, GPUs are published for several claims "
       "at once, their memory a consumable capacity "
       "([dra.md](dra.md#consumable-shares))"},
      {kDynamicMig, false, GateSupport::kImplemented,
       "each MIG-capable GPU is published as shared counters plus the whole "
       "GPU and every MIG profile placement consuming them (KEP-4815); MIG "
       "devices are made at prepare and destroyed at unprepare; not with "
       "`MPSSupport`, `NVMLDeviceHealthCheck` or `PassthroughSupport`, as "
       "in NVIDIA's"},
      {"PassthroughSupport", false, GateSupport::kDefaultOnly,
       "VFIO passthrough is not supported"},
      {"DeviceMetadata", false, GateSupport::kDefaultOnly,
       "device metadata files are not written (NVIDIA's needs "
       "PassthroughSupport)"},
      {"FabricManagerPartitioning", false, GateSupport::kDefaultOnly,
       "Fabric Manager partitions are not managed"},
      {"DRAListTypeAttributes", false, GateSupport::kDefaultOnly,
       "no list-valued attributes are published"},
      {"TimeSlicingSettings", false, GateSupport::kNoEffect,
       "`TimeSlicing` claim configs are served without it (interval "
       "`Default`; others are refused)"},
      {"MPSSupport", false, GateSupport::kNoEffect,
       "`MPS` claim configs are served without it, through `--mps-root`"},
      {"NVMLDeviceHealthCheck", false, GateSupport::kNoEffect,
       "health is always checked (`--disable-healthchecks` turns it off)"},
      {"IMEXDaemonsWithDNSNames", true, GateSupport::kNoEffect,
       kNoComputeDomains},
      {"ComputeDomainCliques", true, GateSupport::kNoEffect, kNoComputeDomains},
      {"CrashOnNVLinkFabricErrors", true, GateSupport::kNoEffect,
       kNoComputeDomains},
      {"HostManagedIMEXDaemon", false, GateSupport::kNoEffect,
       kNoComputeDomains},
      {"ContextualLogging", true, GateSupport::kNoEffect,
       "a logging gate of Kubernetes' component-base; accepted, no effect"},
      {"LoggingAlphaOptions", false, GateSupport::kNoEffect,
       "a logging gate of Kubernetes' component-base; accepted, no effect"},
      {"LoggingBetaOptions", true, GateSupport::kNoEffect,
       "a logging gate of Kubernetes' component-base; accepted, no effect"},
  };
  return *gates;
}

absl::Status ParseFeatureGates(absl::string_view text, FeatureGates* gates) {
  // Name -> value, the last of a name winning, as component-base's Set.
  std::map<std::string, bool, std::less<>> given;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    if (item.empty()) continue;
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(item, absl::MaxSplits('=', 1));
    const absl::string_view name = absl::StripAsciiWhitespace(kv.first);
    if (item.find('=') == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("missing bool value for ", name));
    }
    const absl::string_view value = absl::StripAsciiWhitespace(kv.second);
    std::optional<bool> on = ParseGoBool(value);
    if (!on.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "invalid value of ", name, "=", value, " (true or false)"));
    }
    if (name != "AllAlpha" && name != "AllBeta" && FindGate(name) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown feature gate '", name, "' (known: ", KnownGates(), ")"));
    }
    given[std::string(name)] = *on;
  }
  // Alpha gates NVIDIA's AllAlpha=true would turn on include DynamicMIG and
  // PassthroughSupport, which NVIDIA's own validation then refuses together.
  if (auto it = given.find("AllAlpha"); it != given.end() && it->second) {
    return absl::InvalidArgumentError(
        "AllAlpha=true is not supported: name the gates to turn on");
  }
  auto value = [&](const GateInfo& g) {
    auto it = given.find(g.name);
    return it != given.end() ? it->second : g.nvidia_default;
  };
  for (const GateInfo& g : NvidiaFeatureGates()) {
    if (g.support == GateSupport::kDefaultOnly &&
        value(g) != g.nvidia_default) {
      return absl::InvalidArgumentError(
          absl::StrCat(g.name, "=", value(g) ? "true" : "false",
                       " is not supported: ", g.meaning));
    }
  }
  // NVIDIA's ValidateFeatureGates: ComputeDomainCliques needs
  // IMEXDaemonsWithDNSNames. An explicit AllBeta=false turns both off.
  auto named_or_all_beta = [&](absl::string_view name) {
    if (auto it = given.find(name); it != given.end()) return it->second;
    if (auto it = given.find("AllBeta"); it != given.end()) return it->second;
    return FindGate(name)->nvidia_default;
  };
  if (named_or_all_beta("ComputeDomainCliques") &&
      !named_or_all_beta("IMEXDaemonsWithDNSNames")) {
    return absl::InvalidArgumentError(
        "feature gate ComputeDomainCliques requires IMEXDaemonsWithDNSNames "
        "to also be enabled");
  }
  // NVIDIA's ValidateFeatureGates: DynamicMIG "is currently mutually
  // exclusive with" PassthroughSupport (refused above anyway),
  // NVMLDeviceHealthCheck and MPSSupport. Gates set only by AllAlpha never
  // get here (AllAlpha=true is refused).
  if (value(*FindGate(kDynamicMig))) {
    for (absl::string_view other :
         {"PassthroughSupport", "NVMLDeviceHealthCheck", "MPSSupport"}) {
      if (value(*FindGate(other))) {
        return absl::InvalidArgumentError(
            absl::StrCat("feature gate ", kDynamicMig,
                         " is currently mutually exclusive with ", other,
                         " (as in NVIDIA's driver): turn one of them off"));
      }
    }
  }
  FeatureGates out;
  out.consumable_shares = value(*FindGate(kConsumableShares));
  out.dynamic_mig = value(*FindGate(kDynamicMig));
  *gates = out;
  return absl::OkStatus();
}

std::string FormatFeatureGates(const FeatureGates& gates) {
  std::vector<std::string> on;
  if (gates.consumable_shares) {
    on.push_back(absl::StrCat(kConsumableShares, "=true"));
  }
  if (gates.dynamic_mig) on.push_back(absl::StrCat(kDynamicMig, "=true"));
  return absl::StrJoin(on, ",");
}

absl::Status ParseConsumableShares(absl::string_view text,
                                   ConsumableShares* shares) {
  ConsumableShares out;
  if (text == "disabled") {
    out.mode = ConsumableShares::Mode::kDisabled;
  } else if (text == "memory") {
    out.mode = ConsumableShares::Mode::kMemory;
  } else if (text == "unlimited") {
    out.mode = ConsumableShares::Mode::kUnlimited;
  } else {
    int n = 0;
    if (text.empty() || !absl::c_all_of(text, absl::ascii_isdigit) ||
        !absl::SimpleAtoi(text, &n) || n < 2 || n > kMaxConsumableShares) {
      return absl::InvalidArgumentError(absl::StrCat(
          "must be disabled, memory, unlimited or a number of shares from 2 "
          "to ",
          kMaxConsumableShares,
          " (with 1, the API server refuses NVIDIA's `shares` capacity: its "
          "min plus one step exceeds it), got '",
          text, "'"));
    }
    out.mode = ConsumableShares::Mode::kCount;
    out.count = n;
  }
  *shares = out;
  return absl::OkStatus();
}

std::string FormatConsumableShares(const ConsumableShares& shares) {
  switch (shares.mode) {
    case ConsumableShares::Mode::kDisabled:
      return "disabled";
    case ConsumableShares::Mode::kMemory:
      return "memory";
    case ConsumableShares::Mode::kUnlimited:
      return "unlimited";
    case ConsumableShares::Mode::kCount:
      break;
  }
  return absl::StrCat(shares.count);
}

}  // namespace gdp
