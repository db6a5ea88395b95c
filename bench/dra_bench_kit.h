// What the in-process DRA benchmarks share: claims served from memory to a
// Preparer, and percentiles of timings.
#ifndef GDP_BENCH_DRA_BENCH_KIT_H_
#define GDP_BENCH_DRA_BENCH_KIT_H_

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "dra/preparer.h"

namespace gdp::bench {

// Claims by UID, as a Preparer reads them (no API server). Thread-safe.
class MapReader final : public dra::ClaimReader {
 public:
  absl::StatusOr<dra::AllocatedClaim> Read(const dra::ClaimRef& ref, absl::Time,
                                           CallBudget&) override {
    absl::MutexLock lock(&mu_);
    auto it = claims_.find(ref.uid);
    if (it == claims_.end()) {
      return absl::NotFoundError(absl::StrCat("no claim ", ref.uid));
    }
    return it->second;
  }
  void Add(dra::AllocatedClaim c) {
    absl::MutexLock lock(&mu_);
    claims_[c.ref.uid] = std::move(c);
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, dra::AllocatedClaim> claims_ ABSL_GUARDED_BY(mu_);
};

// The value at fraction `q` (0.5: the median) of `v`; 0 when empty.
inline double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

}  // namespace gdp::bench

#endif  // GDP_BENCH_DRA_BENCH_KIT_H_
