#include "bench/proc_usage.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gdp::bench {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> Slurp(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int64_t TicksToNs(int64_t ticks) {
  static const int64_t hz = sysconf(_SC_CLK_TCK);
  return ticks * (1000000000 / hz);
}

// utime+stime of a stat file, in ns; nullopt when it cannot be read.
std::optional<int64_t> StatTicksNs(const fs::path& path) {
  std::optional<std::string> text = Slurp(path);
  if (!text) return std::nullopt;
  // comm may hold spaces and parentheses: the fields start after the last
  // ')'. Field 3 (state) is index 0 there, utime (14) index 11, stime 12.
  size_t paren = text->rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::vector<absl::string_view> f = absl::StrSplit(
      absl::string_view(*text).substr(paren + 1), ' ', absl::SkipEmpty());
  int64_t utime = 0, stime = 0;
  if (f.size() < 13 || !absl::SimpleAtoi(f[11], &utime) ||
      !absl::SimpleAtoi(f[12], &stime)) {
    return std::nullopt;
  }
  return TicksToNs(utime + stime);
}

// One thread, or nullopt when it exited while being read.
std::optional<ThreadUsage> ReadThread(const fs::path& dir, pid_t tid) {
  ThreadUsage t;
  t.tid = tid;
  std::optional<std::string> status = Slurp(dir / "status");
  std::optional<std::string> comm = Slurp(dir / "comm");
  if (!status || !comm) return std::nullopt;
  t.comm = std::string(absl::StripTrailingAsciiWhitespace(*comm));
  bool vol = false, nonvol = false;
  for (absl::string_view line : absl::StrSplit(*status, '\n')) {
    if (absl::ConsumePrefix(&line, "voluntary_ctxt_switches:")) {
      vol = absl::SimpleAtoi(line, &t.voluntary);
    } else if (absl::ConsumePrefix(&line, "nonvoluntary_ctxt_switches:")) {
      nonvol = absl::SimpleAtoi(line, &t.nonvoluntary);
    }
  }
  if (!vol || !nonvol) return std::nullopt;
  // schedstat: on-CPU ns, wait ns, timeslices.
  std::optional<std::string> sched = Slurp(dir / "schedstat");
  if (sched &&
      absl::SimpleAtoi(sched->substr(0, sched->find(' ')), &t.cpu_ns)) {
    return t;
  }
  std::optional<int64_t> ticks = StatTicksNs(dir / "stat");
  if (!ticks) return std::nullopt;
  t.cpu_ns = *ticks;
  return t;
}

}  // namespace

absl::StatusOr<ProcessUsage> ReadUsage(pid_t pid) {
  const fs::path proc = fs::path("/proc") / std::to_string(pid);
  ProcessUsage u;
  clockid_t clock;
  timespec ts;
  if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &ts) != 0) {
    return absl::NotFoundError(absl::StrCat("no CPU clock for pid ", pid));
  }
  u.cpu_ns = int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
  std::optional<int64_t> ticks = StatTicksNs(proc / "stat");
  if (!ticks) {
    if (!fs::exists(proc)) {
      return absl::NotFoundError(absl::StrCat("pid ", pid, " is gone"));
    }
    return absl::InternalError(
        absl::StrCat("cannot parse ", proc.string(), "/stat"));
  }
  u.ticks_ns = *ticks;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(proc / "task", ec)) {
    pid_t tid = 0;
    if (!absl::SimpleAtoi(e.path().filename().string(), &tid)) continue;
    if (std::optional<ThreadUsage> t = ReadThread(e.path(), tid)) {
      u.threads.push_back(std::move(*t));
    }
  }
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("cannot list ", proc.string(), "/task: ", ec.message()));
  }
  std::sort(
      u.threads.begin(), u.threads.end(),
      [](const ThreadUsage& a, const ThreadUsage& b) { return a.tid < b.tid; });
  return u;
}

int CountThreads(pid_t pid) {
  std::error_code ec;
  int n = 0;
  for (fs::directory_iterator
           it(fs::path("/proc") / std::to_string(pid) / "task", ec),
       end;
       !ec && it != end; it.increment(ec)) {
    ++n;
  }
  return ec ? -1 : n;
}

UsageDelta Diff(const ProcessUsage& before, const ProcessUsage& after) {
  UsageDelta d;
  d.ticks_ns = after.ticks_ns - before.ticks_ns;
  d.cpu_ns = after.cpu_ns - before.cpu_ns;
  std::map<pid_t, const ThreadUsage*> old;
  for (const ThreadUsage& t : before.threads) old[t.tid] = &t;
  for (const ThreadUsage& t : after.threads) {
    ThreadUsage diff = t;
    if (auto it = old.find(t.tid); it != old.end()) {
      diff.cpu_ns -= it->second->cpu_ns;
      diff.voluntary -= it->second->voluntary;
      diff.nonvoluntary -= it->second->nonvoluntary;
      old.erase(it);
    } else {
      d.threads_started++;
    }
    d.voluntary += diff.voluntary;
    d.nonvoluntary += diff.nonvoluntary;
    d.threads.push_back(std::move(diff));
  }
  d.threads_exited = static_cast<int>(old.size());
  return d;
}

}  // namespace gdp::bench
