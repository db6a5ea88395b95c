// `fake-nvml mig`: lists, makes and destroys MIG instances in the MIG state
// the fake library shares between processes (mig_state.h), as `nvidia-smi
// mig` does for a real driver. See README.md, "MIG made at run time".
#ifndef GDP_FAKE_NVML_MIG_TOOL_H_
#define GDP_FAKE_NVML_MIG_TOOL_H_

#include <optional>
#include <string>

#include "CLI/CLI.hpp"

namespace gdp::fake_nvml {

// What `fake-nvml mig` was asked to do; one action per run.
struct MigToolArgs {
  std::string machine;  // default $FAKE_NVML_MACHINE
  std::string state;    // default MigStatePath($FAKE_NVML_MIG_STATE, ...)
  std::optional<unsigned> gpu;  // -i: one GPU (else every MIG-capable one)
  std::optional<unsigned> gi;   // --gi
  std::optional<unsigned> ci;   // --ci
  std::string cgi;              // profiles (names or IDs), each [:START]
  std::string cci;              // CI profiles (names or IDs); "" whole
  bool cci_set = false;
  bool with_ci = false;  // -C: --cgi also makes each one's whole CI
  bool dgi = false, dci = false, lgi = false, lgip = false, lci = false;
  std::optional<unsigned> mode;  // --mode 0|1
  bool reset = false;
  bool busy = false, idle = false;
};

// Adds the `mig` subcommand to `app`, filling *args.
CLI::App* AddMigCommand(CLI::App& app, MigToolArgs* args);

// Runs it: prints what it did or lists on stdout, one line each; errors
// (NVML's name for a refused operation, a bad profile, a bad file) on
// stderr. Returns the exit status: 0, or 1 on any error.
int RunMigCommand(const MigToolArgs& args);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_MIG_TOOL_H_
