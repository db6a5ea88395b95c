#include "fake_nvml/control_command.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gdp::fake_nvml {
namespace {

constexpr const char* kUsage =
    "expected lose <gpu> | restore <gpu> | xid <gpu> <xid> [<gi> <ci>] | "
    "ecc <gpu> single|double | fail <code> | fail-mig <gpu> <mig> <code> | "
    "fail-nvlink <gpu> <code> | hang <gpu> | hang-all | recover | "
    "remap-pending <gpu> | remap-failure <gpu> | pages-pending <gpu> | "
    "reset <gpu> | recovery-action <gpu> none|gpu-reset|node-reboot|"
    "drain-p2p|drain-and-reset | pcie <gpu> <gen> <width> | "
    "throttle <gpu> <mask> | "
    "nvlink <gpu> <link> active|inactive";

// The recovery-action names, as NVML_GPU_RECOVERY_ACTION_* values.
constexpr std::pair<const char*, nvmlDeviceGpuRecoveryAction_t>
    kRecoveryActions[] = {
        {"none", NVML_GPU_RECOVERY_ACTION_NONE},
        {"gpu-reset", NVML_GPU_RECOVERY_ACTION_GPU_RESET},
        {"node-reboot", NVML_GPU_RECOVERY_ACTION_NODE_REBOOT},
        {"drain-p2p", NVML_GPU_RECOVERY_ACTION_DRAIN_P2P},
        {"drain-and-reset", NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET},
};

bool IsDefinedFailure(int code) {
  return (code >= NVML_ERROR_UNINITIALIZED &&
          code <= NVML_ERROR_INVALID_STATE) ||
         code == NVML_ERROR_UNKNOWN;
}

template <typename T>
absl::Status ParseNumber(absl::string_view word, absl::string_view what,
                         T* out) {
  const bool digits =
      !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return absl::ascii_isdigit(static_cast<unsigned char>(c));
      });
  if (!digits || !absl::SimpleAtoi(word, out)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad ", what, " \"", word, "\""));
  }
  return absl::OkStatus();
}

absl::Status WrongArgs(absl::string_view verb) {
  return absl::InvalidArgumentError(
      absl::StrCat("wrong number of arguments to ", verb, "; ", kUsage));
}

}  // namespace

absl::StatusOr<std::optional<ControlCommand>> ParseControlLine(
    absl::string_view line) {
  const std::vector<absl::string_view> words =
      absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
  if (words.empty() || words[0][0] == '#') return std::nullopt;
  const absl::string_view verb = words[0];
  const size_t args = words.size() - 1;
  ControlCommand command;
  if (verb == "lose" || verb == "restore" || verb == "hang") {
    if (args != 1) return WrongArgs(verb);
    command.kind = verb == "lose"      ? ControlCommand::Kind::kLose
                   : verb == "restore" ? ControlCommand::Kind::kRestore
                                       : ControlCommand::Kind::kHang;
  } else if (verb == "remap-pending" || verb == "remap-failure" ||
             verb == "pages-pending" || verb == "reset") {
    if (args != 1) return WrongArgs(verb);
    command.kind =
        verb == "remap-pending"   ? ControlCommand::Kind::kRemapPending
        : verb == "remap-failure" ? ControlCommand::Kind::kRemapFailure
        : verb == "pages-pending" ? ControlCommand::Kind::kPagesPending
                                  : ControlCommand::Kind::kReset;
  } else if (verb == "recovery-action") {
    if (args != 2) return WrongArgs(verb);
    command.kind = ControlCommand::Kind::kRecoveryAction;
    bool known = false;
    for (const auto& [name, action] : kRecoveryActions) {
      if (words[2] == name) {
        command.recovery_action = action;
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("a recovery action is none, gpu-reset, node-reboot, "
                       "drain-p2p or drain-and-reset, not \"",
                       words[2], "\""));
    }
  } else if (verb == "pcie") {
    if (args != 3) return WrongArgs(verb);
    command.kind = ControlCommand::Kind::kPcie;
    if (absl::Status s =
            ParseNumber(words[2], "PCIe generation", &command.pcie_gen);
        !s.ok() || command.pcie_gen < 1 || command.pcie_gen > 6) {
      return absl::InvalidArgumentError(
          absl::StrCat("a PCIe generation is 1 to 6, not \"", words[2], "\""));
    }
    if (absl::Status s =
            ParseNumber(words[3], "PCIe width", &command.pcie_width);
        !s.ok() || (command.pcie_width & (command.pcie_width - 1)) != 0 ||
        command.pcie_width == 0 || command.pcie_width > 32) {
      return absl::InvalidArgumentError(
          absl::StrCat("a PCIe link width is 1, 2, 4, 8, 16 or 32 lanes, not "
                       "\"",
                       words[3], "\""));
    }
  } else if (verb == "throttle") {
    if (args != 2) return WrongArgs(verb);
    command.kind = ControlCommand::Kind::kThrottle;
    absl::string_view mask = words[2];
    const bool hex = absl::ConsumePrefix(&mask, "0x");
    const bool parsed =
        hex ? !mask.empty() && absl::SimpleHexAtoi(mask, &command.throttle) &&
                  std::all_of(mask.begin(), mask.end(),
                              [](char c) {
                                return absl::ascii_isxdigit(
                                    static_cast<unsigned char>(c));
                              })
            : ParseNumber(mask, "mask", &command.throttle).ok();
    if (!parsed ||
        (command.throttle & ~uint64_t{nvmlClocksThrottleReasonAll}) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "throttle needs a mask of nvmlClocksThrottleReason* bits (0 to "
          "0x1ff, decimal or 0x hex), not \"",
          words[2], "\""));
    }
  } else if (verb == "nvlink") {
    if (args != 3) return WrongArgs(verb);
    command.kind = ControlCommand::Kind::kNvLink;
    if (absl::Status s = ParseNumber(words[2], "NVLink index", &command.link);
        !s.ok()) {
      return s;
    }
    if (words[3] != "active" && words[3] != "inactive") {
      return absl::InvalidArgumentError(absl::StrCat(
          "an NVLink state is active or inactive, not \"", words[3], "\""));
    }
    command.link_active = words[3] == "active";
  } else if (verb == "xid") {
    if (args != 2 && args != 4) return WrongArgs(verb);
    command.kind = ControlCommand::Kind::kXid;
    if (absl::Status s = ParseNumber(words[2], "xid", &command.xid); !s.ok()) {
      return s;
    }
    if (args == 4) {
      if (absl::Status s =
              ParseNumber(words[3], "GPU instance id", &command.gpu_instance);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = ParseNumber(words[4], "compute instance id",
                                       &command.compute_instance);
          !s.ok()) {
        return s;
      }
    }
  } else if (verb == "ecc") {
    if (args != 2) return WrongArgs(verb);
    command.kind = ControlCommand::Kind::kEcc;
    if (words[2] != "single" && words[2] != "double") {
      return absl::InvalidArgumentError(absl::StrCat(
          "ecc error kind must be single or double, not \"", words[2], "\""));
    }
    command.double_bit = words[2] == "double";
  } else if (verb == "fail" || verb == "fail-mig" || verb == "fail-nvlink") {
    const bool mig = verb == "fail-mig";
    const unsigned want = mig ? 3u : verb == "fail-nvlink" ? 2u : 1u;
    if (args != want) return WrongArgs(verb);
    command.kind = mig                     ? ControlCommand::Kind::kFailMig
                   : verb == "fail-nvlink" ? ControlCommand::Kind::kFailNvLink
                                           : ControlCommand::Kind::kFail;
    if (mig) {
      if (absl::Status s =
              ParseNumber(words[2], "MIG device index", &command.mig);
          !s.ok()) {
        return s;
      }
    }
    const absl::string_view code_word = words[args];
    int code = 0;
    if (absl::Status s = ParseNumber(code_word, "return code", &code);
        !s.ok() || !IsDefinedFailure(code)) {
      return absl::InvalidArgumentError(
          absl::StrCat(verb,
                       " needs a defined nvmlReturn_t error code (1-29 or "
                       "999), not \"",
                       code_word, "\""));
    }
    command.code = static_cast<nvmlReturn_t>(code);
  } else if (verb == "recover" || verb == "hang-all") {
    if (args != 0) return WrongArgs(verb);
    command.kind = verb == "recover" ? ControlCommand::Kind::kRecover
                                     : ControlCommand::Kind::kHangAll;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown command \"", verb, "\"; ", kUsage));
  }
  if (command.has_gpu()) {
    if (absl::Status s = ParseNumber(words[1], "GPU index", &command.gpu);
        !s.ok()) {
      return s;
    }
  }
  return command;
}

bool ChangesGpuState(ControlCommand::Kind kind) {
  using Kind = ControlCommand::Kind;
  switch (kind) {
    case Kind::kXid:
    case Kind::kEcc:
    case Kind::kRestore:
    case Kind::kReset:
    case Kind::kRecoveryAction:
    case Kind::kRemapPending:
    case Kind::kRemapFailure:
    case Kind::kPagesPending:
    case Kind::kPcie:
    case Kind::kThrottle:
    case Kind::kNvLink:
      return true;
    case Kind::kLose:
    case Kind::kFail:
    case Kind::kFailMig:
    case Kind::kFailNvLink:
    case Kind::kHang:
    case Kind::kHangAll:
    case Kind::kRecover:
      return false;
  }
  return false;
}

}  // namespace gdp::fake_nvml
