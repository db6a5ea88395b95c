// The connection side of the HTTP endpoints: one thread that owns a
// listening TCP socket and every connection on it, so that a slow, idle or
// non-reading client costs a few KiB and never a thread.
//
// A request's head is collected by the loop within one deadline that does
// not restart with each byte; only a complete head goes to a handler thread
// (started for it, at most a few at once); the handler's answer is written
// back by the loop under a deadline of its own. When the connections reach
// their bound, the one that has waited longest for its head is closed, so
// a new client (a probe sends its request at once) is always answered.
// The loop knows bytes and "\r\n\r\n" only; HTTP itself is the handler's.
#ifndef GDP_METRICS_CONNECTION_LOOP_H_
#define GDP_METRICS_CONNECTION_LOOP_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gdp::metrics {

// What a handler gives back for one request.
struct Reply {
  std::string bytes;    // sent in full, then
  size_t consumed = 0;  // bytes of the input that the request used
  bool close = true;    // close the connection after sending
};

// Answers the request at the start of `input`: a complete head (up to and
// including "\r\n\r\n") and whatever followed it, or max_head_bytes
// without one. `fd` is the connection (for its addresses; the handler must
// not read, write or close it). `last`: the connection closes after this
// answer whatever the reply says. Runs on a handler thread and may block
// (as long as a probe or a scrape takes); must not throw.
using RequestHandler =
    std::function<Reply(int fd, std::string_view input, bool last)>;

struct ConnectionLoopOptions {
  // Connections at once; one more closes the one that has waited longest
  // for its head (a connection being answered is never closed for this).
  int max_connections = 256;
  // Handler threads at once (more requests wait for one).
  int max_handlers = 4;
  // From accepting a connection, or from finishing the previous answer on
  // it, to the end of the next request's head. Not restarted by each byte.
  absl::Duration head_timeout = absl::Seconds(5);
  // To send an answer in full.
  absl::Duration write_timeout = absl::Seconds(5);
  // A head this long without its end goes to the handler as it is.
  size_t max_head_bytes = 16 * 1024;
  // Requests on one connection; the last one is answered with `last`.
  int max_requests = 100;
};

// What happened so far (all counts since Start).
struct ConnectionLoopCounts {
  int64_t accepted = 0;
  int64_t requests = 0;
  int64_t head_timeouts = 0;   // closed: head not complete in time
  int64_t write_timeouts = 0;  // closed: answer not taken in time
  int64_t evicted = 0;         // closed to make room for a newer one
};

class ConnectionLoop {
 public:
  // Serves `listen_fd` (bound and listening; owned from here on, also on
  // failure) on a thread of its own ("gdp-http").
  // Result on failure: Internal naming the system call that failed.
  static absl::StatusOr<std::unique_ptr<ConnectionLoop>> Start(
      int listen_fd, RequestHandler handler, ConnectionLoopOptions options);

  // Stops accepting, drops requests not yet handed to a handler, waits for
  // the handlers in flight, and closes every connection and the listener.
  ~ConnectionLoop();
  ConnectionLoop(const ConnectionLoop&) = delete;
  ConnectionLoop& operator=(const ConnectionLoop&) = delete;

  // Thread-safe.
  ConnectionLoopCounts counts() const;

 private:
  class Impl;
  explicit ConnectionLoop(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gdp::metrics

#endif  // GDP_METRICS_CONNECTION_LOOP_H_
