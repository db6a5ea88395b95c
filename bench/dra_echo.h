// The floor of the DRA benchmark: a bare DRAPlugin v1 server answering
// NodePrepareResources with a canned device, served as the plugin serves
// dra.sock (a unix socket, gRPC's callback API, the answer made on a
// worker thread, since the plugin runs its calls on a WorkQueue).
#ifndef GDP_BENCH_DRA_ECHO_H_
#define GDP_BENCH_DRA_ECHO_H_

#include <string>

namespace gdp::bench {

// Serves the echo on the unix socket `socket` until the process is killed.
// Each claim of a NodePrepareResources gets one device: request "gpu",
// pool node-1, device gpu-0, CDI ID k8s.gpu.nvidia.com/claim=<uid>-gpu-0.
// Result: 1 when the socket cannot be served (does not return otherwise).
int ServeDraEcho(const std::string& socket);

}  // namespace gdp::bench

#endif  // GDP_BENCH_DRA_ECHO_H_
