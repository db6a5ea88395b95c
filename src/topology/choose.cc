#include "topology/choose.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gdp {
namespace {

// The candidates of one request, indexed 0..n-1 in ascending GPU order, with
// the pair scores and NUMA slots precomputed.
struct Problem {
  std::vector<int> gpus;                 // local index -> GPU index
  std::vector<std::vector<int64_t>> w;   // pair scores, w[i][i] = 0
  std::vector<std::vector<int>> linked;  // 1 when the pair has NVLink
  std::vector<int64_t> row;              // row[i] = sum_j w[i][j]
  int64_t total = 0;                     // sum over all pairs
  std::vector<int> numa;                 // local NUMA slot, 0..63
  std::vector<bool> forced;              // must be chosen
  int size = 0;
};

// The ranked parts of a set's worth, in rank order (the lexicographic
// tie-break is handled by the callers).
struct Objective {
  int linked = 0;  // pairs joined by NVLink
  int64_t leftover = 0;
  int64_t score = 0;
  int numa_nodes = 0;
};

// True when `a` ranks strictly above `b`.
bool Better(const Objective& a, const Objective& b) {
  if (a.linked != b.linked) return a.linked > b.linked;
  if (a.leftover != b.leftover) return a.leftover > b.leftover;
  if (a.score != b.score) return a.score > b.score;
  return a.numa_nodes < b.numa_nodes;
}

bool Equal(const Objective& a, const Objective& b) {
  return !Better(a, b) && !Better(b, a);
}

// leftover(S) = total - sum_{i in S} row[i] + score(S): the pairs outside S
// are all pairs, less those touching S, plus those inside S (counted twice
// in the row sums).
int64_t Leftover(const Problem& p, int64_t score, int64_t row_sum) {
  return p.total - row_sum + score;
}

absl::StatusOr<Problem> MakeProblem(const Topology& t,
                                    const std::vector<int>& available,
                                    const std::vector<int>& must_include,
                                    int size) {
  const int n_all = t.num_gpus();
  if (size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocation size ", size, " must be at least 1"));
  }
  std::vector<bool> is_available(n_all, false);
  for (int g : available) {
    if (g < 0 || g >= n_all) {
      return absl::InvalidArgumentError(absl::StrCat(
          "available GPU ", g, " is not in the topology (", n_all, " GPUs)"));
    }
    if (is_available[g]) {
      return absl::InvalidArgumentError(
          absl::StrCat("available GPU ", g, " is listed twice"));
    }
    is_available[g] = true;
  }
  std::vector<bool> is_forced(n_all, false);
  for (int g : must_include) {
    if (g < 0 || g >= n_all) {
      return absl::InvalidArgumentError(
          absl::StrCat("must-include GPU ", g, " is not in the topology (",
                       n_all, " GPUs)"));
    }
    if (is_forced[g]) {
      return absl::InvalidArgumentError(
          absl::StrCat("must-include GPU ", g, " is listed twice"));
    }
    if (!is_available[g]) {
      return absl::InvalidArgumentError(
          absl::StrCat("must-include GPU ", g, " is not available"));
    }
    if (!t.Usable(g)) {
      return absl::InvalidArgumentError(
          absl::StrCat("must-include GPU ", g, " is not usable"));
    }
    is_forced[g] = true;
  }
  if (static_cast<int>(must_include.size()) > size) {
    return absl::InvalidArgumentError(absl::StrCat(must_include.size(),
                                                   " must-include GPUs exceed ",
                                                   "allocation size ", size));
  }

  Problem p;
  p.size = size;
  for (int g = 0; g < n_all; ++g) {
    if (is_available[g] && t.Usable(g)) p.gpus.push_back(g);
  }
  const int n = static_cast<int>(p.gpus.size());
  if (size > n) {
    return absl::InvalidArgumentError(absl::StrCat("allocation size ", size,
                                                   " exceeds the ", n,
                                                   " usable available GPUs"));
  }
  p.w.assign(n, std::vector<int64_t>(n, 0));
  p.linked.assign(n, std::vector<int>(n, 0));
  p.row.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      const int64_t s = t.PairScore(p.gpus[i], p.gpus[j]);
      p.w[i][j] = p.w[j][i] = s;
      p.linked[i][j] = p.linked[j][i] = t.NvLinked(p.gpus[i], p.gpus[j]);
      p.row[i] += s;
      p.row[j] += s;
      p.total += s;
    }
  }
  // NUMA nodes become slots 0..63 (at most 64 GPUs, so at most 64 values).
  std::vector<int> seen;
  for (int i = 0; i < n; ++i) {
    const int node = t.NumaNode(p.gpus[i]);
    auto it = std::find(seen.begin(), seen.end(), node);
    if (it == seen.end()) it = seen.insert(seen.end(), node);
    p.numa.push_back(static_cast<int>(it - seen.begin()));
    p.forced.push_back(is_forced[p.gpus[i]]);
  }
  return p;
}

// Exhaustive walk. Sets are visited in lexicographic order (include before
// exclude), and only a strictly better set replaces the best, so among
// equals the lexicographically smallest wins.
class Exact {
 public:
  explicit Exact(const Problem& p) : p_(p) {
    const int n = static_cast<int>(p.gpus.size());
    forced_after_.assign(n + 1, 0);
    for (int i = n - 1; i >= 0; --i) {
      forced_after_[i] = forced_after_[i + 1] + (p.forced[i] ? 1 : 0);
    }
  }

  std::vector<int> Run() {
    Walk(0, 0, 0, 0);
    return best_;
  }

 private:
  void Walk(int pos, int linked, int64_t score, int64_t row_sum) {
    const int n = static_cast<int>(p_.gpus.size());
    const int count = static_cast<int>(chosen_.size());
    if (count == p_.size) {
      if (forced_after_[pos] > 0) return;
      Objective o{linked, Leftover(p_, score, row_sum), score, NumaNodes()};
      if (best_.empty() || Better(o, best_objective_)) {
        best_objective_ = o;
        best_ = chosen_;
      }
      return;
    }
    if (count + (n - pos) < p_.size) return;
    if (count + forced_after_[pos] > p_.size) return;
    int64_t gain = 0;
    int linked_gain = 0;
    for (int j : chosen_) {
      gain += p_.w[pos][j];
      linked_gain += p_.linked[pos][j];
    }
    chosen_.push_back(pos);
    Walk(pos + 1, linked + linked_gain, score + gain, row_sum + p_.row[pos]);
    chosen_.pop_back();
    if (!p_.forced[pos]) Walk(pos + 1, linked, score, row_sum);
  }

  int NumaNodes() const {
    uint64_t mask = 0;
    for (int i : chosen_) mask |= uint64_t{1} << p_.numa[i];
    return std::popcount(mask);
  }

  const Problem& p_;
  std::vector<int> forced_after_;
  std::vector<int> chosen_;
  std::vector<int> best_;
  Objective best_objective_;
};

// A set under construction for the heuristic, with the objective's parts
// kept incrementally: gain_[v] = sum of w[v][j] over chosen j, and
// linked_gain_[v] the number of chosen GPUs NVLinked to v.
class Growing {
 public:
  explicit Growing(const Problem& p)
      : p_(p),
        in_(p.gpus.size(), false),
        gain_(p.gpus.size(), 0),
        linked_gain_(p.gpus.size(), 0),
        numa_count_(64, 0) {}

  void Add(int v) {
    linked_ += linked_gain_[v];
    score_ += gain_[v];
    row_sum_ += p_.row[v];
    if (numa_count_[p_.numa[v]]++ == 0) ++numa_nodes_;
    in_[v] = true;
    ++count_;
    for (size_t j = 0; j < gain_.size(); ++j) {
      gain_[j] += p_.w[j][v];
      linked_gain_[j] += p_.linked[j][v];
    }
  }

  void Remove(int v) {
    in_[v] = false;
    --count_;
    for (size_t j = 0; j < gain_.size(); ++j) {
      gain_[j] -= p_.w[j][v];
      linked_gain_[j] -= p_.linked[j][v];
    }
    linked_ -= linked_gain_[v];
    score_ -= gain_[v];
    row_sum_ -= p_.row[v];
    if (--numa_count_[p_.numa[v]] == 0) --numa_nodes_;
  }

  // The objective after adding v. REQUIRES: v not in the set.
  Objective WithAdded(int v) const {
    const int64_t score = score_ + gain_[v];
    const int64_t row_sum = row_sum_ + p_.row[v];
    return {linked_ + linked_gain_[v], Leftover(p_, score, row_sum), score,
            numa_nodes_ + (numa_count_[p_.numa[v]] == 0 ? 1 : 0)};
  }

  // The objective after swapping out `out` for `in`.
  // REQUIRES: out in the set, in not.
  Objective WithSwap(int out, int in) const {
    const int linked =
        linked_ - linked_gain_[out] + linked_gain_[in] - p_.linked[in][out];
    const int64_t score = score_ - gain_[out] + gain_[in] - p_.w[in][out];
    const int64_t row_sum = row_sum_ - p_.row[out] + p_.row[in];
    int nodes = numa_nodes_;
    if (p_.numa[out] != p_.numa[in]) {
      if (numa_count_[p_.numa[out]] == 1) --nodes;
      if (numa_count_[p_.numa[in]] == 0) ++nodes;
    }
    return {linked, Leftover(p_, score, row_sum), score, nodes};
  }

  Objective Current() const {
    return {linked_, Leftover(p_, score_, row_sum_), score_, numa_nodes_};
  }

  bool In(int v) const { return in_[v]; }
  int count() const { return count_; }

  std::vector<int> Members() const {
    std::vector<int> out;
    for (size_t i = 0; i < in_.size(); ++i) {
      if (in_[i]) out.push_back(static_cast<int>(i));
    }
    return out;
  }

 private:
  const Problem& p_;
  std::vector<bool> in_;
  std::vector<int64_t> gain_;
  std::vector<int> linked_gain_;
  std::vector<int> numa_count_;
  int linked_ = 0;
  int64_t score_ = 0;
  int64_t row_sum_ = 0;
  int numa_nodes_ = 0;
  int count_ = 0;
};

// Greedy growth: adds the GPU that ranks best after adding, lowest index
// among equals, until the set is full.
void Grow(const Problem& p, Growing& g) {
  const int n = static_cast<int>(p.gpus.size());
  while (g.count() < p.size) {
    int best = -1;
    Objective best_o;
    for (int v = 0; v < n; ++v) {
      if (g.In(v)) continue;
      const Objective o = g.WithAdded(v);
      if (best < 0 || Better(o, best_o)) {
        best = v;
        best_o = o;
      }
    }
    g.Add(best);
  }
}

// Best-improvement swaps of one chosen (not forced) GPU for one free GPU,
// while one ranks strictly better, at most `max_passes` times.
void Improve(const Problem& p, Growing& g, int max_passes) {
  const int n = static_cast<int>(p.gpus.size());
  for (int pass = 0; pass < max_passes; ++pass) {
    Objective best_o = g.Current();
    int best_out = -1, best_in = -1;
    for (int out = 0; out < n; ++out) {
      if (!g.In(out) || p.forced[out]) continue;
      for (int in = 0; in < n; ++in) {
        if (g.In(in)) continue;
        const Objective o = g.WithSwap(out, in);
        if (Better(o, best_o)) {
          best_o = o;
          best_out = out;
          best_in = in;
        }
      }
    }
    if (best_out < 0) return;
    g.Remove(best_out);
    g.Add(best_in);
  }
}

std::vector<int> Heuristic(const Problem& p) {
  const int n = static_cast<int>(p.gpus.size());
  struct Candidate {
    Objective o;
    std::vector<int> members;
  };
  // Ranks candidates by objective, then lexicographically.
  auto ranks_above = [](const Candidate& a, const Candidate& b) {
    if (!Equal(a.o, b.o)) return Better(a.o, b.o);
    return a.members < b.members;
  };

  std::vector<int> forced;
  for (int i = 0; i < n; ++i) {
    if (p.forced[i]) forced.push_back(i);
  }
  // Seeds: the forced set, or else each GPU alone.
  std::vector<std::vector<int>> seeds;
  if (!forced.empty()) {
    seeds.push_back(forced);
  } else {
    for (int i = 0; i < n; ++i) seeds.push_back({i});
  }
  std::vector<Candidate> grown;
  for (const std::vector<int>& seed : seeds) {
    Growing g(p);
    for (int v : seed) g.Add(v);
    Grow(p, g);
    Candidate c{g.Current(), g.Members()};
    if (std::find_if(grown.begin(), grown.end(), [&](const Candidate& x) {
          return x.members == c.members;
        }) == grown.end()) {
      grown.push_back(std::move(c));
    }
  }
  std::sort(grown.begin(), grown.end(), ranks_above);
  constexpr size_t kImproved = 4;
  if (grown.size() > kImproved) grown.resize(kImproved);

  Candidate best;
  bool have_best = false;
  for (const Candidate& c : grown) {
    Growing g(p);
    for (int v : c.members) g.Add(v);
    Improve(p, g, /*max_passes=*/2 * n);
    Candidate improved{g.Current(), g.Members()};
    if (!have_best || ranks_above(improved, best)) {
      best = std::move(improved);
      have_best = true;
    }
  }
  return best.members;
}

}  // namespace

absl::StatusOr<std::vector<int>> Choose(const Topology& topology,
                                        const std::vector<int>& available,
                                        const std::vector<int>& must_include,
                                        int size) {
  absl::StatusOr<Problem> problem =
      MakeProblem(topology, available, must_include, size);
  if (!problem.ok()) return problem.status();
  const Problem& p = *problem;
  const std::vector<int> local =
      static_cast<int>(p.gpus.size()) <= kChooseExactLimit ? Exact(p).Run()
                                                           : Heuristic(p);
  std::vector<int> result;
  result.reserve(local.size());
  for (int i : local) result.push_back(p.gpus[i]);
  return result;  // ascending: local indices follow GPU order
}

}  // namespace gdp
