// What an NVML health event means for a GPU: XIDs (NVIDIA's driver error
// codes) and ECC events are classed by a table (xid_policy.cc, explained in
// docs/health.md) and by NVIDIA's environment variables
// DP_DISABLE_HEALTHCHECKS / DP_ENABLE_HEALTHCHECKS, whose strings main
// passes in (nothing below main reads the environment).
#ifndef GDP_HEALTH_XID_POLICY_H_
#define GDP_HEALTH_XID_POLICY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace gdp {

// What an event does to the GPU (or MIG device) it names.
enum class XidClass {
  kIgnored,      // logged, health unchanged
  kRecoverable,  // unhealthy; probed after a quiet period, healthy again
                 // when the probe passes and no new critical event came
  kNeedsReset,   // unhealthy until the GPU is reset (it is lost and comes
                 // back, or disappears and reappears)
};

// "ignored", "recoverable", "needs-reset".
const char* XidClassName(XidClass c);

// One row of the classification table.
struct XidInfo {
  uint64_t xid;
  const char* mnemonic;  // NVIDIA's name, e.g. "ROBUST_CHANNEL_GPU_ECC_DBE"
  // The "Resolution Bucket (Immediate Action)" of NVIDIA's Xid catalogue,
  // e.g. "RESET_GPU", "RESTART_APP", "RESTART_BM", "IGNORE".
  const char* catalogue_action;
  XidClass cls;  // ours, when the XID is not filtered out
  // An application error NVIDIA's plugin ignores by default (13, 31, 43,
  // 45, 68, 109).
  bool ignored_by_default;
};

// The table, ordered by XID.
absl::Span<const XidInfo> XidTable();

// The row for `xid`, or nullptr for an XID the table does not know.
const XidInfo* FindXid(uint64_t xid);

// XID 79, "GPU has fallen off the bus": the GPU is lost until it is reset
// (HealthTracker treats it as lost, not as needing a reset).
inline constexpr uint64_t kXidFallenOffTheBus = 79;

// The class of XIDs the table does not know.
inline constexpr XidClass kUnknownXidClass = XidClass::kRecoverable;

// One of NVIDIA's XID lists, as DP_DISABLE_HEALTHCHECKS and
// DP_ENABLE_HEALTHCHECKS write them: comma-separated, case-insensitive,
// blanks around entries and empty entries ignored. "all" or "xids"
// anywhere means every XID (the other entries are then irrelevant), and so
// does "0" (NVIDIA keys "all" as XID 0). Entries that are not unsigned
// decimal numbers are kept in `malformed` and otherwise ignored.
struct XidList {
  bool all = false;
  std::vector<uint64_t> xids;  // in the order given, without "0"
  std::vector<std::string> malformed;

  bool empty() const { return !all && xids.empty(); }
};
XidList ParseXidList(absl::string_view text);

// The result of classing one event.
struct XidDecision {
  XidClass cls = XidClass::kIgnored;
  // The rule that decided, for logs and device reasons, e.g.
  // "GSP_ERROR, catalogue RESET_GPU => needs-reset" or
  // "ignored (DP_DISABLE_HEALTHCHECKS)".
  std::string rule;
};

// Immutable; thread-safe.
//
// An XID is filtered out (ignored) as NVIDIA's plugin filters it: when
// DP_ENABLE_HEALTHCHECKS lists it, it is checked; else when
// DP_ENABLE_HEALTHCHECKS is "all", it is checked; else when
// DP_DISABLE_HEALTHCHECKS lists it, is "all", or it is one of the default
// application XIDs, it is ignored; else it is checked. A checked XID gets
// its class from the table (kUnknownXidClass if absent).
//
// One difference from NVIDIA's code, which follows NVIDIA's documentation
// instead: with DP_DISABLE_HEALTHCHECKS=all, XIDs listed in
// DP_ENABLE_HEALTHCHECKS are still checked (NVIDIA's comment says so; its
// code turns every check off). With "all" and no enabled XID, checking is
// off altogether (monitoring_disabled()).
class XidPolicy {
 public:
  // NVIDIA's default: only the application XIDs are ignored.
  XidPolicy() = default;
  XidPolicy(XidList disabled, XidList enabled);

  // From the values of DP_DISABLE_HEALTHCHECKS and DP_ENABLE_HEALTHCHECKS
  // (empty when unset). Malformed entries are logged (warning) and skipped,
  // as NVIDIA's plugin does.
  static XidPolicy FromEnvironment(absl::string_view disable_healthchecks,
                                   absl::string_view enable_healthchecks);

  // True when every health check is off: no monitor should run and every
  // device stays healthy (DP_DISABLE_HEALTHCHECKS=all|xids, nothing
  // enabled).
  bool monitoring_disabled() const {
    return disable_all_ && !enable_all_ && enabled_.empty();
  }

  // What XID `xid` does.
  XidDecision Decide(uint64_t xid) const;

  // What an ECC event does. A double-bit (uncorrectable) error is the
  // condition XID 48 reports, so it is filtered and classed as XID 48 (a
  // filter that ignores XID 48 ignores the event too). A single-bit error
  // was corrected by the hardware: ignored (a storm of them shows up as
  // XID 92).
  XidDecision DecideEcc(bool double_bit) const;

  // One line for the startup log: which XIDs are ignored and which are
  // explicitly checked.
  std::string Describe() const;

 private:
  bool disable_all_ = false;
  bool enable_all_ = false;
  absl::flat_hash_set<uint64_t> disabled_;  // listed in DP_DISABLE_...
  absl::flat_hash_set<uint64_t> enabled_;   // listed in DP_ENABLE_...
};

}  // namespace gdp

#endif  // GDP_HEALTH_XID_POLICY_H_
