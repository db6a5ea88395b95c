// Both ends of an idle ListAndWatch stream for the idle benchmark: the
// kubelet's side (a client that opens the stream and keeps it open), and
// the reference, a bare gRPC server that sends one list and then holds the
// stream open, as the plugin does while nothing changes.
#ifndef GDP_BENCH_IDLE_STREAMS_H_
#define GDP_BENCH_IDLE_STREAMS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp::bench {

// Serves DevicePlugin on the unix socket `socket` with the gRPC callback API
// and a default ServerBuilder (as the plugin's SocketServer does), until
// the process is killed. ListAndWatch sends `devices` healthy devices
// (gpu-0, gpu-1, ...) once and holds the stream open until the client
// cancels; the other methods are unimplemented.
// Result: 1 when the socket cannot be served (does not return otherwise).
int ServeHeldList(const std::string& socket, int devices);

// Opens ListAndWatch on the unix socket `socket` and reads it on its own
// thread until destroyed (which cancels the stream). Thread-safe.
class HeldStream {
 public:
  explicit HeldStream(const std::string& socket);
  ~HeldStream();
  HeldStream(const HeldStream&) = delete;
  HeldStream& operator=(const HeldStream&) = delete;

  // Blocks until the first list arrived; returns its device count, or -1
  // when the stream ended first or `timeout` passed.
  int WaitForList(absl::Duration timeout);

  // Lists received so far.
  int lists();

  // Whether the stream is still open (the server has not ended it).
  bool open();

 private:
  void Loop();

  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  grpc::ClientContext ctx_;
  absl::Mutex mu_;
  int lists_ ABSL_GUARDED_BY(mu_) = 0;
  int devices_ ABSL_GUARDED_BY(mu_) = -1;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace gdp::bench

#endif  // GDP_BENCH_IDLE_STREAMS_H_
