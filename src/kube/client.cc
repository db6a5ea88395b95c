#include "kube/client.h"

#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "absl/cleanup/cleanup.h"
#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kube/endpoint.h"
#include "kube/status.h"
#include "util/logging.h"
#include "util/quote.h"

namespace gdp::kube {

namespace {

// TCP keepalive, so that a connection to a vanished server (a watch above
// all) fails within about a minute instead of waiting for the read timeout.
void SetKeepAlive(int fd) {
  int on = 1, idle = 30, interval = 10, count = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

// JSON text; invalid UTF-8 in strings is replaced rather than thrown.
std::string Dump(const nlohmann::json& object) {
  return object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::chrono::microseconds ToChrono(absl::Duration d) {
  return absl::ToChronoMicroseconds(std::max(d, absl::Milliseconds(1)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Create(ClientConfig config,
                                                       RetryPolicy retry) {
  absl::StatusOr<internal::ServerUrl> url =
      internal::ParseServerUrl(config.server);
  if (!url.ok()) return url.status();
  absl::StatusOr<std::shared_ptr<const internal::TlsSettings>> tls =
      internal::TlsSettings::Create(config);
  if (!tls.ok()) return tls.status();
  absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> http =
      (*tls)->NewHttpClient(*url);
  if (!http.ok()) return http.status();
  (*http)->set_keep_alive(true);
  return std::unique_ptr<Client>(new Client(std::move(config), retry,
                                            std::move(*url), std::move(*tls),
                                            std::move(*http)));
}

Client::Client(ClientConfig config, RetryPolicy retry, internal::ServerUrl url,
               std::shared_ptr<const internal::TlsSettings> tls,
               std::unique_ptr<httplib::ClientImpl> unary_http)
    : config_(std::move(config)),
      retry_(retry),
      url_(std::move(url)),
      tls_(std::move(tls)),
      token_(config_.token_file, config_.token),
      unary_http_(std::move(unary_http)) {}

Client::~Client() = default;

void Client::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  for (Sockets* sockets : in_flight_) {
    for (int fd : sockets->fds) shutdown(fd, SHUT_RDWR);
  }
}

bool Client::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

void Client::AddSocket(Sockets* sockets, int fd) {
  // A duplicate stays valid however httplib closes its descriptor, so
  // Cancel() can never shut down a reused descriptor number.
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return;  // then only the timeouts bound this exchange
  absl::MutexLock lock(&mu_);
  sockets->fds.push_back(copy);
  if (cancelled_) shutdown(copy, SHUT_RDWR);
}

void Client::PrepareRequest(httplib::Request& req, const char* method,
                            const std::string& path_and_query,
                            const std::string& token) const {
  req.method = method;
  req.path = url_.base_path + path_and_query;
  req.set_header("Accept", "application/json");
  req.set_header("User-Agent", config_.user_agent);
  if (!token.empty()) req.set_header("Authorization", "Bearer " + token);
}

Client::Exchange Client::Send(httplib::ClientImpl& http, httplib::Request& req,
                              absl::Duration connect_timeout,
                              absl::Duration read_timeout) {
  Exchange ex;
  Sockets sockets;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) {
      ex.cancelled = true;
      return ex;
    }
    in_flight_.insert(&sockets);
  }
  absl::Cleanup unregister = [this, &sockets] {
    absl::MutexLock lock(&mu_);
    in_flight_.erase(&sockets);
    for (int fd : sockets.fds) close(fd);
  };
  http.set_connection_timeout(ToChrono(connect_timeout));
  http.set_read_timeout(ToChrono(read_timeout));
  http.set_write_timeout(ToChrono(read_timeout));
  http.set_socket_options([this, &sockets](int fd) {
    SetKeepAlive(fd);
    AddSocket(&sockets, fd);
  });
  // A kept-alive connection: no new socket, so register the open one.
  if (http.is_socket_open()) AddSocket(&sockets, http.socket());

  {
    internal::ScopedSigpipeBlock no_sigpipe;
    internal::ResetLastVerifyError();
    httplib::Result result = http.send(req);
    if (!result) {
      ex.error = static_cast<int>(result.error());
      ex.verify_failed = internal::LastVerifyFailed();
      ex.transport_error = internal::DescribeTransportError(ex.error);
    } else {
      ex.status = result->status;
      ex.body = std::move(result->body);
      ex.retry_after = result->get_header_value("Retry-After");
    }
  }
  http.set_socket_options(nullptr);
  absl::MutexLock lock(&mu_);
  ex.cancelled = cancelled_;
  return ex;
}

absl::StatusOr<nlohmann::json> Client::Unary(
    const char* method, const std::string& path, const QueryParams& query,
    const std::string* body, bool decode, absl::Time call_deadline,
    size_t max_answer) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = call_deadline == absl::InfiniteFuture()
                                  ? start + retry_.deadline
                                  : call_deadline;
  const std::string what = absl::StrCat(method, " ", path);
  auto cancelled_error = [&] {
    return absl::CancelledError(absl::StrCat(what, ": cancelled"));
  };
  {
    absl::MutexLock lock(&mu_);
    bool idle = mu_.AwaitWithDeadline(
        absl::Condition(this, &Client::IdleOrCancelled), deadline);
    if (cancelled_) return cancelled_error();
    if (!idle) {
      return absl::DeadlineExceededError(absl::StrCat(
          what, ": the deadline passed while another call on this client ran"));
    }
    busy_ = true;
  }
  absl::Cleanup release = [this] {
    absl::MutexLock lock(&mu_);
    busy_ = false;
  };

  const std::string path_and_query = path + QueryString(query);
  absl::Duration backoff = retry_.initial_backoff;
  bool refreshed_token = false;
  bool last_timed_out = false;  // the last attempt got no answer in time
  absl::Status last;
  int attempts = 0;
  absl::InsecureBitGen jitter;
  for (;;) {
    absl::Duration remaining = deadline - absl::Now();
    if (remaining <= absl::ZeroDuration()) break;
    absl::StatusOr<std::string> token = token_.Current();
    if (!token.ok()) {
      return absl::Status(token.status().code(),
                          absl::StrCat(what, ": ", token.status().message()));
    }
    httplib::Request req;
    PrepareRequest(req, method, path_and_query, *token);
    if (body != nullptr) {
      req.body = *body;
      req.set_header("Content-Type", "application/json");
    }
    absl::Duration timeout = std::min(config_.request_timeout, remaining);
    const absl::Time sent = absl::Now();
    internal::BoundedBody answer(max_answer);
    answer.Attach(req);
    Exchange ex = Send(*unary_http_, req, timeout, timeout);
    ++attempts;
    if (ex.cancelled) return cancelled_error();
    if (answer.too_large()) {
      // The same again would be refused the same way.
      return absl::ResourceExhaustedError(
          absl::StrCat(what, ": the answer is larger than ", max_answer,
                       " bytes (HTTP ", answer.status(), ")"));
    }
    ex.body = std::move(answer.body());

    absl::Duration wait = backoff * absl::Uniform(jitter, 0.5, 1.0);
    if (ex.error != 0) {
      last_timed_out =
          ex.error == static_cast<int>(httplib::Error::ConnectionTimeout) ||
          absl::Now() - sent >= timeout - absl::Milliseconds(5);
      last = absl::UnavailableError(
          last_timed_out ? absl::StrCat(what, ": no answer within ",
                                        absl::FormatDuration(timeout), " (",
                                        ex.transport_error, ")")
                         : absl::StrCat(what, ": ", ex.transport_error));
      if (ex.verify_failed) {
        return last;  // a wrong CA or host does not heal by retrying
      }
    } else if (ex.status >= 200 && ex.status < 300) {
      VLOG(4, "kube: {} -> {} after {} attempt(s)", what, ex.status, attempts);
      if (!decode) return nlohmann::json();
      absl::StatusOr<nlohmann::json> decoded = DecodeAnswer(ex.body);
      if (absl::IsResourceExhausted(decoded.status())) {
        return absl::ResourceExhaustedError(
            absl::StrCat(what, ": the answer is ", decoded.status().message()));
      }
      if (!decoded.ok()) {
        return absl::UnknownError(absl::StrCat(
            what, ": the answer is not JSON: ", CutText(ex.body, 128)));
      }
      return decoded;
    } else if (ex.status == 401 && !refreshed_token &&
               token_.RefreshAfterUnauthorized(*token)) {
      refreshed_token = true;  // the token rotated under an unchanged stamp
      continue;
    } else {
      absl::Status error = ErrorFromResponse(method, path, ex.status, ex.body);
      if (!IsRetryableHttpStatus(ex.status)) return error;
      last = error;
      last_timed_out = false;
      int seconds = 0;
      if (absl::SimpleAtoi(ex.retry_after, &seconds) && seconds >= 0) {
        wait = std::min(absl::Seconds(seconds), retry_.max_backoff);
      }
    }
    VLOG(2, "kube: {} attempt {} failed: {}", what, attempts, last.message());
    backoff = std::min(backoff * 2, retry_.max_backoff);
    if (absl::Now() + wait >= deadline) break;
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&cancelled_), wait)) {
      return cancelled_error();
    }
  }
  const absl::Duration elapsed = absl::Now() - start;
  if (last.ok()) {
    return absl::DeadlineExceededError(absl::StrCat(
        what, ": deadline of ", absl::FormatDuration(deadline - start),
        " passed before the first attempt"));
  }
  absl::StatusCode code = last.code();
  if (last_timed_out) {
    code = absl::StatusCode::kDeadlineExceeded;
  }
  return absl::Status(code, absl::StrCat(last.message(), " (gave up after ",
                                         attempts, " attempt(s) in ",
                                         absl::FormatDuration(elapsed), ")"));
}

absl::StatusOr<nlohmann::json> Client::Get(const std::string& path) {
  return Unary("GET", path, {}, nullptr, true);
}

absl::StatusOr<nlohmann::json> Client::Get(const std::string& path,
                                           absl::Time deadline) {
  return Unary("GET", path, {}, nullptr, true, deadline);
}

absl::StatusOr<nlohmann::json> Client::List(const std::string& path,
                                            const ListOptions& options) {
  return Unary("GET", path, ListParams(options), nullptr, true,
               absl::InfiniteFuture(), kMaxListBytes);
}

absl::StatusOr<nlohmann::json> Client::Create(const std::string& path,
                                              const nlohmann::json& object) {
  const std::string body = Dump(object);
  return Unary("POST", path, {}, &body, true);
}

absl::StatusOr<nlohmann::json> Client::Update(const std::string& path,
                                              const nlohmann::json& object) {
  const std::string body = Dump(object);
  return Unary("PUT", path, {}, &body, true);
}

absl::Status Client::Delete(const std::string& path,
                            const nlohmann::json& delete_options) {
  std::string body;
  if (!delete_options.is_null()) body = Dump(delete_options);
  return Unary("DELETE", path, {}, delete_options.is_null() ? nullptr : &body,
               false)
      .status();
}

absl::Status Client::DeleteCollection(const std::string& path,
                                      const ListOptions& options) {
  return Unary("DELETE", path, ListParams(options), nullptr, false).status();
}

}  // namespace gdp::kube
