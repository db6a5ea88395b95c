#include "metrics/http_server.h"

#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "metrics/exposition.h"

namespace gdp::metrics {
namespace {

void Answer(const Probe& probe, httplib::Response& res,
            const std::function<std::vector<std::string>()>& notes = nullptr) {
  absl::Status s = probe != nullptr ? probe() : absl::OkStatus();
  if (s.ok()) {
    res.status = 200;
    std::string body = "ok\n";
    if (notes != nullptr) {
      for (const std::string& line : notes())
        absl::StrAppend(&body, line, "\n");
    }
    res.set_content(body, "text/plain; charset=utf-8");
  } else {
    res.status = 503;
    res.set_content(std::string(s.message()) + "\n",
                    "text/plain; charset=utf-8");
  }
}

// One request's bytes, as collected by the ConnectionLoop, read by httplib;
// its answer written to memory for the loop to send. So httplib never
// waits on the network: the loop's deadlines bound every client.
class BufferedStream final : public httplib::Stream {
 public:
  BufferedStream(int fd, std::string_view input) : fd_(fd), in_(input) {}

  bool is_readable() const override { return pos_ < in_.size(); }
  bool is_writable() const override { return true; }

  // What the loop collected, then end of input (a body that did not come
  // with the head is not waited for: GET is all we serve).
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, in_.size() - pos_);
    std::memcpy(ptr, in_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (out_.size() + size > kMaxAnswerBytes) return -1;
    out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(getsockname, ip, port);
  }
  // The real socket: httplib answers 500 to one numbered FD_SETSIZE or
  // more, which it could not select() on (we never do).
  socket_t socket() const override { return fd_; }

  size_t consumed() const { return pos_; }
  std::string& out() { return out_; }

 private:
  static constexpr size_t kMaxAnswerBytes = 64 << 20;

  void Address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip,
               int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (get(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host,
                    serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
      return;
    }
    ip = host;
    (void)absl::SimpleAtoi(serv, &port);
  }

  const int fd_;
  const std::string_view in_;
  size_t pos_ = 0;
  std::string out_;
};

// httplib's routing and HTTP on requests the ConnectionLoop collected; its
// own listener and connection handling are not used.
class Router final : public httplib::Server {
 public:
  Reply Answer(int fd, std::string_view input, bool last) {
    BufferedStream stream(fd, input);
    bool closed = false;
    const bool ok = process_request(stream, last, closed, nullptr);
    return Reply{std::move(stream.out()), stream.consumed(),
                 !ok || closed || last};
  }

  // The socket bind_to_port made, now the caller's.
  int TakeListenSocket() { return svr_sock_.exchange(INVALID_SOCKET); }
};

}  // namespace

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(
    const std::string& address) {
  size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics address must be host:port or :port, got '", address, "'"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::make_pair(host, port);
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& address, const Registry& registry,
    HttpServerOptions options) {
  auto hp = SplitHostPort(address);
  if (!hp.ok()) return hp.status();
  auto server = std::make_unique<Router>();
  // httplib's default also sets SO_REUSEPORT, which would let a second
  // process share the port silently; a taken port must be an error.
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    // An IPv6 socket on "::" takes IPv4 too, as Go's ":port" does, whatever
    // net.ipv6.bindv6only says (fails harmlessly on an IPv4 socket).
    int no = 0;
    setsockopt(sock, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof(no));
  });
  server->Get(
      "/metrics", [&registry](const httplib::Request&, httplib::Response& res) {
        res.set_content(RenderText(registry.Collect()), kTextContentType);
      });
  server->Get("/healthz", [probe = options.healthz](const httplib::Request&,
                                                    httplib::Response& res) {
    Answer(probe, res);
  });
  server->Get("/readyz", [probe = options.readyz, notes = options.readyz_notes](
                             const httplib::Request&, httplib::Response& res) {
    Answer(probe, res, notes);
  });
  int port = hp->second;
  auto bind = [&server, &port](const std::string& host) {
    errno = 0;
    if (port == 0) {
      const int chosen = server->bind_to_any_port(host);
      if (chosen > 0) port = chosen;
      return chosen > 0;
    }
    return server->bind_to_port(host, port);
  };
  // ":port": both families on one IPv6 socket, or IPv4 alone where the
  // node has no IPv6.
  bool bound =
      hp->first.empty() ? bind("::") || bind("0.0.0.0") : bind(hp->first);
  if (!bound) {
    int err = errno;
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on ", address, ": ",
        err != 0 ? std::strerror(err) : "cannot bind the address"));
  }
  // httplib listens with a backlog of 5; the loop accepts at once, but a
  // burst of connections should wait in the kernel, not be refused.
  const int listen_fd = server->TakeListenSocket();
  listen(listen_fd, 128);
  Router* router = server.get();
  auto loop = ConnectionLoop::Start(
      listen_fd,
      [router](int fd, std::string_view input, bool last) {
        return router->Answer(fd, input, last);
      },
      options.connections);
  if (!loop.ok()) return loop.status();
  return std::unique_ptr<HttpServer>(
      new HttpServer(std::move(server), *std::move(loop), port));
}

HttpServer::HttpServer(std::unique_ptr<httplib::Server> server,
                       std::unique_ptr<ConnectionLoop> loop, int port)
    : server_(std::move(server)), loop_(std::move(loop)), port_(port) {}

HttpServer::~HttpServer() {
  loop_.reset();  // before the routes it calls
}

ConnectionLoopCounts HttpServer::counts() const { return loop_->counts(); }

}  // namespace gdp::metrics
