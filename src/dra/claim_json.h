// The JSON edge of ResourceClaims (resource.k8s.io/v1) and of NVIDIA's
// opaque claim parameters: the API server's objects to our AllocatedClaim.
// Nothing else in the DRA side sees a claim's JSON.
#ifndef GDP_DRA_CLAIM_JSON_H_
#define GDP_DRA_CLAIM_JSON_H_

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "dra/claim.h"

namespace gdp::dra {

// NVIDIA's claim parameter API.
inline constexpr char kNvidiaConfigApiVersion[] = "resource.nvidia.com/v1beta1";

// Reads a ResourceClaim: metadata (namespace, name, uid), every
// status.allocation.devices.results entry, and each
// status.allocation.devices.config entry whose opaque.driver is `driver`,
// its parameters decoded by ParseDeviceConfig.
// Result on failure: FailedPrecondition when the claim is not allocated
// (no status.allocation); InvalidArgument naming the field path for a
// malformed object or a bad configuration of ours ("status.allocation.
// devices.config[1].opaque.parameters.sharing.strategy: ...").
absl::StatusOr<AllocatedClaim> ParseClaim(const nlohmann::json& claim,
                                          const std::string& driver);

// Decodes NVIDIA's opaque parameters strictly, as NVIDIA's driver does:
// apiVersion resource.nvidia.com/v1beta1, kind GpuConfig or
// MigDeviceConfig, every field known and of its type:
//   sharing.strategy                 TimeSlicing | MPS (absent on a
//                                    GpuConfig without sharing: TimeSlicing)
//   sharing.timeSlicingConfig.interval  Default | Short | Medium | Long
//                                    (GpuConfig only)
//   sharing.mpsConfig.defaultActiveThreadPercentage  0..100
//   sharing.mpsConfig.defaultPinnedDeviceMemoryLimit  a quantity
//   sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit  {index or UUID:
//                                    quantity}
// timeSlicingConfig with MPS, or mpsConfig with TimeSlicing, is refused.
// `path` prefixes the field names in messages.
// Result on failure: InvalidArgument "<path>.<field>: <what is wrong>",
// e.g. an unknown kind, version or field named as such.
absl::StatusOr<DeviceConfig> ParseDeviceConfig(const nlohmann::json& parameters,
                                               const std::string& path);

}  // namespace gdp::dra

#endif  // GDP_DRA_CLAIM_JSON_H_
