#include "dra_plugin_manager.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gdp::dpctl {

DraPluginManager::DraPluginManager(DraManagerOptions options, EventSink* events)
    : options_(std::move(options)), events_(events) {}

DraPluginManager::~DraPluginManager() { Shutdown(); }

void DraPluginManager::ReapAttempts() {
  for (auto it = attempts_.begin(); it != attempts_.end();) {
    if (it->done) {
      // Done is the thread's last step under mu_, so this join is short.
      it->thread.join();
      it = attempts_.erase(it);
    } else {
      ++it;
    }
  }
}

void DraPluginManager::CancelAttempts(const std::string& path) {
  for (Attempt& a : attempts_) {
    if (a.socket == path && !a.cancelled) {
      a.cancelled = true;
      a.client->Cancel();
    }
  }
}

void DraPluginManager::SocketCreated(const std::string& path) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  ReapAttempts();
  CancelAttempts(path);
  events_->Emit(PluginFoundEvent(path));
  Attempt& attempt = attempts_.emplace_back();
  attempt.socket = path;
  attempt.client = std::make_shared<DraClient>(path);
  attempt.thread = std::thread(&DraPluginManager::Register, this, &attempt);
}

void DraPluginManager::SocketRemoved(const std::string& path) {
  std::vector<std::shared_ptr<Registration>> removed;
  {
    absl::MutexLock lock(&mu_);
    CancelAttempts(path);
    for (auto it = registrations_.begin(); it != registrations_.end();) {
      if ((*it)->socket == path) {
        (*it)->stopped = true;
        (*it)->client->Cancel();
        removed.push_back(*it);
        it = registrations_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& r : removed) {
    if (r->health_thread.joinable()) r->health_thread.join();
    events_->Emit(DeregisteredEvent(r->driver, r->endpoint, r->socket));
  }
}

bool DraPluginManager::Backoff(Attempt* attempt, absl::Duration d) {
  absl::MutexLock lock(&mu_);
  auto cancelled = [this, attempt]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return attempt->cancelled || stopping_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&cancelled), d);
  return !cancelled();
}

std::optional<pluginregistration::PluginInfo> DraPluginManager::GetInfo(
    Attempt* attempt) {
  absl::Duration backoff = options_.initial_backoff;
  for (int i = 1;; ++i) {
    const char* step = "dial";
    absl::Status status = attempt->client->Connect(options_.dial_timeout);
    if (status.ok()) {
      step = "GetInfo";
      absl::StatusOr<pluginregistration::PluginInfo> info =
          attempt->client->GetInfo(options_.get_info_timeout);
      if (info.ok()) return *std::move(info);
      status = info.status();
    }
    {
      absl::MutexLock lock(&mu_);
      if (attempt->cancelled || stopping_) return std::nullopt;
    }
    const bool retry = i < options_.get_info_attempts;
    events_->Emit(PluginErrorEvent(
        attempt->socket, step, StatusText(status),
        retry ? std::optional<absl::Duration>(backoff) : std::nullopt));
    if (!retry || !Backoff(attempt, backoff)) return std::nullopt;
    backoff *= 2;
  }
}

void DraPluginManager::Register(Attempt* attempt) {
  std::optional<pluginregistration::PluginInfo> info = GetInfo(attempt);
  if (info.has_value()) {
    RegistrationReport report =
        ValidatePluginInfo(attempt->socket, *info, options_.apis);
    bool registered = false;
    if (report.error.empty()) {
      absl::MutexLock lock(&mu_);
      if (attempt->cancelled || stopping_) {
        attempt->done = true;
        return;
      }
      for (const auto& r : registrations_) {
        if (r->driver == report.driver && r->endpoint == report.endpoint) {
          // One plugin instance cannot hijack the endpoint of another.
          report.error = absl::StrCat(
              "RegisterPlugin error -- plugin registration failed with err: "
              "endpoint ",
              report.endpoint, " already registered for DRA driver plugin ",
              report.driver);
        }
      }
      if (report.error.empty()) {
        auto r = std::make_shared<Registration>();
        r->socket = report.socket;
        r->driver = report.driver;
        r->endpoint = report.endpoint;
        r->api = *report.api;
        r->health = report.health;
        r->client = std::make_shared<DraClient>(report.endpoint);
        registrations_.push_back(r);
        registered = true;
        // Emitted under mu_ so that a deregistered event cannot come first.
        events_->Emit(RegisteredEvent(report));
        if (r->health) {
          r->health_thread =
              std::thread(&DraPluginManager::FollowHealth, this, r);
        }
      }
    }
    absl::Status notified = attempt->client->NotifyRegistrationStatus(
        registered, report.error, options_.notify_timeout);
    absl::MutexLock lock(&mu_);
    // An abandoned attempt (socket gone, or shutting down) reports nothing.
    if (!attempt->cancelled && !stopping_) {
      if (!registered) events_->Emit(RegisteredEvent(report));
      if (!notified.ok()) {
        events_->Emit(PluginErrorEvent(
            attempt->socket, "NotifyRegistrationStatus", StatusText(notified)));
      }
    }
  }
  absl::MutexLock lock(&mu_);
  attempt->done = true;
}

void DraPluginManager::FollowHealth(std::shared_ptr<Registration> r) {
  for (;;) {
    absl::Status status = r->client->WatchHealth(
        [&](const v1alpha1::NodeWatchResourcesResponse& message) {
          events_->Emit(HealthEvent(r->driver, message));
        });
    absl::MutexLock lock(&mu_);
    if (r->stopped || stopping_) return;
    events_->Emit(
        HealthStreamEndedEvent(r->driver, status, options_.health_retry));
    auto stopped = [this, &r]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return r->stopped || stopping_;
    };
    if (mu_.AwaitWithTimeout(absl::Condition(&stopped),
                             options_.health_retry)) {
      return;
    }
  }
}

absl::StatusOr<DraPluginManager::Target> DraPluginManager::Get(
    absl::string_view driver) {
  absl::MutexLock lock(&mu_);
  std::string name(driver);
  if (name == "-") {
    std::set<std::string> drivers;
    for (const auto& r : registrations_) drivers.insert(r->driver);
    if (drivers.empty()) {
      return absl::FailedPreconditionError("no DRA driver is registered");
    }
    if (drivers.size() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(drivers.size(), " DRA drivers are registered (",
                       absl::StrJoin(drivers, ", "), "): name one, not -"));
    }
    name = *drivers.begin();
  }
  for (auto it = registrations_.rbegin(); it != registrations_.rend(); ++it) {
    const Registration& r = **it;
    if (r.driver == name) return Target{r.driver, r.api, r.client};
  }
  return absl::NotFoundError(
      absl::StrCat("DRA driver ", name, " is not registered"));
}

std::vector<DriverReport> DraPluginManager::List() {
  absl::MutexLock lock(&mu_);
  std::vector<DriverReport> list;
  std::set<std::string> seen;  // drivers whose newest registration is listed
  for (auto it = registrations_.rbegin(); it != registrations_.rend(); ++it) {
    const Registration& r = **it;
    list.insert(list.begin(),
                DriverReport{r.driver, r.endpoint, r.socket, r.api, r.health,
                             seen.insert(r.driver).second});
  }
  return list;
}

std::optional<std::string> DraPluginManager::AwaitAnyDriver() {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !registrations_.empty();
  };
  mu_.Await(absl::Condition(&ready));
  if (stopping_) return std::nullopt;
  return registrations_.front()->driver;
}

void DraPluginManager::Shutdown() {
  absl::MutexLock shutdown_lock(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  std::list<Attempt> attempts;
  std::list<std::shared_ptr<Registration>> registrations;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (Attempt& a : attempts_) a.client->Cancel();
    for (const auto& r : registrations_) {
      r->stopped = true;
      r->client->Cancel();
    }
    // No attempt starts or registers after stopping_.
    attempts.splice(attempts.end(), attempts_);
    registrations.splice(registrations.end(), registrations_);
  }
  for (Attempt& a : attempts) a.thread.join();
  for (const auto& r : registrations) {
    if (r->health_thread.joinable()) r->health_thread.join();
  }
}

}  // namespace gdp::dpctl
