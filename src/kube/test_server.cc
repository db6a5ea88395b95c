#include "kube/test_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kube/endpoint.h"

namespace gdp::kube::testing {

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string StatusJson(int code, const std::string& reason,
                       const std::string& message) {
  nlohmann::json status = {{"kind", "Status"},
                           {"apiVersion", "v1"},
                           {"status", "Failure"},
                           {"code", code},
                           {"reason", reason},
                           {"message", message},
                           {"metadata", nlohmann::json::object()}};
  return status.dump();
}

std::string SeenRequest::header(const std::string& key) const {
  auto it = headers.find(key);
  return it == headers.end() ? "" : it->second;
}

void RequestLog::Add(const httplib::Request& req) {
  absl::MutexLock lock(&mu_);
  seen_.push_back(
      SeenRequest{req.method, req.path, req.body, req.headers, req.params});
}

std::vector<SeenRequest> RequestLog::All() const {
  absl::MutexLock lock(&mu_);
  return seen_;
}

size_t RequestLog::size() const {
  absl::MutexLock lock(&mu_);
  return seen_.size();
}

bool RequestLog::WaitFor(size_t n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto enough = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return seen_.size() >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

TestServer::TestServer(const TestPki* pki, bool require_client_cert) {
  if (pki == nullptr) {
    server_ = std::make_unique<httplib::Server>();
  } else {
    https_ = true;
    server_ = std::make_unique<httplib::SSLServer>(
        pki->server_cert_file.c_str(), pki->server_key_file.c_str(),
        require_client_cert ? pki->ca_cert_file.c_str() : nullptr);
  }
  // Answers without Nagle delays; idle keep-alive connections end after a
  // second, so Stop() does not wait long for a client's idle connection.
  server_->set_tcp_nodelay(true);
  server_->set_keep_alive_timeout(1);
}

TestServer::~TestServer() { Stop(); }

absl::Status TestServer::Start(int port, const std::string& host) {
  host_ = host;
  if (!server_->is_valid()) {
    return absl::UnavailableError("the test server has no valid TLS context");
  }
  if (port == 0) {
    port_ = server_->bind_to_any_port(host);
    if (port_ < 0) port_ = 0;
  } else if (server_->bind_to_port(host, port)) {
    port_ = port;
  }
  if (port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("test server cannot listen on ", host, ":", port));
  }
  thread_ = std::thread([this] {
    // cpp-httplib 0.11 writes without MSG_NOSIGNAL, so a client hanging up
    // mid-answer raised SIGPIPE and killed the whole test binary (seen in
    // PublisherTest's two writers). Blocked in this thread, and so in the
    // worker threads httplib starts from it, the write fails with EPIPE.
    internal::ScopedSigpipeBlock no_sigpipe;
    server_->listen_after_bind();
  });
  // Stop() only works once the server runs; wait for that (briefly).
  while (!server_->is_running()) absl::SleepFor(absl::Milliseconds(1));
  return absl::OkStatus();
}

void TestServer::Stop() {
  if (!released_.HasBeenNotified()) released_.Notify();
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string TestServer::url() const {
  std::string host =
      host_.find(':') == std::string::npos ? host_ : "[" + host_ + "]";
  return absl::StrCat(https_ ? "https" : "http", "://", host, ":", port_);
}

}  // namespace gdp::kube::testing
