#include "rpc/socket_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/thread_name.h"

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
    const std::string& socket_path, std::unique_ptr<RpcService> service) {
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
  std::unique_ptr<SocketServer> s(
      new SocketServer(socket_path, std::move(services)));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("unix:", socket_path),
                           grpc::InsecureServerCredentials());
  for (const std::unique_ptr<RpcService>& service : s->services_) {
    builder.RegisterService(service->grpc_service());
  }
  s->cq_ = builder.AddCompletionQueue();
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr) {
    s->cq_->Shutdown();  // nothing was armed: drains at once
    void* tag;
    bool ok;
    while (s->cq_->Next(&tag, &ok)) {
    }
    return absl::UnavailableError(
        absl::StrCat("cannot serve on ", socket_path,
                     " (is the directory there and writable?)"));
  }
  // Only root (the kubelet) may connect, whatever the umask: the socket
  // answers Allocate. (The directory is the kubelet's, root-only.)
  if (chmod(socket_path.c_str(), 0600) != 0) {
    const int err = errno;
    s->server_->Shutdown(std::chrono::system_clock::now());
    s->cq_->Shutdown();
    void* tag;
    bool ok;
    while (s->cq_->Next(&tag, &ok)) {
    }
    s->server_.reset();
    unlink(socket_path.c_str());
    return absl::UnavailableError(absl::StrCat(
        "cannot make ", socket_path, " owner-only: ", std::strerror(err)));
  }
  s->id_ = GetFileId(socket_path);
  s->queue_.cq = s->cq_.get();
  for (const std::unique_ptr<RpcService>& service : s->services_) {
    service->Arm(s->queue_);
  }
  s->thread_ = std::thread([cq = s->cq_.get()] {
    NameThisThread("gdp-grpc");
    void* tag;
    bool ok;
    while (cq->Next(&tag, &ok)) static_cast<CqTag*>(tag)->Proceed(ok);
  });
  return s;
}

SocketServer::SocketServer(std::string path, ServiceList services)
    : path_(std::move(path)), services_(std::move(services)) {}

SocketServer::~SocketServer() {
  if (server_ != nullptr) {
    queue_.stopping = true;
    // A deadline of now cancels open streams instead of waiting for them,
    // and fails the calls armed but not matched. A call matched just before
    // still completes on the queue, so the queue is shut down only once
    // every call object is gone (the queue's thread runs their last
    // completions meanwhile; calls answered from other threads are waited
    // for).
    server_->Shutdown(std::chrono::system_clock::now());
    queue_.AwaitNoCalls();
    cq_->Shutdown();
    thread_.join();  // the queue is drained
    server_.reset();
  }
  if (SocketIntact()) unlink(path_.c_str());
}

bool SocketServer::SocketIntact() const {
  return id_.has_value() && GetFileId(path_) == id_;
}

}  // namespace gdp
