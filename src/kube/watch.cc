// Client::Watch: a streaming GET whose body is one JSON event per line.
#include <httplib.h>

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "kube/client.h"
#include "kube/endpoint.h"
#include "kube/status.h"
#include "util/bounded_json.h"
#include "util/quote.h"

namespace gdp::kube {
namespace {

// The most of a failed answer's body kept for the error message.
constexpr size_t kMaxErrorBody = 4096;

// Decodes one line of a watch stream into `event`.
// Result on failure: Unavailable naming `what` for a line that is not an
// event object.
absl::Status ParseEvent(absl::string_view what, absl::string_view line,
                        WatchEvent& event) {
  absl::StatusOr<nlohmann::json> parsed = DecodeAnswer(line);
  if (absl::IsResourceExhausted(parsed.status())) {
    return absl::UnavailableError(
        absl::StrCat(what, ": a watch event is ", parsed.status().message()));
  }
  nlohmann::json json = parsed.ok() ? *std::move(parsed) : nlohmann::json();
  if (!json.is_object() || !json.contains("type") ||
      !json["type"].is_string() || !json.contains("object")) {
    return absl::UnavailableError(
        absl::StrCat(what, ": malformed watch event: ", CutText(line, 128)));
  }
  event.type = json["type"].get<std::string>();
  event.object = std::move(json["object"]);
  return absl::OkStatus();
}

}  // namespace

absl::Status Client::Watch(
    const std::string& path, const ListOptions& options, absl::Duration timeout,
    const std::function<bool(const WatchEvent&)>& on_event) {
  const std::string what = absl::StrCat("WATCH ", path);
  if (timeout < absl::Seconds(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the timeout must be at least a second"));
  }
  ListOptions watch_options = options;  // paging does not apply
  watch_options.limit = 0;
  watch_options.continue_token.clear();
  QueryParams params = ListParams(watch_options);
  params.emplace_back("watch", "true");
  params.emplace_back("allowWatchBookmarks", "true");
  params.emplace_back("timeoutSeconds",
                      absl::StrCat(static_cast<int64_t>(
                          std::ceil(absl::ToDoubleSeconds(timeout)))));
  const std::string path_and_query = path + QueryString(params);

  absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> http =
      tls_->NewHttpClient(url_);
  if (!http.ok()) return http.status();
  bool refreshed_token = false;
  for (;;) {
    absl::StatusOr<std::string> token = token_.Current();
    if (!token.ok()) {
      return absl::Status(token.status().code(),
                          absl::StrCat(what, ": ", token.status().message()));
    }
    int status = 0;
    std::string error_body;
    std::string pending;  // bytes after the last complete line
    absl::Status stream_error;
    bool stopped = false;  // on_event returned false

    // Hands every complete line in `pending` to on_event; false ends the
    // stream.
    auto too_large = [&] {
      stream_error = absl::UnavailableError(
          absl::StrCat(what, ": a watch event is larger than ",
                       kMaxWatchEventBytes, " bytes"));
      return false;
    };
    auto deliver = [&](bool at_end) {
      size_t begin = 0;
      while (begin < pending.size()) {
        size_t newline = pending.find('\n', begin);
        if (newline == std::string::npos) {
          if (!at_end) break;
          newline = pending.size();
        }
        absl::string_view line(pending.data() + begin, newline - begin);
        begin = newline + 1;
        if (absl::StripAsciiWhitespace(line).empty()) continue;
        if (line.size() > kMaxWatchEventBytes) return too_large();
        // A large event's tree, freed after on_event, is given back.
        ScopedMemoryRelease release;
        WatchEvent event;
        stream_error = ParseEvent(what, line, event);
        if (!stream_error.ok()) return false;
        if (event.type == "ERROR") {
          stream_error = ErrorFromStatusObject(what, event.object);
          return false;
        }
        if (!on_event(event)) {
          stopped = true;
          return false;
        }
      }
      pending.erase(0, std::min(begin, pending.size()));
      if (pending.size() > kMaxWatchEventBytes) return too_large();
      return true;
    };

    httplib::Request req;
    PrepareRequest(req, "GET", path_and_query, *token);
    req.response_handler = [&status](const httplib::Response& response) {
      status = response.status;
      return true;
    };
    req.content_receiver = [&](const char* data, size_t size, uint64_t,
                               uint64_t) {
      if (status != 200) {
        size_t room =
            kMaxErrorBody - std::min(kMaxErrorBody, error_body.size());
        error_body.append(data, std::min(size, room));
        return true;
      }
      pending.append(data, size);
      return deliver(/*at_end=*/false);
    };
    Exchange ex = Send(**http, req, config_.request_timeout,
                       timeout + config_.request_timeout);
    if (ex.cancelled) {
      return absl::CancelledError(absl::StrCat(what, ": cancelled"));
    }
    if (!stream_error.ok()) return stream_error;
    if (stopped) return absl::OkStatus();
    if (ex.error != 0) {
      return absl::UnavailableError(
          absl::StrCat(what, ": ", ex.transport_error));
    }
    if (status == 401 && !refreshed_token &&
        token_.RefreshAfterUnauthorized(*token)) {
      refreshed_token = true;
      continue;
    }
    if (status != 200) {
      return ErrorFromResponse("WATCH", path, status, error_body);
    }
    // The server ended the stream; a last line without a newline counts.
    if (!deliver(/*at_end=*/true) && !stopped) return stream_error;
    return absl::OkStatus();
  }
}

}  // namespace gdp::kube
