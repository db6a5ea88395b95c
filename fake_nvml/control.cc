#include "fake_nvml/control.h"

#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "fake_nvml/control_command.h"
#include "fake_nvml/lifecycle.h"
#include "fake_nvml/report.h"

namespace gdp::fake_nvml {
namespace {

// XID 79: GPU has fallen off the bus.
constexpr unsigned long long kXidFallenOffTheBus = 79;

void Apply(const ControlCommand& command, Session& session)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex) {
  using Kind = ControlCommand::Kind;
  switch (command.kind) {
    case Kind::kLose:
      if (session.lost(command.gpu)) break;
      // What the driver reports as the GPU falls off the bus, then every
      // wait on a set holding the GPU answers GPU_IS_LOST.
      session.Deliver(command.gpu, nvmlEventTypeXidCriticalError,
                      kXidFallenOffTheBus, 0xFFFFFFFF, 0xFFFFFFFF);
      session.set_lost(command.gpu, true);
      session.WakeEventSets();
      break;
    case Kind::kRestore:
      session.set_lost(command.gpu, false);
      break;
    case Kind::kXid:
      session.Deliver(command.gpu, nvmlEventTypeXidCriticalError, command.xid,
                      command.gpu_instance, command.compute_instance);
      break;
    case Kind::kEcc:
      session.Deliver(command.gpu,
                      command.double_bit ? nvmlEventTypeDoubleBitEccError
                                         : nvmlEventTypeSingleBitEccError,
                      0, 0xFFFFFFFF, 0xFFFFFFFF);
      break;
    case Kind::kFail:
      session.set_failure(command.code);
      break;
    case Kind::kFailMig:
      session.set_mig_failure(command.gpu, command.mig, command.code);
      break;
    case Kind::kFailNvLink:
      session.set_nvlink_failure(command.gpu, command.code);
      break;
    case Kind::kHang:
      session.set_hung(command.gpu);
      break;
    case Kind::kHangAll:
      session.set_hang_all();
      break;
    case Kind::kRemapPending: {
      RemappedRows& rows = *session.signals(command.gpu).remapped_rows;
      ++rows.uncorrectable;
      rows.pending = true;
      break;
    }
    case Kind::kRemapFailure:
      session.signals(command.gpu).remapped_rows->failure = true;
      break;
    case Kind::kPagesPending:
      session.signals(command.gpu).retired_pages_pending = true;
      break;
    case Kind::kReset: {
      // The remapping or retirement takes effect; a failure stays (it is
      // the GPU's, until it is replaced).
      Session::Signals& signals = session.signals(command.gpu);
      if (signals.remapped_rows.has_value()) {
        signals.remapped_rows->pending = false;
      }
      signals.retired_pages_pending = false;
      break;
    }
    case Kind::kPcie: {
      PcieLink& link = session.signals(command.gpu).pcie;
      link.gen = command.pcie_gen;
      link.width = command.pcie_width;
      break;
    }
    case Kind::kThrottle:
      session.signals(command.gpu).throttle_reasons = command.throttle;
      break;
    case Kind::kNvLink:
      session.signals(command.gpu).nvlink_active[command.link] =
          command.link_active;
      break;
    case Kind::kRecover:
      session.set_failure(std::nullopt);
      session.clear_mig_failures();
      session.clear_nvlink_failures();
      // Calls blocked by a hang proceed: their condition on state_mutex is
      // re-evaluated when this command's caller releases it.
      session.clear_hangs();
      break;
  }
}

// What the command needs of its GPU: row remapping (Ampere and later),
// page retirement (before), a link that exists, a PCIe link within the
// GPU's maximum. InvalidArgument naming the mismatch otherwise.
absl::Status CheckAgainstGpu(const ControlCommand& command,
                             const Session& session)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex) {
  using Kind = ControlCommand::Kind;
  if (!command.has_gpu()) return absl::OkStatus();
  const Gpu& gpu = session.machine().gpus[command.gpu];
  const Session::Signals& signals = session.signals(command.gpu);
  switch (command.kind) {
    case Kind::kRemapPending:
    case Kind::kRemapFailure:
      if (!signals.remapped_rows.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "GPU ", command.gpu,
            " does not remap rows (before Ampere): use pages-pending"));
      }
      break;
    case Kind::kPagesPending:
      if (signals.remapped_rows.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "GPU ", command.gpu,
            " remaps rows instead of retiring pages (Ampere and later): use "
            "remap-pending"));
      }
      break;
    case Kind::kPcie:
      if (command.pcie_gen > signals.pcie.max_gen ||
          command.pcie_width > signals.pcie.max_width) {
        return absl::InvalidArgumentError(
            absl::StrCat("GPU ", command.gpu, "'s PCIe link is at most gen ",
                         signals.pcie.max_gen, " x", signals.pcie.max_width));
      }
      break;
    case Kind::kNvLink:
      if (command.link >= gpu.nvlinks.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("GPU ", command.gpu, " has no NVLink ", command.link,
                         " (it has ", gpu.nvlinks.size(), ")"));
      }
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

}  // namespace

void ApplyControlLine(int line_number, absl::string_view line) {
  const absl::StatusOr<std::optional<ControlCommand>> parsed =
      ParseControlLine(line);
  if (!parsed.ok()) {
    Report(absl::StrCat("control line ", line_number, ": ",
                        parsed.status().message()));
    return;
  }
  if (!parsed->has_value()) return;
  const ControlCommand& command = **parsed;
  absl::MutexLock lock(&state_mutex);
  Session* session = CurrentSession();
  if (session == nullptr) return;
  if (command.has_gpu() && command.gpu >= session->gpu_count()) {
    Report(absl::StrCat("control line ", line_number, ": no GPU with index ",
                        command.gpu, " (the machine has ", session->gpu_count(),
                        ")"));
    return;
  }
  if (command.kind == ControlCommand::Kind::kFailMig &&
      command.mig >= session->machine().gpus[command.gpu].mig_devices.size()) {
    Report(absl::StrCat("control line ", line_number, ": no MIG device ",
                        command.mig, " on GPU ", command.gpu));
    return;
  }
  if (absl::Status s = CheckAgainstGpu(command, *session); !s.ok()) {
    Report(absl::StrCat("control line ", line_number, ": ", s.message()));
    return;
  }
  Apply(command, *session);
}

}  // namespace gdp::fake_nvml
