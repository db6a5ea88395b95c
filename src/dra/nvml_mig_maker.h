// The MIG maker of the daemon: makes and destroys MIG instances through
// NVML (the calls Nvml declares for dynamic MIG), each call in a job of an
// NvmlRunner, so a hung NVML call costs a prepare its deadline and never
// blocks the process.
#ifndef GDP_DRA_NVML_MIG_MAKER_H_
#define GDP_DRA_NVML_MIG_MAKER_H_

#include <memory>

#include "dra/dynamic_mig.h"
#include "nvml/nvml.h"
#include "nvml/runner.h"

namespace gdp::dra {

// `nvml` and `runner` must outlive the maker (and `nvml` any job the runner
// leaves behind). GPUs are found by UUID (Nvml::DeviceByUuid), their
// handles kept. A MIG device's UUID is read by walking the GPU's MIG
// device handles to the one of the GPU and compute instance.
std::unique_ptr<MigMaker> MakeNvmlMigMaker(const Nvml& nvml,
                                           NvmlRunner& runner);

}  // namespace gdp::dra

#endif  // GDP_DRA_NVML_MIG_MAKER_H_
