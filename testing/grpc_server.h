// A gRPC server on a unix socket for tests' fakes (the fake DRA plugin,
// dpctl's scripted plugins): start it, stop it. Header-only, so the kit's
// libraries without gRPC need not link it.
#ifndef GDP_TESTING_GRPC_SERVER_H_
#define GDP_TESTING_GRPC_SERVER_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"

namespace gdp::testing {

// A gRPC server on the unix socket at `path` serving `services` (not
// owned; they must outlive the server); null when it cannot start.
inline std::unique_ptr<grpc::Server> ServeUnixSocket(
    const std::string& path, const std::vector<grpc::Service*>& services) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  for (grpc::Service* service : services) builder.RegisterService(service);
  return builder.BuildAndStart();
}

// Shuts `*server` down, giving calls in progress 1 s, and resets it.
// Nothing when it is null.
inline void StopServer(std::unique_ptr<grpc::Server>* server) {
  if (*server == nullptr) return;
  (*server)->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(1));
  server->reset();
}

}  // namespace gdp::testing

#endif  // GDP_TESTING_GRPC_SERVER_H_
