#include "metrics/registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace gdp::metrics {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "metrics: %s\n", what.c_str());
  std::abort();
}

bool ValidName(const std::string& s, bool colons) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = absl::ascii_isalpha(c) || c == '_' || (colons && c == ':') ||
              (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

std::unique_ptr<Counter> MakeChild(const FamilySnapshot&, Counter*) {
  return std::make_unique<Counter>();
}
std::unique_ptr<Gauge> MakeChild(const FamilySnapshot&, Gauge*) {
  return std::make_unique<Gauge>();
}
std::unique_ptr<Histogram> MakeChild(const FamilySnapshot& meta, Histogram*) {
  return std::make_unique<Histogram>(&meta.bounds);
}

void ReadChild(const Counter& c, Sample* out) { out->value = c.value(); }
void ReadChild(const Gauge& g, Sample* out) { out->value = g.value(); }
void ReadChild(const Histogram& h, Sample* out) { h.Read(out); }

}  // namespace

Histogram::Histogram(const std::vector<double>* bounds)
    : bounds_(*bounds), counts_(new std::atomic<uint64_t>[bounds->size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

void Histogram::Observe(double v) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) -
             bounds_.begin();  // first bound >= v; bounds_.size(): +Inf
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

void Histogram::ObserveSince(std::chrono::steady_clock::time_point start) {
  Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count());
}

void Histogram::Read(Sample* out) const {
  out->buckets.clear();
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    out->buckets.push_back(total);
  }
  out->count = total;
  out->sum = sum_.load(std::memory_order_relaxed);
}

template <typename Metric>
Metric& Family<Metric>::With(const std::vector<std::string>& label_values) {
  if (label_values.size() != meta_.label_names.size()) {
    Die(meta_.name + ": wrong number of label values");
  }
  absl::MutexLock lock(&mu_);
  std::unique_ptr<Metric>& child = children_[label_values];
  if (child == nullptr) child = MakeChild(meta_, static_cast<Metric*>(nullptr));
  return *child;
}

template <typename Metric>
void Family<Metric>::Clear() {
  absl::MutexLock lock(&mu_);
  children_.clear();
}

template <typename Metric>
FamilySnapshot Family<Metric>::Snapshot() const {
  FamilySnapshot out = meta_;
  absl::MutexLock lock(&mu_);
  for (const auto& [values, child] : children_) {
    Sample s;
    s.label_values = values;
    ReadChild(*child, &s);
    out.samples.push_back(std::move(s));
  }
  return out;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

void Registry::Add(const FamilySnapshot& meta,
                   std::unique_ptr<FamilyBase> family) {
  if (!ValidName(meta.name, /*colons=*/true)) {
    Die("invalid metric name '" + meta.name + "'");
  }
  for (const std::string& l : meta.label_names) {
    if (!ValidName(l, /*colons=*/false) || absl::StartsWith(l, "__") ||
        (meta.type == Type::kHistogram && l == "le")) {
      Die(meta.name + ": invalid label name '" + l + "'");
    }
  }
  for (size_t i = 0; i < meta.bounds.size(); ++i) {
    if (!std::isfinite(meta.bounds[i]) ||
        (i > 0 && meta.bounds[i] <= meta.bounds[i - 1])) {
      Die(meta.name + ": bucket bounds must be finite and ascending");
    }
  }
  absl::MutexLock lock(&mu_);
  if (!families_.emplace(meta.name, std::move(family)).second) {
    Die("metric '" + meta.name + "' registered twice");
  }
}

Family<Counter>& Registry::AddCounter(const std::string& name,
                                      const std::string& help,
                                      std::vector<std::string> label_names) {
  FamilySnapshot meta{name, help, Type::kCounter, std::move(label_names)};
  auto f = std::make_unique<Family<Counter>>(meta);
  Family<Counter>& ref = *f;
  Add(meta, std::move(f));
  return ref;
}

Family<Gauge>& Registry::AddGauge(const std::string& name,
                                  const std::string& help,
                                  std::vector<std::string> label_names) {
  FamilySnapshot meta{name, help, Type::kGauge, std::move(label_names)};
  auto f = std::make_unique<Family<Gauge>>(meta);
  Family<Gauge>& ref = *f;
  Add(meta, std::move(f));
  return ref;
}

Family<Histogram>& Registry::AddHistogram(const std::string& name,
                                          const std::string& help,
                                          std::vector<std::string> label_names,
                                          std::vector<double> bounds) {
  FamilySnapshot meta{name, help, Type::kHistogram, std::move(label_names),
                      std::move(bounds)};
  auto f = std::make_unique<Family<Histogram>>(meta);
  Family<Histogram>& ref = *f;
  Add(meta, std::move(f));
  return ref;
}

uint64_t Registry::AddCollector(Collector collector) {
  absl::MutexLock lock(&collect_mu_);
  uint64_t token = next_token_++;
  collectors_[token] = std::move(collector);
  return token;
}

void Registry::RemoveCollector(uint64_t token) {
  absl::MutexLock lock(&collect_mu_);
  collectors_.erase(token);
}

std::vector<FamilySnapshot> Registry::Collect() const {
  std::vector<FamilySnapshot> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, family] : families_) {
      out.push_back(family->Snapshot());
    }
  }
  {
    absl::MutexLock lock(&collect_mu_);
    for (const auto& [token, collector] : collectors_) {
      for (FamilySnapshot& f : collector()) out.push_back(std::move(f));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const FamilySnapshot& a, const FamilySnapshot& b) {
                     return a.name < b.name;
                   });
  return out;
}

Registry& DefaultRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

}  // namespace gdp::metrics
