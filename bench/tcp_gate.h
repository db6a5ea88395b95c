// A TCP forwarder on 127.0.0.1 that can be closed like an API server that
// went down: while closed, every open connection is reset and each new one
// is reset as soon as it is accepted (counted per second, the retry load an
// outage causes); opened again, it forwards to the upstream port once more.
// TLS passes through untouched. One thread, poll(2), non-blocking sockets.
#ifndef GDP_BENCH_TCP_GATE_H_
#define GDP_BENCH_TCP_GATE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gdp::bench {

// Thread-safe.
class TcpGate {
 public:
  // Listens on a free port of 127.0.0.1, forwarding to 127.0.0.1:`upstream`.
  // Result on failure: Internal naming the call that failed.
  static absl::StatusOr<std::unique_ptr<TcpGate>> Start(int upstream);
  // Stops the thread and closes every socket.
  ~TcpGate();
  TcpGate(const TcpGate&) = delete;
  TcpGate& operator=(const TcpGate&) = delete;

  int port() const { return port_; }

  // Open: forward. Closed: reset what is open and whatever connects.
  void SetOpen(bool open) ABSL_LOCKS_EXCLUDED(mu_);

  // Connections reset on arrival while closed, by wall-clock second (Unix
  // time, truncated).
  std::map<int64_t, int64_t> ResetPerSecond() const ABSL_LOCKS_EXCLUDED(mu_);
  // Connections forwarded since the start.
  int64_t forwarded() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  TcpGate(int listen_fd, int port, int upstream, int wake_read, int wake_write);
  void Loop();
  void Wake();

  const int listen_fd_, port_, upstream_, wake_read_, wake_write_;
  std::thread thread_;
  mutable absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = true;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<int64_t, int64_t> resets_ ABSL_GUARDED_BY(mu_);
  int64_t forwarded_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gdp::bench

#endif  // GDP_BENCH_TCP_GATE_H_
