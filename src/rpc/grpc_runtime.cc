#include "rpc/grpc_runtime.h"

#include <google/protobuf/stubs/logging.h>
#include <grpc/event_engine/event_engine.h>
#include <grpc/grpc.h>
#include <grpc/support/log.h>

#include <atomic>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "rpc/quiet_engine.h"
#include "util/logging.h"

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

void LogAs(spdlog::level::level_enum level, const char* from, const char* file,
           int line, const std::string& message) {
  spdlog::default_logger_raw()->log(
      spdlog::source_loc{file != nullptr ? file : "?", line, ""}, level,
      "{}: {}", from, message);
}

void GrpcLog(gpr_log_func_args* args) {
  spdlog::level::level_enum level = spdlog::level::info;
  if (args->severity == GPR_LOG_SEVERITY_ERROR) level = spdlog::level::err;
  if (args->severity == GPR_LOG_SEVERITY_DEBUG) {
    if (logging::Verbosity() < 4) return;
  } else if (args->severity == GPR_LOG_SEVERITY_INFO &&
             logging::Verbosity() < 2) {
    return;
  }
  LogAs(level, "gRPC", args->file, args->line, args->message);
}

void ProtobufLog(google::protobuf::LogLevel level, const char* file, int line,
                 const std::string& message) {
  spdlog::level::level_enum to = spdlog::level::warn;
  switch (level) {
    case google::protobuf::LOGLEVEL_INFO:
      to = spdlog::level::info;
      break;
    case google::protobuf::LOGLEVEL_WARNING:
      to = spdlog::level::warn;
      break;
    case google::protobuf::LOGLEVEL_ERROR:
      to = spdlog::level::err;
      break;
    case google::protobuf::LOGLEVEL_FATAL:
      to = spdlog::level::critical;
      break;
  }
  LogAs(to, "protobuf", file, line, message);
}

}  // namespace

void RouteGrpcAndProtobufLogs() {
  gpr_set_log_function(GrpcLog);
  google::protobuf::SetLogHandler(ProtobufLog);
}

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
