#include "util/keep_until_exit.h"

#include <unistd.h>

#include <cstdio>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace gdp {
namespace {

struct Kept {
  absl::Mutex mu;
  std::vector<std::shared_ptr<void>> objects ABSL_GUARDED_BY(mu);
};

// Never destroyed, so neither is anything in it.
Kept& TheKept() {
  static Kept* const kept = new Kept;
  return *kept;
}

}  // namespace

void KeepUntilExit(std::shared_ptr<void> object) {
  if (object == nullptr) return;
  Kept& kept = TheKept();
  absl::MutexLock lock(&kept.mu);
  kept.objects.push_back(std::move(object));
}

bool AnythingKeptUntilExit() {
  Kept& kept = TheKept();
  absl::MutexLock lock(&kept.mu);
  return !kept.objects.empty();
}

void ExitNow(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}

}  // namespace gdp
