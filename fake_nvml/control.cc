#include "fake_nvml/control.h"

#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "fake_nvml/control_command.h"
#include "fake_nvml/lifecycle.h"
#include "fake_nvml/mig_state.h"
#include "fake_nvml/report.h"

namespace gdp::fake_nvml {
namespace {

// XID 79: GPU has fallen off the bus.
constexpr unsigned long long kXidFallenOffTheBus = 79;

// The XIDs after which the fake's driver asks for a GPU reset through the
// recovery action: those of the "RESET_GPU" bucket of NVIDIA's Xid
// catalogue, and 48 (an uncorrectable ECC error, which NVIDIA's memory
// error guide says triggers the recovery action flag).
constexpr unsigned long long kXidsNeedingReset[] = {
    46, 48, 62, 64, 95, 109, 110, 119, 120, 136, 140, 143, 155};

// What a GPU reset changes (also what a GPU that fell off the bus has been
// through when it comes back): pending remappings and retired pages take
// effect, volatile ECC counts restart at 0, the driver asks for no
// recovery action, and the GPU answers again. A remapping failure stays
// (it is the GPU's, until it is replaced), and so does its UUID.
void ResetGpu(unsigned gpu, Session& session) {
  Session::Signals& signals = session.signals(gpu);
  if (signals.remapped_rows.has_value()) {
    signals.remapped_rows->pending = false;
  }
  signals.retired_pages_pending = false;
  signals.volatile_sbe = 0;
  signals.volatile_dbe = 0;
  signals.recovery_action = NVML_GPU_RECOVERY_ACTION_NONE;
  session.set_lost(gpu, false);
}

// Applies `command`. With `live` false (a line of the file's history at
// init, ChangesGpuState) only the GPU's state changes: no event is queued.
void Apply(const ControlCommand& command, Session& session, bool live)
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
      ResetGpu(command.gpu, session);
      break;
    case Kind::kReset:
      ResetGpu(command.gpu, session);
      // The pending MIG mode takes effect (once: not again when the line
      // is replayed at a later init, the shared MIG state has it).
      if (live) {
        session.UpdateMig([&](Machine& machine) {
          ResetMigMode(&machine.gpus[command.gpu]);
          return NVML_SUCCESS;
        });
      }
      break;
    case Kind::kXid:
      for (unsigned long long xid : kXidsNeedingReset) {
        if (command.xid == xid) {
          session.signals(command.gpu).recovery_action =
              NVML_GPU_RECOVERY_ACTION_GPU_RESET;
        }
      }
      if (live) {
        session.Deliver(command.gpu, nvmlEventTypeXidCriticalError, command.xid,
                        command.gpu_instance, command.compute_instance);
      }
      break;
    case Kind::kEcc: {
      Session::Signals& signals = session.signals(command.gpu);
      ++(command.double_bit ? signals.volatile_dbe : signals.volatile_sbe);
      if (live) {
        session.Deliver(command.gpu,
                        command.double_bit ? nvmlEventTypeDoubleBitEccError
                                           : nvmlEventTypeSingleBitEccError,
                        0, 0xFFFFFFFF, 0xFFFFFFFF);
      }
      break;
    }
    case Kind::kRecoveryAction:
      session.signals(command.gpu).recovery_action = command.recovery_action;
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

void ReplayControlLine(int, absl::string_view line) {
  const absl::StatusOr<std::optional<ControlCommand>> parsed =
      ParseControlLine(line);
  // Bad lines were reported when they were new.
  if (!parsed.ok() || !parsed->has_value() ||
      !ChangesGpuState((*parsed)->kind)) {
    return;
  }
  const ControlCommand& command = **parsed;
  absl::MutexLock lock(&state_mutex);
  Session* session = CurrentSession();
  if (session == nullptr || command.gpu >= session->gpu_count() ||
      !CheckAgainstGpu(command, *session).ok()) {
    return;
  }
  Apply(command, *session, /*live=*/false);
}

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
  Apply(command, *session, /*live=*/true);
}

}  // namespace gdp::fake_nvml
