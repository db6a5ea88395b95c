#include "fake_nvml/control.h"

#include <optional>

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
  Apply(command, *session);
}

}  // namespace gdp::fake_nvml
