#include "registration_server.h"

#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "resource_name.h"

namespace gdp::dpctl {
namespace {

namespace fs = std::filesystem;

// sizeof(sockaddr_un::sun_path) on Linux, including the terminating NUL.
constexpr size_t kMaxSocketPath = 108;
// How long Shutdown lets Register calls in progress finish before the
// server cancels them.
constexpr absl::Duration kShutdownGrace = absl::Seconds(1);

}  // namespace

absl::Status RemoveSockets(const std::string& dir) {
  absl::Status result;
  std::error_code error;
  fs::directory_iterator it(dir, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot list ", dir, ": ", error.message()));
  }
  for (const fs::directory_entry& entry : it) {
    // status() follows symlinks, as the kubelet's os.Stat does.
    fs::file_status status = fs::status(entry.path(), error);
    if (error || !fs::is_socket(status)) continue;
    if (!fs::remove(entry.path(), error) && error && result.ok()) {
      result = absl::InternalError(absl::StrCat(
          "cannot remove ", entry.path().string(), ": ", error.message()));
    }
  }
  return result;
}

class RegistrationServer::Service final
    : public v1beta1::Registration::Service {
 public:
  explicit Service(RegistrationServer* server) : server_(server) {}

  grpc::Status Register(grpc::ServerContext* /*context*/,
                        const v1beta1::RegisterRequest* request,
                        v1beta1::Empty* /*response*/) override {
    absl::Status status = server_->Register(*request);
    if (status.ok()) return grpc::Status::OK;
    return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                        std::string(status.message()));
  }

 private:
  RegistrationServer* const server_;
};

RegistrationServer::RegistrationServer(Options options, DeviceManager* manager,
                                       EventSink* events)
    : options_(std::move(options)),
      manager_(manager),
      events_(events),
      service_(std::make_unique<Service>(this)) {}

RegistrationServer::~RegistrationServer() { Shutdown(); }

std::string RegistrationServer::socket_path() const {
  return (fs::path(options_.dir) / kKubeletSocket).string();
}

absl::Status RegistrationServer::Start() {
  std::error_code error;
  fs::create_directories(options_.dir, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create ", options_.dir, ": ", error.message()));
  }
  if (absl::Status s = RemoveSockets(options_.dir); !s.ok()) return s;
  const std::string path = fs::absolute(socket_path(), error).string();
  if (error || path.size() >= kMaxSocketPath) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path ", path, " is longer than ",
                     kMaxSocketPath - 1, " bytes"));
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("unix:", path),
                           grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", path));
  }
  events_->Emit(ListeningEvent(socket_path()));
  return absl::OkStatus();
}

absl::Status RegistrationServer::Refuse(const v1beta1::RegisterRequest& request,
                                        absl::Status status) {
  events_->Emit(RegisterEvent(request, status));
  return status;
}

absl::Status RegistrationServer::Register(
    const v1beta1::RegisterRequest& request) {
  const std::string& resource = request.resource_name();
  if (request.version() != kVersion) {
    return Refuse(request,
                  absl::InvalidArgumentError(absl::StrCat(
                      "requested API version \"", request.version(),
                      "\" is not supported; supported versions are [\"",
                      kVersion, "\"]")));
  }
  if (absl::Status s = ValidateExtendedResourceName(resource); !s.ok()) {
    return Refuse(request, s);
  }

  // The kubelet joins the endpoint to its directory and dials it before
  // answering, blocking until connected.
  auto client = std::make_shared<PluginClient>(
      (fs::path(options_.dir) / request.endpoint()).string(),
      options_.rpc_timeout);
  {
    // Shutdown cancels the dialed clients, and so their Connect.
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return Refuse(request,
                    absl::UnavailableError("the kubelet is shutting down"));
    }
    dialed_.insert(client);
  }
  absl::Status dialed = client->Connect(options_.dial_timeout);
  absl::StatusOr<v1beta1::DevicePluginOptions> options =
      dialed.ok() ? client->GetDevicePluginOptions() : dialed;

  absl::MutexLock lock(&mu_);
  dialed_.erase(client);
  if (!dialed.ok()) {
    return Refuse(request, absl::Status(dialed.code(),
                                        absl::StrCat("cannot dial plugin: ",
                                                     dialed.message())));
  }
  if (!options.ok()) {
    client->Cancel();
    return Refuse(request,
                  absl::Status(options.status().code(),
                               absl::StrCat("GetDevicePluginOptions failed: ",
                                            StatusText(options.status()))));
  }
  if (stopping_) {
    client->Cancel();
    return Refuse(request,
                  absl::UnavailableError("the kubelet is shutting down"));
  }
  // Join the followers of streams that have ended.
  for (auto it = followers_.begin(); it != followers_.end();) {
    if (it->done) {
      it->thread.join();
      it = followers_.erase(it);
    } else {
      ++it;
    }
  }
  events_->Emit(RegisterEvent(request, absl::OkStatus()));
  events_->Emit(OptionsEvent(resource, *options));
  const uint64_t generation = manager_->AddPlugin(resource, *options, client);
  if (generation == 0) {
    return absl::UnavailableError("the kubelet is shutting down");
  }
  Follower& follower = followers_.emplace_back();
  follower.client = client;
  follower.thread = std::thread(&RegistrationServer::Follow, this, &follower,
                                client, resource, generation);
  return absl::OkStatus();
}

void RegistrationServer::Follow(Follower* follower,
                                std::shared_ptr<PluginClient> client,
                                std::string resource, uint64_t generation) {
  absl::Status status =
      client->ListAndWatch([&](const v1beta1::ListAndWatchResponse& message) {
        manager_->UpdateDevices(
            resource, generation,
            std::vector<v1beta1::Device>(message.devices().begin(),
                                         message.devices().end()));
        return true;
      });
  absl::MutexLock lock(&mu_);
  // A stream cancelled by Shutdown is not the plugin's doing.
  if (!stopping_) manager_->StreamClosed(resource, generation, status);
  follower->done = true;
}

void RegistrationServer::Shutdown() {
  absl::MutexLock shutdown_lock(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (const auto& client : dialed_) client->Cancel();
    for (Follower& f : followers_) f.client->Cancel();
  }
  if (server_ != nullptr) {
    // Register calls in progress notice stopping_ within a poll interval.
    server_->Shutdown(absl::ToChronoTime(absl::Now() + kShutdownGrace));
  }
  // No Register call runs now, so no follower can be added.
  std::list<Follower> followers;
  {
    absl::MutexLock lock(&mu_);
    followers.splice(followers.end(), followers_);
  }
  for (Follower& f : followers) f.thread.join();
  if (server_ != nullptr) {
    std::error_code error;
    fs::remove(socket_path(), error);
  }
}

}  // namespace gdp::dpctl
