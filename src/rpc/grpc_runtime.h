// gRPC's process-wide threads, made quiet for an idle daemon. By default
// gRPC 1.51 runs two timer threads that wake every second or so and an
// EventEngine with its own timer thread. In quiet mode the iomgr timer
// threads are off and timers run when RunDueGrpcTimers() is called (main
// calls it every kGrpcTimerTick), or precisely while a GrpcPreciseTimers is
// held (around our own outgoing calls, whose deadlines matter), and the
// EventEngine is a QuietEngine.
#ifndef GDP_RPC_GRPC_RUNTIME_H_
#define GDP_RPC_GRPC_RUNTIME_H_

#include "absl/time/time.h"

namespace gdp {

// How often main runs gRPC's due timers in quiet mode: the most a server
// side timer (a stalled handshake, a keepalive) may fire late. Our own
// deadlines do not wait for it (GrpcPreciseTimers).
inline constexpr absl::Duration kGrpcTimerTick = absl::Seconds(30);

// Makes gRPC quiet for the rest of the process. Call once, in main, before
// any gRPC object is made; it keeps gRPC initialised until exit (so gRPC
// never shuts down and starts its timer threads again). Returns false, and
// changes nothing, if this build's gRPC cannot have its timer threads
// turned off (then gRPC runs as it does by default).
bool MakeGrpcQuiet();

// Sends gRPC's and protobuf's own log lines (a request that does not
// parse, an assertion) through ours, in our format, instead of raw to
// stderr. Call once, in main, before any gRPC object.
void RouteGrpcAndProtobufLogs();

// Whether MakeGrpcQuiet() succeeded. Thread-safe.
bool GrpcIsQuiet();

// Runs gRPC's timers that are due. Thread-safe; does nothing unless quiet.
void RunDueGrpcTimers();

// While at least one is alive (in quiet mode), gRPC's timer threads run, so
// deadlines, connection backoff and cancellations fire on time. Costs a
// thread start when the first is made. Thread-safe.
class GrpcPreciseTimers {
 public:
  GrpcPreciseTimers();
  ~GrpcPreciseTimers();
  GrpcPreciseTimers(const GrpcPreciseTimers&) = delete;
  GrpcPreciseTimers& operator=(const GrpcPreciseTimers&) = delete;

 private:
  bool held_ = false;  // counted (quiet mode)
};

}  // namespace gdp

#endif  // GDP_RPC_GRPC_RUNTIME_H_
