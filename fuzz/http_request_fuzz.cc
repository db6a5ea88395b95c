// libFuzzer target: any bytes sent to the HTTP endpoints (metrics/
// http_server.h) over a real loopback connection, then the client's end
// closed: the server must answer or close, never crash or hang (a hang
// shows as libFuzzer's per-input timeout), and keep serving.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "absl/status/status.h"
#include "metrics/http_server.h"
#include "metrics/registry.h"

namespace {

int Port() {
  // Made once and kept for the process (the fuzzer never returns from its
  // loop): a registry with one family and probes that answer.
  static const int port = [] {
    static gdp::metrics::Registry registry;
    registry.AddCounter("fuzz_total", "Inputs.").With({}).Increment();
    gdp::metrics::HttpServerOptions o;
    o.healthz = [] { return absl::OkStatus(); };
    o.readyz = [] { return absl::UnavailableError("not ready"); };
    o.connections.head_timeout = absl::Seconds(2);
    static absl::StatusOr<std::unique_ptr<gdp::metrics::HttpServer>> server =
        gdp::metrics::HttpServer::Start("127.0.0.1:0", registry, o);
    if (!server.ok()) std::abort();
    return (*server)->port();
  }();
  return port;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(Port()));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    std::abort();  // the server stopped serving
  }
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // closed by the server (a head too long): fine
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  // The server answers and closes, or closes: within its head deadline.
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) std::abort();
    char buf[4096];
    if (read(fd, buf, sizeof buf) <= 0) break;
  }
  close(fd);
  return 0;
}
