// libFuzzer target: any bytes sent to the HTTP endpoints (metrics/
// http_server.h) over a real loopback connection, then the client's end
// closed: the server must answer or close, never crash or hang (a hang
// shows as libFuzzer's per-input timeout), and keep serving.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
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
  // libFuzzer's SIGALRM (its -timeout check) interrupts blocking calls:
  // EINTR is retried everywhere below, not taken for a failure.
  int r;
  do {
    r = connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to);
  } while (r != 0 && errno == EINTR);
  if (fd < 0 || r != 0) std::abort();  // the server stopped serving
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // closed by the server (a head too long): fine
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  // The server answers and closes, or closes: within its head deadline
  // (2 s) plus the answer's time; 10 s without either is a hang.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) std::abort();
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) std::abort();
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
  }
  close(fd);
  return 0;
}
