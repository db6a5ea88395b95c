#include "rpc/quiet_engine.h"

#include <utility>

#include "absl/status/status.h"
#include "util/thread_name.h"

namespace gdp {

using grpc_event_engine::experimental::EndpointConfig;
using grpc_event_engine::experimental::MemoryAllocator;
using grpc_event_engine::experimental::MemoryAllocatorFactory;

QuietEngine::QuietEngine() = default;

QuietEngine::~QuietEngine() {
  std::thread thread;
  {
    absl::MutexLock lock(&queue_->mu);
    queue_->stop = true;
    queue_->tasks.clear();
    queue_->when.clear();
    thread = std::move(queue_->thread);
  }
  if (!thread.joinable()) return;
  // gRPC may drop its last reference on the engine's own thread.
  if (std::this_thread::get_id() == thread.get_id()) {
    thread.detach();
  } else {
    thread.join();
  }
}

bool QuietEngine::IsWorkerThread() {
  absl::MutexLock lock(&queue_->mu);
  return std::this_thread::get_id() == queue_->thread.get_id();
}

void QuietEngine::Run(Closure* closure) {
  Add(absl::InfinitePast(), [closure] { closure->Run(); });
}

void QuietEngine::Run(absl::AnyInvocable<void()> closure) {
  Add(absl::InfinitePast(), std::move(closure));
}

QuietEngine::TaskHandle QuietEngine::RunAfter(Duration when, Closure* closure) {
  return Add(absl::Now() + absl::FromChrono(when),
             [closure] { closure->Run(); });
}

QuietEngine::TaskHandle QuietEngine::RunAfter(
    Duration when, absl::AnyInvocable<void()> closure) {
  return Add(absl::Now() + absl::FromChrono(when), std::move(closure));
}

bool QuietEngine::Cancel(TaskHandle handle) {
  Queue& q = *queue_;
  absl::MutexLock lock(&q.mu);
  auto it = q.when.find(handle.keys[0]);
  if (it == q.when.end()) return false;
  q.tasks.erase(Queue::Key{it->second, it->first});
  q.when.erase(it);
  return true;
}

std::unique_ptr<QuietEngine::DNSResolver> QuietEngine::GetDNSResolver(
    const DNSResolver::ResolverOptions&) {
  return nullptr;
}

absl::StatusOr<std::unique_ptr<QuietEngine::Listener>>
QuietEngine::CreateListener(Listener::AcceptCallback,
                            absl::AnyInvocable<void(absl::Status)>,
                            const EndpointConfig&,
                            std::unique_ptr<MemoryAllocatorFactory>) {
  return absl::UnimplementedError("QuietEngine makes no listeners");
}

QuietEngine::ConnectionHandle QuietEngine::Connect(OnConnectCallback on_connect,
                                                   const ResolvedAddress&,
                                                   const EndpointConfig&,
                                                   MemoryAllocator, Duration) {
  Run([cb = std::move(on_connect)]() mutable {
    cb(absl::UnimplementedError("QuietEngine makes no connections"));
  });
  return ConnectionHandle{{0, 0}};
}

bool QuietEngine::CancelConnect(ConnectionHandle) { return false; }

QuietEngine::TaskHandle QuietEngine::Add(absl::Time at,
                                         absl::AnyInvocable<void()> closure) {
  Queue& q = *queue_;
  absl::MutexLock lock(&q.mu);
  const intptr_t id = ++q.next_id;
  q.tasks.emplace(Queue::Key{at, id}, std::move(closure));
  q.when.emplace(id, at);
  if (!q.thread.joinable() && !q.stop) {
    q.thread = std::thread([queue = queue_] {
      NameThisThread("gdp-grpc-engine");
      Loop(queue);
    });
  }
  return TaskHandle{{id, 0}};
}

void QuietEngine::Loop(const std::shared_ptr<Queue>& queue) {
  Queue& q = *queue;
  absl::MutexLock lock(&q.mu);
  for (;;) {
    if (q.stop) return;
    if (!q.tasks.empty() && q.tasks.begin()->first.first <= absl::Now()) {
      auto it = q.tasks.begin();
      absl::AnyInvocable<void()> closure = std::move(it->second);
      q.when.erase(it->first.second);
      q.tasks.erase(it);
      q.mu.Unlock();
      closure();
      closure = nullptr;  // whatever it holds goes before the lock is taken
      q.mu.Lock();
      continue;
    }
    // Sleep until the earliest task is due, a task due earlier is added,
    // or the engine stops: the condition is checked on every unlock.
    q.wait_until =
        q.tasks.empty() ? absl::InfiniteFuture() : q.tasks.begin()->first.first;
    auto woken = [&q]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(q.mu) {
      return q.stop ||
             (!q.tasks.empty() && q.tasks.begin()->first.first < q.wait_until);
    };
    q.mu.AwaitWithDeadline(absl::Condition(&woken), q.wait_until);
  }
}

}  // namespace gdp
