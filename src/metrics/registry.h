// A small, thread-safe metrics registry in Prometheus' data model: families
// of counters, gauges and histograms with label names, one child per list
// of label values. Knows nothing about the plugin; the text exposition
// format is in exposition.h.
#ifndef GDP_METRICS_REGISTRY_H_
#define GDP_METRICS_REGISTRY_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace gdp::metrics {

enum class Type { kCounter, kGauge, kHistogram };

// One child of a family as read at scrape time.
struct Sample {
  std::vector<std::string> label_values;  // in the family's label order
  double value = 0;                       // counter and gauge
  // Histogram: cumulative counts per upper bound of the family, then the
  // +Inf bucket (whose count is `count`), and the sum of observations.
  std::vector<uint64_t> buckets = {};
  double sum = 0;
  uint64_t count = 0;
};

// One family as read at scrape time.
struct FamilySnapshot {
  std::string name;
  std::string help;
  Type type = Type::kGauge;
  std::vector<std::string> label_names = {};
  // Histogram: upper bounds, ascending, without +Inf.
  std::vector<double> bounds = {};
  std::vector<Sample> samples = {};  // sorted by label values
};

// Thread-safe; lock-free.
class Counter {
 public:
  // REQUIRES: by >= 0 (a counter only goes up).
  void Increment(double by = 1) { value_.fetch_add(by); }
  double value() const { return value_.load(); }

 private:
  std::atomic<double> value_{0};
};

// Thread-safe; lock-free.
class Gauge {
 public:
  void Set(double v) { value_.store(v); }
  void Add(double by) { value_.fetch_add(by); }
  double value() const { return value_.load(); }

 private:
  std::atomic<double> value_{0};
};

// Thread-safe; lock-free. Buckets are "less than or equal" upper bounds.
class Histogram {
 public:
  // `bounds` must outlive the histogram (its family owns them).
  explicit Histogram(const std::vector<double>* bounds);

  void Observe(double v);
  // Observes the seconds since `start` on a steady clock.
  void ObserveSince(std::chrono::steady_clock::time_point start);

  // Fills the histogram fields of `out` (cumulative buckets, sum, count).
  // Concurrent observations may be in the buckets but not yet the sum.
  void Read(Sample* out) const;

 private:
  const std::vector<double>& bounds_;
  // Non-cumulative count per bound, then +Inf.
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0};
};

// Observes the time from construction to destruction into a histogram.
class ScopedTimer {
 public:
  explicit ScopedTimer(Histogram& h)
      : h_(h), start_(std::chrono::steady_clock::now()) {}
  ~ScopedTimer() { h_.ObserveSince(start_); }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  Histogram& h_;
  std::chrono::steady_clock::time_point start_;
};

// What a registry holds for each family.
class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  virtual FamilySnapshot Snapshot() const = 0;
};

// A family of metrics of one type. Thread-safe.
template <typename Metric>
class Family final : public FamilyBase {
 public:
  explicit Family(FamilySnapshot meta) : meta_(std::move(meta)) {}

  // The child for `label_values` (one per label name, in order), made at
  // first use. Valid as long as the family. Takes a lock: hot paths keep
  // the reference. REQUIRES: label_values.size() == the label names'
  // (checked: a mismatch aborts, it is a programming error).
  Metric& With(const std::vector<std::string>& label_values)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Drops every child (e.g. before setting gauges for the current set).
  void Clear() ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& name() const { return meta_.name; }

  FamilySnapshot Snapshot() const override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const FamilySnapshot meta_;  // no samples
  mutable absl::Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> children_
      ABSL_GUARDED_BY(mu_);
};

// Thread-safe. Families live as long as the registry.
class Registry {
 public:
  // Makes a family. Names must match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
  // [a-zA-Z_][a-zA-Z0-9_]* (not starting "__", and not "le" for
  // histograms), each name once in the registry; histogram bounds finite
  // and strictly ascending. A violation aborts: names are constants, so it
  // is a programming error.
  Family<Counter>& AddCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names = {});
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help,
                          std::vector<std::string> label_names = {});
  Family<Histogram>& AddHistogram(const std::string& name,
                                  const std::string& help,
                                  std::vector<std::string> label_names,
                                  std::vector<double> bounds);

  // A source of families computed at each scrape (e.g. device counts read
  // from the running plugins). Called from Collect's thread, one at a
  // time, under a lock: it must not call into the registry. Its families'
  // names must not clash with others (not checked). Returns a token.
  using Collector = std::function<std::vector<FamilySnapshot>()>;
  uint64_t AddCollector(Collector collector) ABSL_LOCKS_EXCLUDED(collect_mu_);
  // After this returns, the collector of `token` is not running and will
  // not run again.
  void RemoveCollector(uint64_t token) ABSL_LOCKS_EXCLUDED(collect_mu_);

  // Every family, sorted by name (families without children included).
  std::vector<FamilySnapshot> Collect() const
      ABSL_LOCKS_EXCLUDED(mu_, collect_mu_);

 private:
  void Add(const FamilySnapshot& meta, std::unique_ptr<FamilyBase> family)
      ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>> families_
      ABSL_GUARDED_BY(mu_);
  mutable absl::Mutex collect_mu_;
  uint64_t next_token_ ABSL_GUARDED_BY(collect_mu_) = 1;
  std::map<uint64_t, Collector> collectors_ ABSL_GUARDED_BY(collect_mu_);
};

// The process-wide registry /metrics serves; never destroyed.
Registry& DefaultRegistry();

}  // namespace gdp::metrics

#endif  // GDP_METRICS_REGISTRY_H_
