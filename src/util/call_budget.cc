#include "util/call_budget.h"

#include <utility>

namespace gdp {

void CallBudget::Cancel() {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return;
  cancelled_ = true;
  for (auto& [token, callback] : callbacks_) callback();
  callbacks_.clear();
}

bool CallBudget::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

uint64_t CallBudget::OnCancel(std::function<void()> on_cancel) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) {
    on_cancel();
    return 0;
  }
  const uint64_t token = next_++;
  callbacks_.emplace(token, std::move(on_cancel));
  return token;
}

void CallBudget::RemoveOnCancel(uint64_t token) {
  if (token == 0) return;
  absl::MutexLock lock(&mu_);
  callbacks_.erase(token);
}

}  // namespace gdp
