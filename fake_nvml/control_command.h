// The fault-injection commands tests append to $FAKE_NVML_CONTROL, one per
// line (see README.md):
//   lose <gpu>                 the GPU falls off the bus
//   restore <gpu>              it comes back: the same as reset
//   xid <gpu> <xid> [<gi> <ci>]  an Xid critical error event (one that
//                              needs a GPU reset also sets the recovery
//                              action to GPU_RESET)
//   ecc <gpu> single|double    a single- or double-bit ECC error: event and
//                              volatile count
//   fail <code>                every call returns nvmlReturn_t <code>
//   fail-mig <gpu> <mig> <code>  every call about MIG device <mig> of the GPU
//                              returns <code>
//   fail-nvlink <gpu> <code>   every NVLink call about the GPU returns <code>
//   hang <gpu>                 every call taking a handle of the GPU (or of
//                              its MIG devices or instances) blocks
//   hang-all                   every call but init, shutdown and
//                              nvmlErrorString blocks
//   recover                    ends "fail", every "fail-mig", every
//                              "fail-nvlink" and every hang
//   remap-pending <gpu>        a row remapping after an uncorrectable error
//                              waits for a reset (Ampere and later)
//   remap-failure <gpu>        a row remapping failed (Ampere and later)
//   pages-pending <gpu>        a retired page waits for a reset (before
//                              Ampere)
//   reset <gpu>                a GPU reset: pending remappings and retired
//                              pages take effect (no longer pending),
//                              volatile ECC counts restart at 0, the
//                              recovery action is NONE, a lost GPU is back
//   recovery-action <gpu> none|gpu-reset|node-reboot|drain-p2p|drain-and-reset
//                              the recovery action the driver reports
//   pcie <gpu> <gen> <width>   the PCIe link trains at <gen> x<width>
//   throttle <gpu> <mask>      the clock throttle reasons are <mask>
//   nvlink <gpu> <link> active|inactive  NVLink <link> goes up or down
// Blank lines and lines starting with '#' are ignored.
#ifndef GDP_FAKE_NVML_CONTROL_COMMAND_H_
#define GDP_FAKE_NVML_CONTROL_COMMAND_H_

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nvml/nvml_api.h"

namespace gdp::fake_nvml {

struct ControlCommand {
  enum class Kind {
    kLose,
    kRestore,
    kXid,
    kEcc,
    kFail,
    kFailMig,
    kFailNvLink,
    kHang,
    kHangAll,
    kRecover,
    kRemapPending,
    kRemapFailure,
    kPagesPending,
    kReset,
    kRecoveryAction,
    kPcie,
    kThrottle,
    kNvLink
  };

  Kind kind = Kind::kRecover;
  unsigned gpu = 0;                        // all but fail, hang-all and recover
  unsigned mig = 0;                        // fail-mig: the MIG device index
  unsigned long long xid = 0;              // xid
  unsigned gpu_instance = 0xFFFFFFFF;      // xid; 0xFFFFFFFF if not given
  unsigned compute_instance = 0xFFFFFFFF;  // xid; 0xFFFFFFFF if not given
  bool double_bit = false;                 // ecc
  nvmlReturn_t code = NVML_SUCCESS;        // fail*: a defined code
                                           // other than NVML_SUCCESS
  unsigned pcie_gen = 0;                   // pcie: 1-6
  unsigned pcie_width = 0;                 // pcie: 1, 2, 4, 8, 16 or 32
  unsigned long long throttle = 0;         // throttle: reason bits
  unsigned link = 0;                       // nvlink: the link index
  bool link_active = false;                // nvlink: active
  nvmlDeviceGpuRecoveryAction_t recovery_action =  // recovery-action
      NVML_GPU_RECOVERY_ACTION_NONE;

  // Whether the command names a GPU (to be range-checked by the caller).
  bool has_gpu() const {
    return kind != Kind::kFail && kind != Kind::kHangAll &&
           kind != Kind::kRecover;
  }
};

// Parses one line (without its newline). Returns nullopt for blank and
// comment lines, InvalidArgument with a short explanation for anything
// malformed (a PCIe generation outside 1-6, a width outside 1, 2, 4, 8, 16,
// 32, throttle bits outside nvmlClocksThrottleReasonAll, an unknown
// recovery action). GPU, MIG device and link indexes, and what the GPU
// supports, are not checked here.
absl::StatusOr<std::optional<ControlCommand>> ParseControlLine(
    absl::string_view line);

// Whether `kind` changes the state of a GPU, which a GPU keeps whatever
// NVML client comes and goes (replayed from the control file's history at
// init): xid and ecc (recovery action and counts, not their events),
// restore, reset, recovery-action, remap-*, pages-pending, pcie, throttle
// and nvlink. Not lose, the fail* and hang faults and recover, which belong
// to one init generation.
bool ChangesGpuState(ControlCommand::Kind kind);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_CONTROL_COMMAND_H_
