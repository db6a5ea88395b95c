// The HTTP endpoints of the daemon: GET /metrics (Prometheus text format
// from a Registry), /healthz and /readyz (probes answered by callbacks).
#ifndef GDP_METRICS_HTTP_SERVER_H_
#define GDP_METRICS_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "metrics/connection_loop.h"
#include "metrics/registry.h"

namespace httplib {
class Server;
}

namespace gdp::metrics {

// A probe: OK when fine, else the reason it fails (shown to the prober).
using Probe = std::function<absl::Status()>;

struct HttpServerOptions {
  Probe healthz;  // null: always OK
  Probe readyz;   // null: always OK
  // Lines a passing /readyz adds after "ok" (what does not fail it but an
  // operator should see); null: none.
  std::function<std::vector<std::string>()> readyz_notes;
  // Bounds on clients (see ConnectionLoop); the defaults suit a node.
  ConnectionLoopOptions connections;
};

// Splits "host:port", "[v6-host]:port" or ":port" (host "": every address
// of both families, as Go's ":port"). Port 0 is allowed (any free port).
// Result on failure: InvalidArgument naming the address.
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(
    const std::string& address);

// Serves on a ConnectionLoop: one thread holds every connection, and a
// request gets a thread only once its head is complete (at most four at
// once), so slow, idle or non-reading clients never starve the probes: each
// is closed at a deadline that its bytes do not restart, and the one
// waiting longest makes room for a new one.
// /healthz and /readyz answer 200 "ok\n" (then readyz_notes, a line each,
// for /readyz) when their probe passes and 503
// with the probe's message (plain text) when it fails; /metrics answers
// the registry's families in text format 0.0.4; other paths 404.
// Probes and collectors run on the server's threads.
class HttpServer {
 public:
  // Binds `address` (see SplitHostPort) and starts serving. `registry` and
  // the probes must outlive the server.
  // Result on failure: InvalidArgument for a malformed address,
  // Unavailable naming the address and the reason when it cannot listen
  // (e.g. "Address already in use").
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& address, const Registry& registry,
      HttpServerOptions options);

  // Stops listening, closes connections and waits for requests in flight
  // (each takes as long as its probe or scrape).
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port it listens on (the one chosen when the address said 0).
  int port() const { return port_; }

  // Connections and requests so far. Thread-safe.
  ConnectionLoopCounts counts() const;

 private:
  HttpServer(std::unique_ptr<httplib::Server> server,
             std::unique_ptr<ConnectionLoop> loop, int port);

  std::unique_ptr<httplib::Server> server_;  // routes, answers
  std::unique_ptr<ConnectionLoop> loop_;     // connections
  int port_;
};

}  // namespace gdp::metrics

#endif  // GDP_METRICS_HTTP_SERVER_H_
