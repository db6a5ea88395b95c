// Registers a plugin with the kubelet (Registration.Register on kubelet.sock).
#ifndef GDP_PLUGIN_REGISTRAR_H_
#define GDP_PLUGIN_REGISTRAR_H_

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gdp {

struct RegistrationInfo {
  std::string kubelet_socket;  // path of kubelet.sock
  std::string endpoint;        // our socket's file name in the same directory
  std::string resource_name;   // e.g. "nvidia.com/gpu"
};

// Thread-safe.
class Registrar {
 public:
  // Calls Register with version v1beta1 and get_preferred_allocation_available
  // set, waiting at most `timeout` (the kubelet dials back into our socket
  // before it answers, so our server must already be serving).
  // Result on failure: the kubelet's status (code and reason), Unavailable if
  // it cannot be reached, Cancelled after Cancel().
  absl::Status Register(const RegistrationInfo& info, absl::Duration timeout)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Cancels the Register in flight, if any, and every later one.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* in_flight_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace gdp

#endif  // GDP_PLUGIN_REGISTRAR_H_
