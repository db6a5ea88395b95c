// NVIDIA's DRA driver's --feature-gates and --consumable-shares, parsed as
// NVIDIA's driver parses them (Kubernetes' component-base feature gates:
// "Name=bool,..."), against NVIDIA's list of gates. Pure; thread-safe.
#ifndef GDP_CONFIG_FEATURE_GATES_H_
#define GDP_CONFIG_FEATURE_GATES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "config/config.h"

namespace gdp {

// What this daemon does with one of NVIDIA's gates.
enum class GateSupport {
  kImplemented,  // acted on (ConsumableShares)
  kNoEffect,     // either value accepted; nothing here depends on it
  kDefaultOnly,  // only NVIDIA's default accepted: the feature is missing
};

struct GateInfo {
  absl::string_view name;  // "ConsumableShares"
  bool nvidia_default;     // NVIDIA's default value
  GateSupport support;
  absl::string_view meaning;  // for messages and docs: what it is here
};

// NVIDIA's gates (pkg/featuregates/featuregates.go of
// kubernetes-sigs/dra-driver-nvidia-gpu, plus the logging gates of
// component-base NVIDIA's registry also holds), in the order of the docs.
const std::vector<GateInfo>& NvidiaFeatureGates();

// Parses `text` as Kubernetes' --feature-gates does: comma-separated
// "Name=value" (spaces around either trimmed, empty items skipped, the last
// of a name wins), value one of Go's booleans (1, t, T, TRUE, true, True,
// 0, f, F, FALSE, false, False), into `gates` (unnamed gates keep their
// default). Also refuses what NVIDIA's driver refuses
// (ComputeDomainCliques=true without IMEXDaemonsWithDNSNames; DynamicMIG=true
// with MPSSupport, NVMLDeviceHealthCheck or PassthroughSupport; AllAlpha
// set true).
// Result on failure: InvalidArgument naming the item: "unknown feature gate
// 'X' (known: ...)", "missing bool value for X", "invalid value of X=y",
// "X=true is not supported: <why>", or NVIDIA's "feature gate X requires Y
// to also be enabled" / "feature gate X is currently mutually exclusive with
// Y".
absl::Status ParseFeatureGates(absl::string_view text, FeatureGates* gates);
// `gates` as --feature-gates spells it: the gates not at NVIDIA's default
// ("ConsumableShares=true,DynamicMIG=true"); "" if none.
std::string FormatFeatureGates(const FeatureGates& gates);

// Parses --consumable-shares: "disabled", "memory", "unlimited" or a whole
// number of shares (2 to kMaxConsumableShares).
// Result on failure: InvalidArgument "must be ..., got '<text>'".
absl::Status ParseConsumableShares(absl::string_view text,
                                   ConsumableShares* shares);
std::string FormatConsumableShares(const ConsumableShares& shares);

// The most shares --consumable-shares=<N> may give.
inline constexpr int kMaxConsumableShares = 1024;

}  // namespace gdp

#endif  // GDP_CONFIG_FEATURE_GATES_H_
