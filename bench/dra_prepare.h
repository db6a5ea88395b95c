// The DRA benchmark's NodePrepareResources part: the plugin's answer for a
// fresh claim (read from the API server) and for one already prepared
// (from its checkpoint), against what bounds them from below, timed in the
// same run: a bare gRPC echo of the call, a bare HTTPS GET of a claim, and
// the two atomic file writes a fresh Prepare makes.
#ifndef GDP_BENCH_DRA_PREPARE_H_
#define GDP_BENCH_DRA_PREPARE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/dra_env.h"

namespace gdp::bench {

// Microseconds of each call timed.
struct PrepareTimes {
  std::vector<double> fresh;   // Prepare of a claim never prepared
  std::vector<double> writes;  // CDI spec + checkpoint written, fsynced
  std::vector<double> kept;    // Prepare of a claim in the checkpoint
  std::vector<double> echo;    // the echo server's NodePrepareResources
  std::vector<double> get;     // GET of a claim with the kube client
};

// Creates `claims` claims (and a few for warm-up) allocated to gpu-0..7 in
// turn, starts the echo server (`self` --serve-echo <dir>/echo.sock, its
// own process), and times, after warm-up, in 16 rounds (each block of
// calls of one kind starting with 2 calls not timed): `claims` fresh
// Prepares on the plugin's `endpoint` (each claim prepared once, then
// unprepared, untimed, so the checkpoint stays small), as many pairs of
// atomic writes (files the size of a claim's CDI spec and of the
// checkpoint, in <dir>/floor, each followed by an untimed removal and
// rewrite as Unprepare does), then `calls` each of Prepare of one prepared
// claim, echo calls and GETs of the claims. Every answer is checked.
// Result on failure: what failed (a call, an answer with an error or the
// wrong device, a claim not created, no echo server), naming it.
absl::StatusOr<PrepareTimes> TimePrepares(DraEnv& env,
                                          const std::string& endpoint,
                                          const std::string& self, int claims,
                                          int calls);

}  // namespace gdp::bench

#endif  // GDP_BENCH_DRA_PREPARE_H_
