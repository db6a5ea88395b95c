// The gRPC edge of the DRA kubelet plugin: the kubelet's DRAPlugin service
// (v1 and v1beta1, the same calls on two packages), the DRA health stream
// (v1alpha1.DRAResourceHealth) and plugin registration
// (pluginregistration.Registration). Protobuf types appear only here; the
// work is the Preparer's and the DeviceSet's.
#ifndef GDP_DRA_DRA_SERVICE_H_
#define GDP_DRA_DRA_SERVICE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "device/device_set.h"
#include "dra/claim_calls.h"
#include "rpc/socket_server.h"

namespace gdp::dra {

// The service names a DRA plugin lists in PluginInfo.supported_versions,
// most preferred first (the kubelet takes the first one it knows).
inline constexpr char kDraPluginV1[] = "v1.DRAPlugin";
inline constexpr char kDraPluginV1beta1[] = "v1beta1.DRAPlugin";
inline constexpr char kDraHealthV1alpha1[] = "v1alpha1.DRAResourceHealth";

// What registration answers and learns.
struct RegistrationInfo {
  std::string driver_name;
  std::string endpoint;  // absolute path of dra.sock
  std::vector<std::string> versions;
};

// The kubelet's view of our registration, as NotifyRegistrationStatus
// told it. Thread-safe.
class RegistrationState {
 public:
  // The kubelet asked for our info (GetInfo).
  void InfoAsked() ABSL_LOCKS_EXCLUDED(mu_);
  // The kubelet's verdict.
  void Notified(bool registered, const std::string& error)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Forget it (our sockets are served anew: the kubelet will ask again).
  void Reset() ABSL_LOCKS_EXCLUDED(mu_);

  bool registered() const ABSL_LOCKS_EXCLUDED(mu_);
  int registrations() const ABSL_LOCKS_EXCLUDED(mu_);
  std::string last_error() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  bool registered_ ABSL_GUARDED_BY(mu_) = false;
  int registrations_ ABSL_GUARDED_BY(mu_) = 0;
  std::string error_ ABSL_GUARDED_BY(mu_);
};

// The services of our registration socket: Registration.
// `state` must outlive them.
ServiceList RegistrationServices(const RegistrationInfo& info,
                                 RegistrationState& state);

// The open health streams, so a heartbeat can resend them: the kubelet
// counts a device's health as unknown when it has heard nothing for 30 s.
// Thread-safe.
class HealthStreams {
 public:
  // Called (quickly, under an internal lock) whenever a stream opens, so a
  // heartbeat can start; nullptr: nothing.
  void SetOnOpen(std::function<void()> on_open) ABSL_LOCKS_EXCLUDED(mu_);
  // A stream opened; `refresh` resends its list. Returns its token.
  uint64_t Add(std::function<void()> refresh) ABSL_LOCKS_EXCLUDED(mu_);
  // The stream of `token` ended; after this its refresh is not running
  // and is not called again.
  void Remove(uint64_t token) ABSL_LOCKS_EXCLUDED(mu_);
  // Resends every open stream's list. Returns how many are open.
  size_t RefreshAll() ABSL_LOCKS_EXCLUDED(mu_);
  size_t open() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 1;
  std::function<void()> on_open_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::function<void()>> streams_ ABSL_GUARDED_BY(mu_);
};

// The services of our endpoint (dra.sock): DRAPlugin v1 and v1beta1 handing
// their claims to `calls` (so no gRPC thread waits for the API server;
// each call's deadline and cancellation reach its claims; a call whose
// caller goes is ended at once, so shutting the server down never waits
// for claim reads), and DRAResourceHealth streaming `devices` (each
// device's health in pool `pool`; the message is the unhealthy reason, at
// most 1024 characters). Claims are checked here first: a UID that is not
// one (letters, digits, '-', at most 128) or more than 256 claims fail the
// call with INVALID_ARGUMENT; a namespace that is not a DNS label or a name
// that is not a DNS subdomain fails its claim. Per-claim errors are cut to
// 4 KiB. `calls`, `devices` and `streams` must outlive the server.
ServiceList EndpointServices(ClaimCalls& calls, DeviceSet& devices,
                             const std::string& pool, HealthStreams& streams);

}  // namespace gdp::dra

#endif  // GDP_DRA_DRA_SERVICE_H_
