#include "health/xid_policy.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "util/logging.h"

namespace gdp {
namespace {

constexpr XidClass kRecoverable = XidClass::kRecoverable;
constexpr XidClass kNeedsReset = XidClass::kNeedsReset;

// NVIDIA's Xid catalogue for Ampere and newer
// (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html),
// column "Resolution Bucket (Immediate Action)", mapped to our classes:
//   RESTART_APP, IGNORE, CHECK_MECHANICALS, XID_154 -> recoverable: the GPU
//     itself is fine once the failed work is gone; we still take it out of
//     scheduling for a quiet period (NVIDIA's plugin marks these unhealthy
//     for good) and probe it before it comes back.
//   RESET_GPU, RESTART_BM, RESTART_VM, UPDATE_SWFW, and the DBE, NVLink and
//     NVLink5 workflows -> needs-reset: nothing short of a reset (or more)
//     brings the GPU back.
// docs/health.md gives the reasons per row. `ignored_by_default` marks the
// application XIDs NVIDIA's plugin ignores (internal/rm/health.go).
constexpr XidInfo kTable[] = {
    {8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "RESTART_APP", kRecoverable,
     false},
    {11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "RESTART_APP", kRecoverable,
     false},
    {13, "ROBUST_CHANNEL_GR_EXCEPTION", "RESTART_APP", kRecoverable, true},
    {14, "ROBUST_CHANNEL_FAKE_ERROR", "IGNORE", kRecoverable, false},
    {25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "RESTART_APP", kRecoverable,
     false},
    {31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "RESTART_APP", kRecoverable,
     true},
    {32, "ROBUST_CHANNEL_PBDMA_ERROR", "RESTART_APP", kRecoverable, false},
    {37, "ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", "IGNORE",
     kRecoverable, false},
    {38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "IGNORE", kRecoverable,
     false},
    {39, "ROBUST_CHANNEL_CE0_ERROR", "RESTART_APP", kRecoverable, false},
    {40, "ROBUST_CHANNEL_CE1_ERROR", "RESTART_APP", kRecoverable, false},
    {41, "ROBUST_CHANNEL_CE2_ERROR", "RESTART_APP", kRecoverable, false},
    {43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "IGNORE", kRecoverable,
     true},
    {44, "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "IGNORE", kRecoverable, false},
    {45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "WORKFLOW_XID_45", kRecoverable,
     true},
    {46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "RESET_GPU", kNeedsReset, false},
    {48, "ROBUST_CHANNEL_GPU_ECC_DBE", "WORKFLOW_XID_48", kNeedsReset, false},
    {54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "CHECK_MECHANICALS",
     kRecoverable, false},
    {60, "ROBUST_CHANNEL_SEC2_ERROR", "RESTART_APP", kRecoverable, false},
    {62, "PMU_HALT_ERROR", "RESET_GPU", kNeedsReset, false},
    {63, "INFOROM_DRAM_RETIREMENT_EVENT", "IGNORE", kRecoverable, false},
    {64, "INFOROM_DRAM_RETIREMENT_FAILURE", "RESET_GPU", kNeedsReset, false},
    {66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "IGNORE", kRecoverable,
     false},
    {67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "IGNORE", kRecoverable,
     false},
    {68, "ROBUST_CHANNEL_NVDEC0_ERROR", "RESTART_APP", kRecoverable, true},
    {69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "RESTART_APP", kRecoverable, false},
    {70, "ROBUST_CHANNEL_CE3_ERROR", "RESTART_APP", kRecoverable, false},
    {71, "ROBUST_CHANNEL_CE4_ERROR", "RESTART_APP", kRecoverable, false},
    {72, "ROBUST_CHANNEL_CE5_ERROR", "RESTART_APP", kRecoverable, false},
    {74, "NVLINK_ERROR", "WORKFLOW_NVLINK_ERR", kNeedsReset, false},
    {75, "ROBUST_CHANNEL_CE6_ERROR", "RESTART_APP", kRecoverable, false},
    {76, "ROBUST_CHANNEL_CE7_ERROR", "RESTART_APP", kRecoverable, false},
    {77, "ROBUST_CHANNEL_CE8_ERROR", "RESTART_APP", kRecoverable, false},
    {78, "VGPU_START_ERROR", "UPDATE_SWFW", kNeedsReset, false},
    {79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "RESTART_BM", kNeedsReset,
     false},
    {80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "RESTART_APP", kRecoverable, false},
    {82, "ROBUST_CHANNEL_NVJPG0_ERROR", "RESTART_APP", kRecoverable, false},
    {83, "ROBUST_CHANNEL_NVDEC1_ERROR", "RESTART_APP", kRecoverable, false},
    {84, "ROBUST_CHANNEL_NVDEC2_ERROR", "RESTART_APP", kRecoverable, false},
    {85, "ROBUST_CHANNEL_CE9_ERROR", "RESTART_APP", kRecoverable, false},
    {86, "ROBUST_CHANNEL_OFA0_ERROR", "RESTART_APP", kRecoverable, false},
    {88, "ROBUST_CHANNEL_NVDEC3_ERROR", "RESTART_APP", kRecoverable, false},
    {89, "ROBUST_CHANNEL_NVDEC4_ERROR", "RESTART_APP", kRecoverable, false},
    {92, "EXCESSIVE_SBE_INTERRUPTS", "IGNORE", kRecoverable, false},
    {93, "INFOROM_ERASE_LIMIT_EXCEEDED", "IGNORE", kRecoverable, false},
    {94, "ROBUST_CHANNEL_CONTAINED_ERROR", "RESTART_APP", kRecoverable, false},
    {95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "RESET_GPU", kNeedsReset, false},
    {96, "ROBUST_CHANNEL_NVDEC5_ERROR", "RESTART_APP", kRecoverable, false},
    {97, "ROBUST_CHANNEL_NVDEC6_ERROR", "RESTART_APP", kRecoverable, false},
    {98, "ROBUST_CHANNEL_NVDEC7_ERROR", "RESTART_APP", kRecoverable, false},
    {99, "ROBUST_CHANNEL_NVJPG1_ERROR", "RESTART_APP", kRecoverable, false},
    {100, "ROBUST_CHANNEL_NVJPG2_ERROR", "RESTART_APP", kRecoverable, false},
    {101, "ROBUST_CHANNEL_NVJPG3_ERROR", "RESTART_APP", kRecoverable, false},
    {102, "ROBUST_CHANNEL_NVJPG4_ERROR", "RESTART_APP", kRecoverable, false},
    {103, "ROBUST_CHANNEL_NVJPG5_ERROR", "RESTART_APP", kRecoverable, false},
    {104, "ROBUST_CHANNEL_NVJPG6_ERROR", "RESTART_APP", kRecoverable, false},
    {105, "ROBUST_CHANNEL_NVJPG7_ERROR", "RESTART_APP", kRecoverable, false},
    {106, "SMBPBI_TEST_MESSAGE", "IGNORE", kRecoverable, false},
    {107, "SMBPBI_TEST_MESSAGE_SILENT", "IGNORE", kRecoverable, false},
    {108, "NVLINK_REMOTE_TRANSLATION_ERROR", "IGNORE", kRecoverable, false},
    {109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "RESET_GPU", kNeedsReset, true},
    {110, "SEC_FAULT_ERROR", "RESET_GPU", kNeedsReset, false},
    {119, "GSP_RPC_TIMEOUT", "RESET_GPU", kNeedsReset, false},
    {120, "GSP_ERROR", "RESET_GPU", kNeedsReset, false},
    {121, "C2C_ERROR", "IGNORE", kRecoverable, false},
    {136, "ALI_TRAINING_FAIL", "RESET_GPU", kNeedsReset, false},
    {137, "NVLINK_PRIV_ERR", "IGNORE", kRecoverable, false},
    {140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "RESET_GPU", kNeedsReset, false},
    {143, "GPU_INIT_ERROR", "RESET_GPU", kNeedsReset, false},
    {144, "NVLINK_SAW_ERROR", "WORKFLOW_NVLINK5_ERR", kNeedsReset, false},
    {145, "NVLINK_RLW_ERROR", "WORKFLOW_NVLINK5_ERR", kNeedsReset, false},
    {146, "NVLINK_TLW_ERROR", "WORKFLOW_NVLINK5_ERR", kNeedsReset, false},
    {147, "NVLINK_TREX_ERROR", "WORKFLOW_NVLINK5_ERR", kNeedsReset, false},
    {148, "NVLINK_NVLPW_CTRL_ERROR", "WORKFLOW_NVLINK5_ERR", kNeedsReset,
     false},
    {149, "NVLINK_NETIR_ERROR", "WORKFLOW_NVLINK5_ERR", kNeedsReset, false},
    {150, "NVLINK_MSE_ERROR", "WORKFLOW_NVLINK5_ERR", kNeedsReset, false},
    {151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "RESTART_VM", kNeedsReset,
     false},
    {154, "GPU_RECOVERY_ACTION_CHANGED", "XID_154", kRecoverable, false},
    {155, "NVLINK_SW_DEFINED_ERROR", "RESET_GPU", kNeedsReset, false},
};

constexpr uint64_t kDoubleBitEccXid = 48;

// "catalogue RESET_GPU => needs-reset" or "unknown XID => recoverable".
std::string TableRule(uint64_t xid, XidClass* cls) {
  const XidInfo* info = FindXid(xid);
  if (info == nullptr) {
    *cls = kUnknownXidClass;
    return absl::StrCat("unknown XID => ", XidClassName(kUnknownXidClass),
                        " (default)");
  }
  *cls = info->cls;
  return absl::StrCat(info->mnemonic, ", catalogue ", info->catalogue_action,
                      " => ", XidClassName(info->cls));
}

std::string SortedList(const absl::flat_hash_set<uint64_t>& s) {
  std::vector<uint64_t> v(s.begin(), s.end());
  std::sort(v.begin(), v.end());
  return absl::StrJoin(v, ", ");
}

}  // namespace

const char* XidClassName(XidClass c) {
  switch (c) {
    case XidClass::kIgnored:
      return "ignored";
    case XidClass::kRecoverable:
      return "recoverable";
    case XidClass::kNeedsReset:
      return "needs-reset";
  }
  return "?";
}

absl::Span<const XidInfo> XidTable() { return kTable; }

const XidInfo* FindXid(uint64_t xid) {
  const XidInfo* end = std::end(kTable);
  const XidInfo* it = std::lower_bound(
      std::begin(kTable), end, xid,
      [](const XidInfo& row, uint64_t x) { return row.xid < x; });
  return it != end && it->xid == xid ? it : nullptr;
}

XidList ParseXidList(absl::string_view text) {
  XidList list;
  for (absl::string_view entry : absl::StrSplit(text, ',')) {
    std::string e = absl::AsciiStrToLower(absl::StripAsciiWhitespace(entry));
    if (e.empty()) continue;
    if (e == "all" || e == "xids") {
      list.all = true;
      continue;
    }
    uint64_t xid = 0;
    const bool digits = std::all_of(e.begin(), e.end(), [](char c) {
      return absl::ascii_isdigit(static_cast<unsigned char>(c));
    });
    if (!digits || !absl::SimpleAtoi(e, &xid)) {
      list.malformed.push_back(std::string(absl::StripAsciiWhitespace(entry)));
      continue;
    }
    if (xid == 0) {
      list.all = true;
      continue;
    }
    list.xids.push_back(xid);
  }
  return list;
}

XidPolicy::XidPolicy(XidList disabled, XidList enabled)
    : disable_all_(disabled.all),
      enable_all_(enabled.all),
      disabled_(disabled.xids.begin(), disabled.xids.end()),
      enabled_(enabled.xids.begin(), enabled.xids.end()) {}

XidPolicy XidPolicy::FromEnvironment(absl::string_view disable_healthchecks,
                                     absl::string_view enable_healthchecks) {
  const struct {
    const char* name;
    absl::string_view value;
  } vars[] = {{"DP_DISABLE_HEALTHCHECKS", disable_healthchecks},
              {"DP_ENABLE_HEALTHCHECKS", enable_healthchecks}};
  XidList lists[2];
  for (int i = 0; i < 2; ++i) {
    lists[i] = ParseXidList(vars[i].value);
    for (const std::string& m : lists[i].malformed) {
      LOG_WARN("{}: ignoring '{}': not an XID number", vars[i].name, m);
    }
  }
  return XidPolicy(std::move(lists[0]), std::move(lists[1]));
}

XidDecision XidPolicy::Decide(uint64_t xid) const {
  XidDecision d;
  std::string prefix;
  if (enable_all_) {
    prefix = "DP_ENABLE_HEALTHCHECKS=all; ";
  } else if (enabled_.contains(xid)) {
    prefix = "DP_ENABLE_HEALTHCHECKS; ";
  } else if (disable_all_) {
    d.rule = "ignored (DP_DISABLE_HEALTHCHECKS=all)";
    return d;
  } else if (disabled_.contains(xid)) {
    d.rule = "ignored (DP_DISABLE_HEALTHCHECKS)";
    return d;
  } else if (const XidInfo* info = FindXid(xid);
             info != nullptr && info->ignored_by_default) {
    d.rule = absl::StrCat("ignored (application error ", info->mnemonic,
                          ", ignored by default)");
    return d;
  }
  d.rule = prefix + TableRule(xid, &d.cls);
  return d;
}

XidDecision XidPolicy::DecideEcc(bool double_bit) const {
  if (!double_bit) {
    return {XidClass::kIgnored,
            "single-bit ECC error ignored (corrected by the hardware)"};
  }
  XidDecision d = Decide(kDoubleBitEccXid);
  d.rule = absl::StrCat("double-bit ECC error (as XID 48: ", d.rule, ")");
  return d;
}

std::string XidPolicy::Describe() const {
  if (monitoring_disabled()) {
    return "health checks disabled (DP_DISABLE_HEALTHCHECKS=all)";
  }
  if (enable_all_) return "checking every XID (DP_ENABLE_HEALTHCHECKS=all)";
  std::string out;
  if (disable_all_) {
    out = "ignoring every XID (DP_DISABLE_HEALTHCHECKS=all)";
  } else {
    absl::flat_hash_set<uint64_t> ignored = disabled_;
    for (const XidInfo& row : kTable) {
      if (row.ignored_by_default) ignored.insert(row.xid);
    }
    for (uint64_t x : enabled_) ignored.erase(x);
    out = absl::StrCat("ignoring XIDs ", SortedList(ignored));
  }
  if (!enabled_.empty()) {
    absl::StrAppend(&out, "; checking XIDs ", SortedList(enabled_),
                    " (DP_ENABLE_HEALTHCHECKS)");
  }
  return out;
}

}  // namespace gdp
