// A gRPC server on one unix socket (a device plugin's in the device-plugins
// directory, the DRA plugin's registration and service sockets), serving
// its services on the async API with one thread that sleeps until a call
// comes. Knows no GPUs and no kubelet API.
#ifndef GDP_RPC_SOCKET_SERVER_H_
#define GDP_RPC_SOCKET_SERVER_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "rpc/async_call.h"
#include "util/file_id.h"

namespace gdp {

// A gRPC service served on the async API: a generated AsyncService and the
// calls it arms. Implementations own their method tables (async_call.h,
// device_stream.h), which must stay valid while the server runs.
class RpcService {
 public:
  virtual ~RpcService() = default;
  // The generated service to register with the server.
  virtual grpc::Service* grpc_service() = 0;
  // Arms one call of each of its methods on `queue` (the server started).
  virtual void Arm(CallQueue& queue) = 0;
};

// The gRPC services one socket serves (e.g. DevicePlugin and DeviceStatus).
using ServiceList = std::vector<std::unique_ptr<RpcService>>;

// Whether a process accepts connections on the unix socket `socket_path`.
bool SomethingListens(const std::string& socket_path);

// Not thread-safe: owned by one lifecycle loop.
class SocketServer {
 public:
  // Removes whatever is at `socket_path` (a stale socket), then serves
  // every one of `services` there (none null; each a different gRPC
  // service) from one thread of its own. The socket is mode 0600 whatever
  // the umask. Result on failure:
  // FailedPrecondition if another process is serving that socket (it is
  // left alone), Unavailable naming the path if it cannot be served.
  static absl::StatusOr<std::unique_ptr<SocketServer>> Start(
      const std::string& socket_path, ServiceList services);

  // The same with one service.
  static absl::StatusOr<std::unique_ptr<SocketServer>> Start(
      const std::string& socket_path, std::unique_ptr<RpcService> service);

  // Shuts down at once: open streams are cancelled, and calls answered
  // later from other threads (the DRA plugin's) are waited for. Then
  // removes the socket file if it is still the one this server created.
  ~SocketServer();

  // Whether the socket file still exists and is the one this server bound.
  bool SocketIntact() const;

 private:
  SocketServer(std::string path, ServiceList services);

  std::string path_;
  ServiceList services_;  // outlive the server and the queue's thread
  CallQueue queue_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;  // outlives server_
  std::unique_ptr<grpc::Server> server_;
  std::thread thread_;        // waits in cq_
  std::optional<FileId> id_;  // of the socket file we bound
};

}  // namespace gdp

#endif  // GDP_RPC_SOCKET_SERVER_H_
