// A gRPC server on one unix socket (a device plugin's in the device-plugins
// directory, the DRA plugin's registration and service sockets). Knows no
// GPUs and no kubelet API.
#ifndef GDP_RPC_SOCKET_SERVER_H_
#define GDP_RPC_SOCKET_SERVER_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "util/file_id.h"

namespace gdp {

// The gRPC services one socket serves (e.g. DevicePlugin and DeviceStatus).
using ServiceList = std::vector<std::unique_ptr<grpc::Service>>;

// Whether a process accepts connections on the unix socket `socket_path`.
bool SomethingListens(const std::string& socket_path);

// Not thread-safe: owned by one lifecycle loop.
class SocketServer {
 public:
  // Removes whatever is at `socket_path` (a stale socket), then serves
  // every one of `services` there (none null; each a different gRPC
  // service). Result on failure: FailedPrecondition if another process is
  // serving that socket (it is left alone), Unavailable naming the path if
  // it cannot be served.
  static absl::StatusOr<std::unique_ptr<SocketServer>> Start(
      const std::string& socket_path, ServiceList services);

  // The same with one service.
  static absl::StatusOr<std::unique_ptr<SocketServer>> Start(
      const std::string& socket_path, std::unique_ptr<grpc::Service> service);

  // Shuts down at once (open ListAndWatch streams are cancelled) and removes
  // the socket file if it is still the one this server created.
  ~SocketServer();

  // Whether the socket file still exists and is the one this server bound.
  bool SocketIntact() const;

 private:
  SocketServer(std::string path, ServiceList services,
               std::unique_ptr<grpc::Server> server, std::optional<FileId> id);

  std::string path_;
  ServiceList services_;  // outlive server_
  std::unique_ptr<grpc::Server> server_;
  std::optional<FileId> id_;  // of the socket file we bound
};

}  // namespace gdp

#endif  // GDP_RPC_SOCKET_SERVER_H_
