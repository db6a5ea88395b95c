// The threads that answer the HTTP endpoints' requests for the connection
// loop: one thread per request, started for it, at most a few at once;
// further requests wait in arrival order. The loop learns that an answer is
// ready through a notification and collects it with TakeDone.
#ifndef GDP_METRICS_HANDLER_POOL_H_
#define GDP_METRICS_HANDLER_POOL_H_

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "metrics/connection_loop.h"

namespace gdp::metrics {

class HandlerPool {
 public:
  // One request: the connection's fd, its input, and whether it is the
  // connection's last.
  struct Job {
    int fd;
    std::string input;
    bool last;
  };
  // One answer. An empty reply means there is none to send (no thread
  // could be started for it).
  struct Done {
    int fd;
    Reply reply;
  };

  // `handler` answers each job on a thread of its own ("gdp-http-req"), at
  // most `max_threads` at once. `notify` is called from that thread once its
  // answer can be taken; it must be cheap and must not call back into the
  // pool.
  HandlerPool(RequestHandler handler, int max_threads,
              std::function<void()> notify);
  // Drops waiting jobs and waits for those in flight.
  ~HandlerPool();
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  // Runs `job` now if a thread is free, else after the jobs already waiting.
  // At most one job per fd may be submitted and not yet taken back.
  // Called from one thread (the loop's), as are TakeDone and DropAndWait.
  void Submit(Job job);

  // The answers ready so far, in the order they were given; joins their
  // threads and starts waiting jobs in their place.
  std::vector<Done> TakeDone();

  // Drops waiting jobs and waits for those in flight; their answers are
  // discarded.
  void DropAndWait();

 private:
  void Start(Job job);
  // Joins the thread that answered `fd`, if there was one.
  void Join(int fd);

  const RequestHandler handler_;
  const int max_threads_;
  const std::function<void()> notify_;

  // The submitting thread's own.
  std::map<int, std::thread> threads_;  // by connection fd
  std::deque<Job> waiting_;

  absl::Mutex mu_;
  std::vector<Done> done_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp::metrics

#endif  // GDP_METRICS_HANDLER_POOL_H_
