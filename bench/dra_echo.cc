#include "bench/dra_echo.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <iostream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dra/v1/api.grpc.pb.h"
#include "util/work_queue.h"

namespace gdp::bench {
namespace {

namespace dra_v1 = k8s::io::kubelet::pkg::apis::dra::v1;

// Copies the claims' references off the request, as the plugin does, and
// answers on `work`'s thread.
class EchoService final : public dra_v1::DRAPlugin::CallbackService {
 public:
  explicit EchoService(WorkQueue& work) : work_(work) {}

  grpc::ServerUnaryReactor* NodePrepareResources(
      grpc::CallbackServerContext* ctx,
      const dra_v1::NodePrepareResourcesRequest* req,
      dra_v1::NodePrepareResourcesResponse* resp) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    struct Ref {
      std::string ns, name, uid;
    };
    std::vector<Ref> claims;
    for (const auto& c : req->claims()) {
      claims.push_back({c.namespace_(), c.name(), c.uid()});
    }
    work_.Post([reactor, resp, claims = std::move(claims)] {
      for (const Ref& c : claims) {
        auto* d = (*resp->mutable_claims())[c.uid].add_devices();
        d->add_request_names("gpu");
        d->set_pool_name("node-1");
        d->set_device_name("gpu-0");
        d->add_cdi_device_ids(
            absl::StrCat("k8s.gpu.nvidia.com/claim=", c.uid, "-gpu-0"));
      }
      reactor->Finish(grpc::Status::OK);
    });
    return reactor;
  }

 private:
  WorkQueue& work_;
};

}  // namespace

int ServeDraEcho(const std::string& socket) {
  WorkQueue work;
  EchoService service(work);
  grpc::ServerBuilder b;
  b.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  b.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  if (server == nullptr) {
    std::cerr << "dra_bench: cannot serve " << socket << "\n";
    return 1;
  }
  pause();  // until killed
  return 0;
}

}  // namespace gdp::bench
