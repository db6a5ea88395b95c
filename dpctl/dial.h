// Channels to plugin sockets, shared by PluginClient (device plugins) and
// DraClient (DRA plugins): the gRPC target of a socket path, a channel
// with the settings both use, and the wait for its connection.
#ifndef GDP_DPCTL_DIAL_H_
#define GDP_DPCTL_DIAL_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
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

// An insecure channel to `target` (UnixTarget's form) with a subchannel
// pool of its own and reconnect backoff from 100 ms to 1 s, so that a
// plugin restarted on the same path is seen soon. Connects lazily.
std::shared_ptr<grpc::Channel> OpenChannel(const std::string& target);

struct ConnectWait {
  // How long AwaitConnected waits.
  absl::Duration timeout = absl::Seconds(10);
  // Fail at the first failed connection attempt (and at once when the
  // socket file of a "unix:" target is missing) instead of retrying until
  // `timeout`.
  bool fail_fast = false;
  // Polled every 100 ms while waiting; AwaitConnected gives up when it
  // returns true. May be empty.
  std::function<bool()> cancelled;
  // The DEADLINE_EXCEEDED message ends in " (channel <STATE>)", the
  // channel's last connectivity state.
  bool name_state = false;
};

// Blocks until `channel` (to `target`) is connected. Fails with
// UNAVAILABLE "cannot connect to <target>[: no such socket]" (fail_fast),
// CANCELLED "gave up connecting to <target>", or DEADLINE_EXCEEDED
// "cannot connect to <target> within <timeout>".
absl::Status AwaitConnected(grpc::Channel& channel, const std::string& target,
                            const ConnectWait& wait);

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_DIAL_H_
