#include "rpc/grpc_runtime.h"

#include <grpc/event_engine/event_engine.h>
#include <grpc/grpc.h>

#include <atomic>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "rpc/quiet_engine.h"

#ifdef GDP_GRPC_TIMER_CONTROL
// gRPC 1.51's iomgr timer manager (src/core/lib/iomgr/timer_manager.h): not
// in its public headers, but exported by libgrpc. CMake checks that they
// link before defining GDP_GRPC_TIMER_CONTROL.
void grpc_timer_manager_set_threading(bool enabled);
void grpc_timer_manager_tick();
#endif

namespace gdp {
namespace {

std::atomic<bool> g_quiet{false};

absl::Mutex g_precise_mu(absl::kConstInit);
int g_precise ABSL_GUARDED_BY(g_precise_mu) = 0;

}  // namespace

bool MakeGrpcQuiet() {
#ifdef GDP_GRPC_TIMER_CONTROL
  if (g_quiet.load()) return true;
  grpc_event_engine::experimental::SetEventEngineFactory(
      [] { return std::make_unique<QuietEngine>(); });
  grpc_init();  // never shut down: see the header
  grpc_timer_manager_set_threading(false);
  g_quiet = true;
  return true;
#else
  return false;
#endif
}

bool GrpcIsQuiet() { return g_quiet.load(); }

void RunDueGrpcTimers() {
#ifdef GDP_GRPC_TIMER_CONTROL
  if (g_quiet.load()) grpc_timer_manager_tick();
#endif
}

GrpcPreciseTimers::GrpcPreciseTimers() {
#ifdef GDP_GRPC_TIMER_CONTROL
  if (!g_quiet.load()) return;
  absl::MutexLock lock(&g_precise_mu);
  held_ = true;
  if (g_precise++ == 0) grpc_timer_manager_set_threading(true);
#endif
}

GrpcPreciseTimers::~GrpcPreciseTimers() {
#ifdef GDP_GRPC_TIMER_CONTROL
  if (!held_) return;
  absl::MutexLock lock(&g_precise_mu);
  if (--g_precise == 0) grpc_timer_manager_set_threading(false);
#endif
}

}  // namespace gdp
