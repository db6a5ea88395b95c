// A gRPC EventEngine that costs nothing while idle: one thread, started
// with the first closure gRPC hands it, runs them in deadline order and
// sleeps until the next deadline or new work; no periodic wakeups. gRPC 1.51
// does its I/O through iomgr, so the engine serves only its closures and timers
// (no listeners, no connections, no DNS).
#ifndef GDP_RPC_QUIET_ENGINE_H_
#define GDP_RPC_QUIET_ENGINE_H_

#include <grpc/event_engine/event_engine.h>

#include <cstdint>
#include <map>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gdp {

// Thread-safe, as EventEngine requires. The destructor runs no further
// closures and joins the thread (gRPC destroys the engine it made when no
// user is left).
class QuietEngine final : public grpc_event_engine::experimental::EventEngine {
 public:
  QuietEngine();
  ~QuietEngine() override;

  bool IsWorkerThread() override;
  void Run(Closure* closure) override;
  void Run(absl::AnyInvocable<void()> closure) override;
  TaskHandle RunAfter(Duration when, Closure* closure) override;
  TaskHandle RunAfter(Duration when,
                      absl::AnyInvocable<void()> closure) override;
  // False if the task already ran or is running.
  bool Cancel(TaskHandle handle) override;

  // gRPC 1.51 does not ask its engine for these: they fail (Unimplemented)
  // rather than pretend.
  std::unique_ptr<DNSResolver> GetDNSResolver(
      const DNSResolver::ResolverOptions& options) override;
  absl::StatusOr<std::unique_ptr<Listener>> CreateListener(
      Listener::AcceptCallback on_accept,
      absl::AnyInvocable<void(absl::Status)> on_shutdown,
      const grpc_event_engine::experimental::EndpointConfig& config,
      std::unique_ptr<grpc_event_engine::experimental::MemoryAllocatorFactory>
          memory_allocator_factory) override;
  ConnectionHandle Connect(
      OnConnectCallback on_connect, const ResolvedAddress& addr,
      const grpc_event_engine::experimental::EndpointConfig& args,
      grpc_event_engine::experimental::MemoryAllocator memory_allocator,
      Duration timeout) override;
  bool CancelConnect(ConnectionHandle handle) override;

 private:
  // Shared with the thread, so that an engine destroyed by a closure on
  // its own thread leaves the thread a live queue to find stopped.
  struct Queue {
    using Key = std::pair<absl::Time, intptr_t>;  // when, arrival order
    absl::Mutex mu;
    std::map<Key, absl::AnyInvocable<void()>> tasks ABSL_GUARDED_BY(mu);
    std::map<intptr_t, absl::Time> when ABSL_GUARDED_BY(mu);  // by task id
    intptr_t next_id ABSL_GUARDED_BY(mu) = 0;
    absl::Time wait_until ABSL_GUARDED_BY(mu);  // the thread's sleep
    bool stop ABSL_GUARDED_BY(mu) = false;
    // Started with the first task: an engine given no work has no thread.
    std::thread thread ABSL_GUARDED_BY(mu);
  };

  TaskHandle Add(absl::Time at, absl::AnyInvocable<void()> closure);
  static void Loop(const std::shared_ptr<Queue>& queue);

  const std::shared_ptr<Queue> queue_ = std::make_shared<Queue>();
};

}  // namespace gdp

#endif  // GDP_RPC_QUIET_ENGINE_H_
