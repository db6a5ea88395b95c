// What PluginClient (device plugins) and DraClient (DRA plugins) share: a
// channel to one plugin socket, the wait for its connection, and the calls
// in progress on it, so that Cancel can reach them.
#ifndef GDP_DPCTL_DIAL_H_
#define GDP_DPCTL_DIAL_H_

#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"

namespace gdp::dpctl {

// The gRPC target for a unix socket path: "unix:<absolute path>". A value
// already starting with "unix:" or "unix-abstract:" is returned unchanged.
// (gRPC 1.51 accepts "unix:/abs", "unix:///abs" and "unix:relative", but
// refuses the authority form "unix://host/abs".)
std::string UnixTarget(const std::string& socket_path);

// absl::Status with the same code and message as `status`.
absl::Status FromGrpc(const grpc::Status& status);

// Thread-safe: calls may run concurrently from several threads.
class SocketClient {
 public:
  SocketClient(const SocketClient&) = delete;
  SocketClient& operator=(const SocketClient&) = delete;

  // Blocks until the connection is up. Fails with UNAVAILABLE "cannot
  // connect to <target>[: no such socket]" with `fail_fast` (at the first
  // failed connection attempt, and at once when the socket file of a
  // "unix:" target is missing), CANCELLED "gave up connecting to <target>"
  // after Cancel, or DEADLINE_EXCEEDED "cannot connect to <target> within
  // <timeout> (channel <STATE>)".
  absl::Status Connect(absl::Duration timeout, bool fail_fast = false);

  // Makes calls in progress, Connect, and every later call fail with
  // CANCELLED. Idempotent.
  void Cancel();

  // UnixTarget of the socket.
  const std::string& target() const { return target_; }

 protected:
  // An insecure channel to `socket_path` (a path, or a "unix:" target)
  // with a subchannel pool of its own and reconnect backoff from 100 ms to
  // 1 s, so that a plugin restarted on the same path is seen soon.
  // Connects lazily: the first call, or Connect, opens the connection.
  explicit SocketClient(const std::string& socket_path);
  ~SocketClient() = default;

  // Runs one unary call, `call(context, response)`, with a deadline
  // `timeout` from now, tracked for Cancel. Fails with the call's status,
  // or with CANCELLED when already cancelled.
  template <typename Response, typename Call>
  absl::StatusOr<Response> Unary(absl::Duration timeout, Call call) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    if (!Track(&context)) return absl::CancelledError("connection closed");
    Response response;
    grpc::Status status = call(&context, &response);
    Untrack(&context);
    if (!status.ok()) return FromGrpc(status);
    return response;
  }

  // Reads the server stream that `open(context)` opens (a
  // std::unique_ptr<grpc::ClientReader<Message>>), calling `on_message`
  // for each message, until the stream ends, `on_message` returns false,
  // `deadline` passes or Cancel is called. Returns the stream's final
  // status: OK when the plugin ended it, CANCELLED when stopped by
  // `on_message` or Cancel, DEADLINE_EXCEEDED at `deadline`. Blocks the
  // calling thread for the whole stream.
  template <typename Message, typename Open, typename OnMessage>
  absl::Status ReadStream(absl::Time deadline, Open open,
                          OnMessage on_message) {
    grpc::ClientContext context;
    if (deadline != absl::InfiniteFuture()) {
      context.set_deadline(absl::ToChronoTime(deadline));
    }
    if (!Track(&context)) return absl::CancelledError("connection closed");
    std::unique_ptr<grpc::ClientReader<Message>> reader = open(&context);
    Message message;
    bool stopped = false;
    while (reader->Read(&message)) {
      if (!stopped && !on_message(message)) {
        stopped = true;
        context.TryCancel();
      }
    }
    grpc::Status status = reader->Finish();
    Untrack(&context);
    if (stopped) return absl::CancelledError("stopped by the reader");
    return FromGrpc(status);
  }

  const std::string target_;
  const std::shared_ptr<grpc::Channel> channel_;

 private:
  // Registers `context` so Cancel can reach it; false (nothing registered)
  // when already cancelled. `context` must be untracked before it is
  // destroyed.
  bool Track(grpc::ClientContext* context);
  void Untrack(grpc::ClientContext* context);
  bool cancelled();

  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::set<grpc::ClientContext*> active_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_DIAL_H_
