#include "metrics/http_server.h"

#include <httplib.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "metrics/exposition.h"
#include "util/thread_name.h"

namespace gdp::metrics {
namespace {

void Answer(const Probe& probe, httplib::Response& res) {
  absl::Status s = probe != nullptr ? probe() : absl::OkStatus();
  if (s.ok()) {
    res.status = 200;
    res.set_content("ok\n", "text/plain; charset=utf-8");
  } else {
    res.status = 503;
    res.set_content(std::string(s.message()) + "\n",
                    "text/plain; charset=utf-8");
  }
}

// Runs each connection on a thread of its own, started for it and ended
// with it, up to kMaxConnectionThreads at once (more wait for one to end).
// A fixed pool of two let two clients that send a byte every few seconds
// hold every worker, so the kubelet's probes timed out; here a probe gets
// its own thread while fewer than the bound are slow. No thread while idle.
class ConnectionThreads final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override {
    absl::MutexLock lock(&state_->mu);
    if (state_->running >= kMaxConnectionThreads) {
      state_->waiting.push_back(std::move(fn));
      return;
    }
    ++state_->running;
    std::thread([state = state_, fn = std::move(fn)]() mutable {
      NameThisThread("gdp-http-conn");
      Work(*state, std::move(fn));
    }).detach();
  }

  // Waits for every connection to end (httplib deletes the queue next).
  void shutdown() override {
    absl::MutexLock lock(&state_->mu);
    state_->mu.Await(absl::Condition(
        +[](State* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) {
          return s->running == 0 && s->waiting.empty();
        },
        state_.get()));
  }

 private:
  static constexpr int kMaxConnectionThreads = 64;

  // Shared with the threads, which may still be leaving when the queue
  // itself is deleted.
  struct State {
    absl::Mutex mu;
    int running ABSL_GUARDED_BY(mu) = 0;
    std::deque<std::function<void()>> waiting ABSL_GUARDED_BY(mu);
  };

  // Runs `fn`, then whatever waits, then ends.
  static void Work(State& s, std::function<void()> fn) {
    for (;;) {
      fn();
      absl::MutexLock lock(&s.mu);
      if (s.waiting.empty()) {
        --s.running;
        return;
      }
      fn = std::move(s.waiting.front());
      s.waiting.pop_front();
    }
  }

  const std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(
    const std::string& address) {
  size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics address must be host:port or :port, got '", address, "'"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::make_pair(host, port);
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& address, const Registry& registry,
    HttpServerOptions options) {
  auto hp = SplitHostPort(address);
  if (!hp.ok()) return hp.status();
  auto server = std::make_unique<httplib::Server>();
  // A thread per connection (see ConnectionThreads); short keep-alives
  // let Stop return promptly.
  server->new_task_queue = [] { return new ConnectionThreads(); };
  server->set_keep_alive_timeout(1);
  // httplib's default also sets SO_REUSEPORT, which would let a second
  // process share the port silently; a taken port must be an error.
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    // An IPv6 socket on "::" takes IPv4 too, as Go's ":port" does, whatever
    // net.ipv6.bindv6only says (fails harmlessly on an IPv4 socket).
    int no = 0;
    setsockopt(sock, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof(no));
  });
  // A request's every read must come within 2 s (a slow client holds one
  // connection thread, not the probes').
  server->set_read_timeout(2);
  server->set_write_timeout(5);
  server->Get(
      "/metrics", [&registry](const httplib::Request&, httplib::Response& res) {
        res.set_content(RenderText(registry.Collect()), kTextContentType);
      });
  server->Get("/healthz", [probe = options.healthz](const httplib::Request&,
                                                    httplib::Response& res) {
    Answer(probe, res);
  });
  server->Get("/readyz", [probe = options.readyz](const httplib::Request&,
                                                  httplib::Response& res) {
    Answer(probe, res);
  });
  int port = hp->second;
  auto bind = [&server, &port](const std::string& host) {
    errno = 0;
    if (port == 0) {
      const int chosen = server->bind_to_any_port(host);
      if (chosen > 0) port = chosen;
      return chosen > 0;
    }
    return server->bind_to_port(host, port);
  };
  // ":port": both families on one IPv6 socket, or IPv4 alone where the
  // node has no IPv6.
  bool bound =
      hp->first.empty() ? bind("::") || bind("0.0.0.0") : bind(hp->first);
  if (!bound) {
    int err = errno;
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on ", address, ": ",
        err != 0 ? std::strerror(err) : "cannot bind the address"));
  }
  std::unique_ptr<HttpServer> out(new HttpServer(std::move(server), port));
  httplib::Server* s = out->server_.get();
  auto done = std::make_shared<std::atomic<bool>>(false);
  out->thread_ = std::thread([s, done] {
    NameThisThread("gdp-http");
    s->listen_after_bind();
    *done = true;
  });
  // stop() is a no-op until the loop runs: wait for it, so the destructor
  // cannot miss it.
  while (!s->is_running() && !done->load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return out;
}

HttpServer::HttpServer(std::unique_ptr<httplib::Server> server, int port)
    : server_(std::move(server)), port_(port) {}

HttpServer::~HttpServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gdp::metrics
