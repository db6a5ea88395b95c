// Exported NVML entry points: initialization and system-wide queries.
#include "fake_nvml/api_call.h"
#include "fake_nvml/lifecycle.h"
#include "fake_nvml/nvml_exports.h"

namespace fn = gdp::fake_nvml;

extern "C" {

nvmlReturn_t nvmlInit(void) { return fn::Initialize(0); }

nvmlReturn_t nvmlInit_v2(void) { return fn::Initialize(0); }

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  return fn::Initialize(flags);
}

nvmlReturn_t nvmlShutdown(void) { return fn::Shutdown(); }

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  fn::ApiCall call;
  if (call.status() != NVML_SUCCESS) return call.status();
  return fn::CopyString(call.session().machine().driver_version, version,
                        length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  fn::ApiCall call;
  if (call.status() != NVML_SUCCESS) return call.status();
  if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *version = call.session().machine().cuda_driver_version;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return nvmlSystemGetCudaDriverVersion(version);
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  fn::ApiCall call;
  if (call.status() != NVML_SUCCESS) return call.status();
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = call.session().gpu_count();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  return nvmlDeviceGetCount(count);
}

}  // extern "C"
