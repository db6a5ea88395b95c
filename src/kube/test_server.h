// For tests: an HTTP or HTTPS server on 127.0.0.1 in the test's process,
// standing in for kube-apiserver.
#ifndef GDP_KUBE_TEST_SERVER_H_
#define GDP_KUBE_TEST_SERVER_H_

#include <httplib.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "kube/testing_tls.h"

namespace gdp::kube::testing {

// A free TCP port on 127.0.0.1 (free when asked; nothing holds it).
// Result: 0 when none could be found.
int FreePort();

// A Kubernetes Status object (kind Status, status Failure) as JSON text.
std::string StatusJson(int code, const std::string& reason,
                       const std::string& message);

// What the server's handlers saw, for assertions. Thread-safe.
struct SeenRequest {
  std::string method, path, body;
  httplib::Headers headers;
  httplib::Params params;
  std::string header(const std::string& key) const;
};
class RequestLog {
 public:
  void Add(const httplib::Request& req) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<SeenRequest> All() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until at least `n` requests were logged or `timeout` passed;
  // true in the first case.
  bool WaitFor(size_t n, absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::vector<SeenRequest> seen_ ABSL_GUARDED_BY(mu_);
};

// Serves the handlers registered on http() from httplib's worker threads.
// Not thread-safe to configure; register handlers before Start().
class TestServer {
 public:
  // Plain HTTP when `pki` is null; else HTTPS with the PKI's server
  // certificate, and when `require_client_cert` demanding a client
  // certificate signed by the PKI's CA.
  explicit TestServer(const TestPki* pki = nullptr,
                      bool require_client_cert = false);
  // Stop()s.
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  httplib::Server& http() { return *server_; }

  // Listens on `host`:`port` (port 0: any free port) and serves on a
  // thread of its own.
  // Result on failure: Unavailable naming the address.
  absl::Status Start(int port = 0, const std::string& host = "127.0.0.1");

  // Stops serving after releasing handlers that wait in WaitReleased, and
  // joins the thread; waits for handlers in flight. Idempotent.
  void Stop();

  // Blocks a handler (a stream held open, a hung answer) until Stop() or
  // `timeout`; true when released by Stop().
  bool WaitReleased(absl::Duration timeout) {
    return released_.WaitForNotificationWithTimeout(timeout);
  }

  int port() const { return port_; }
  // "http://<host>:<port>" or "https://..." (an IPv6 host bracketed).
  std::string url() const;

 private:
  std::unique_ptr<httplib::Server> server_;
  bool https_ = false;
  std::string host_;
  int port_ = 0;
  std::thread thread_;
  absl::Notification released_;
};

}  // namespace gdp::kube::testing

#endif  // GDP_KUBE_TEST_SERVER_H_
