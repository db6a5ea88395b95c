// The fault-injection commands tests append to $FAKE_NVML_CONTROL, one per
// line (see README.md):
//   lose <gpu>                 the GPU falls off the bus
//   restore <gpu>              it comes back
//   xid <gpu> <xid> [<gi> <ci>]  an Xid critical error event
//   ecc <gpu> single|double    a single- or double-bit ECC error event
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
    kRecover
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

  // Whether the command names a GPU (to be range-checked by the caller).
  bool has_gpu() const {
    return kind != Kind::kFail && kind != Kind::kHangAll &&
           kind != Kind::kRecover;
  }
};

// Parses one line (without its newline). Returns nullopt for blank and
// comment lines, InvalidArgument with a short explanation for anything
// malformed. GPU and MIG device indexes are not range-checked here.
absl::StatusOr<std::optional<ControlCommand>> ParseControlLine(
    absl::string_view line);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_CONTROL_COMMAND_H_
