#include "rpc/socket_server.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gdp {

bool SomethingListens(const std::string& socket_path) {
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof(addr.sun_path)) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int r = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  bool listening = r == 0 || errno == EAGAIN || errno == EINPROGRESS;
  close(fd);
  return listening;
}

absl::StatusOr<std::unique_ptr<SocketServer>> SocketServer::Start(
    const std::string& socket_path, std::unique_ptr<grpc::Service> service) {
  ServiceList services;
  services.push_back(std::move(service));
  return Start(socket_path, std::move(services));
}

absl::StatusOr<std::unique_ptr<SocketServer>> SocketServer::Start(
    const std::string& socket_path, ServiceList services) {
  if (SomethingListens(socket_path)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "another process is serving ", socket_path,
        " (a second instance of the plugin?); not taking it over"));
  }
  if (unlink(socket_path.c_str()) != 0 && errno != ENOENT) {
    return absl::UnavailableError(absl::StrCat(
        "cannot remove stale ", socket_path, ": ", std::strerror(errno)));
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("unix:", socket_path),
                           grpc::InsecureServerCredentials());
  for (const std::unique_ptr<grpc::Service>& service : services) {
    builder.RegisterService(service.get());
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve on ", socket_path,
                     " (is the directory there and writable?)"));
  }
  return std::unique_ptr<SocketServer>(
      new SocketServer(socket_path, std::move(services), std::move(server),
                       GetFileId(socket_path)));
}

SocketServer::SocketServer(std::string path, ServiceList services,
                           std::unique_ptr<grpc::Server> server,
                           std::optional<FileId> id)
    : path_(std::move(path)),
      services_(std::move(services)),
      server_(std::move(server)),
      id_(id) {}

SocketServer::~SocketServer() {
  // A deadline of now cancels open streams instead of waiting for them.
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
  if (SocketIntact()) unlink(path_.c_str());
}

bool SocketServer::SocketIntact() const {
  return id_.has_value() && GetFileId(path_) == id_;
}

}  // namespace gdp
