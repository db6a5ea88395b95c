// A Kubernetes API client: JSON over HTTPS to kube-apiserver, with retries
// for unary calls and streaming watches. Generic: it knows paths and JSON,
// not resource kinds.
#ifndef GDP_KUBE_CLIENT_H_
#define GDP_KUBE_CLIENT_H_

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kube/answer.h"
#include "kube/config.h"
#include "kube/path.h"
#include "kube/server_url.h"
#include "kube/token.h"

namespace httplib {
class ClientImpl;
struct Request;
}  // namespace httplib

namespace gdp::kube {

namespace internal {
class TlsSettings;
}

// One event of a watch stream.
struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED or BOOKMARK
  nlohmann::json object;
};

// How unary calls retry.
struct RetryPolicy {
  // The first wait between attempts, doubled after each up to max_backoff
  // (each wait is drawn from its upper half, so clients that failed
  // together do not retry together).
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(2);
  // The total time of one call over all its attempts (including the wait
  // for another call on the same Client); then the last error.
  absl::Duration deadline = absl::Seconds(10);
};

// Thread-safe. Unary calls on one Client are serialised over one keep-alive
// connection (make separate Clients for independent users); each Watch
// opens a connection of its own, so a Watch never delays a unary call.
// SIGPIPE from a dead connection is blocked and discarded in the calling
// thread during a call.
class Client {
 public:
  // Parses the server URL and reads the CA and client certificate files
  // (the token file is read at each call).
  // Result on failure: InvalidArgument for a bad server URL or a CA or
  // client certificate/key that cannot be read or parsed (naming it).
  static absl::StatusOr<std::unique_ptr<Client>> Create(ClientConfig config,
                                                        RetryPolicy retry = {});

  // Every call must have returned (Cancel() makes them return promptly).
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Unary calls. `path` is the URL path, e.g.
  // "/apis/resource.k8s.io/v1/resourceslices" (see ResourcePath), appended
  // to the server URL's path prefix. An attempt is limited by
  // request_timeout and by what is left of the call's deadline. Retried per
  // the RetryPolicy after a transport error (refused, reset, timed out) and
  // after 429 and 5xx, waiting Retry-After seconds (up to max_backoff) when
  // the server sends it; after a 401 with a token file, the file is re-read
  // and the call retried once at once if the token changed. Not retried:
  // other 4xx and a server certificate that fails verification.
  // Result: the decoded JSON body. On failure: the code per
  // CodeForHttpStatus (status.h); transport errors Unavailable, or
  // DeadlineExceeded when the last attempt got no answer in time (a hung
  // server or connect); Cancelled after Cancel(); an
  // answer that is not JSON Unknown; ResourceExhausted, not retried, for an
  // answer over kMaxObjectBytes (kMaxListBytes for List; it is not read
  // further), nested deeper or holding more values than JsonLimits allows
  // (kube/answer.h). The message names the method and path and holds the
  // server's Status message or the transport error.
  absl::StatusOr<nlohmann::json> Get(const std::string& path);
  // The same, retried until `deadline` instead of the RetryPolicy's.
  absl::StatusOr<nlohmann::json> Get(const std::string& path,
                                     absl::Time deadline);
  absl::StatusOr<nlohmann::json> List(const std::string& path,
                                      const ListOptions& options);
  absl::StatusOr<nlohmann::json> Create(const std::string& path,
                                        const nlohmann::json& object);
  absl::StatusOr<nlohmann::json> Update(const std::string& path,
                                        const nlohmann::json& object);
  // DELETE, with `delete_options` (a DeleteOptions object) as the body
  // unless null. The answer's body is not decoded.
  absl::Status Delete(const std::string& path,
                      const nlohmann::json& delete_options = nullptr);
  absl::Status DeleteCollection(const std::string& path,
                                const ListOptions& options);

  // Opens a watch on the collection `path` (?watch=true with `options` but
  // their limit and continue_token, allowWatchBookmarks=true, timeoutSeconds =
  // `timeout` rounded up) and calls `on_event` for each event in order, on the
  // calling thread, until one of these ends it (each promptly):
  //   the server ends the stream (after `timeout`): OK;
  //   on_event returns false: OK;
  //   an ERROR event: its Status object's error (e.g. OutOfRange for 410
  //     Expired: re-list);
  //   a non-200 answer: the code per CodeForHttpStatus;
  //   a transport error or a malformed event: Unavailable;
  //   Cancel(): Cancelled.
  // Blocks in the socket read; the read timeout is `timeout` +
  // request_timeout, so only a silent dead server waits that long. Not
  // retried (a 401 with a changed token file aside): the caller re-lists.
  // Result on failure also: InvalidArgument for a timeout under a second.
  absl::Status Watch(const std::string& path, const ListOptions& options,
                     absl::Duration timeout,
                     const std::function<bool(const WatchEvent&)>& on_event);

  // Makes every call in flight (a connect, a read, a Watch, a backoff wait,
  // a wait for the connection) return Cancelled promptly, and every later
  // call too. Irreversible. Thread-safe; does not block on I/O.
  void Cancel();

  // Whether Cancel() was called.
  bool cancelled() const;

 private:
  // The sockets of one exchange (duplicates, closed when it ends), shut
  // down by Cancel(). Guarded by mu_.
  struct Sockets {
    std::vector<int> fds;
  };
  // What one HTTP exchange produced.
  struct Exchange {
    bool cancelled = false;       // Cancel() was called meanwhile
    int error = 0;                // an httplib::Error; 0: an answer came
    bool verify_failed = false;   // the server's certificate was refused
    std::string transport_error;  // the error in words
    int status = 0;
    std::string body;
    std::string retry_after;
  };

  Client(ClientConfig config, RetryPolicy retry, internal::ServerUrl url,
         std::shared_ptr<const internal::TlsSettings> tls,
         std::unique_ptr<httplib::ClientImpl> unary_http);

  // One unary call with retries until `deadline` (InfiniteFuture: the
  // RetryPolicy's): `method` on `path` + `query`, sending `body` as JSON
  // unless null; decodes the answer when `decode`. An answer's body over
  // `max_answer` bytes is not read further (kube/answer.h has the bounds).
  absl::StatusOr<nlohmann::json> Unary(
      const char* method, const std::string& path, const QueryParams& query,
      const std::string* body, bool decode,
      absl::Time deadline = absl::InfiniteFuture(),
      size_t max_answer = kMaxObjectBytes);

  // A request with the common headers and the bearer token.
  void PrepareRequest(httplib::Request& req, const char* method,
                      const std::string& path_and_query,
                      const std::string& token) const;

  // Sends `req` on `http` (which the caller uses alone), with its sockets
  // registered so that Cancel() can shut them down.
  Exchange Send(httplib::ClientImpl& http, httplib::Request& req,
                absl::Duration connect_timeout, absl::Duration read_timeout);

  // Registers a duplicate of `fd` in `sockets` (shut down at once when
  // cancelled); called by httplib for each socket it creates.
  void AddSocket(Sockets* sockets, int fd) ABSL_LOCKS_EXCLUDED(mu_);

  bool IdleOrCancelled() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !busy_ || cancelled_;
  }

  const ClientConfig config_;
  const RetryPolicy retry_;
  const internal::ServerUrl url_;
  const std::shared_ptr<const internal::TlsSettings> tls_;
  internal::TokenSource token_;
  // Used only by the unary call that set busy_.
  const std::unique_ptr<httplib::ClientImpl> unary_http_;

  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;  // a unary call owns unary_http_
  absl::flat_hash_set<Sockets*> in_flight_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp::kube

#endif  // GDP_KUBE_CLIENT_H_
