#include "plugin/registrar.h"

#include "absl/strings/str_cat.h"
#include "rpc/grpc_runtime.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp {

absl::Status Registrar::Register(const RegistrationInfo& info,
                                 absl::Duration timeout) {
  // The deadline and the channel's connection attempts are gRPC timers.
  GrpcPreciseTimers precise;
  auto channel = grpc::CreateChannel(absl::StrCat("unix:", info.kubelet_socket),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest req;
  req.set_version("v1beta1");
  req.set_endpoint(info.endpoint);
  req.set_resource_name(info.resource_name);
  req.mutable_options()->set_get_preferred_allocation_available(true);
  v1beta1::Empty resp;

  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return absl::CancelledError("registration cancelled");
    in_flight_ = &ctx;
  }
  grpc::Status s = stub->Register(&ctx, req, &resp);
  {
    absl::MutexLock lock(&mu_);
    in_flight_ = nullptr;
  }
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      s.error_message());
}

void Registrar::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (in_flight_ != nullptr) in_flight_->TryCancel();
}

}  // namespace gdp
