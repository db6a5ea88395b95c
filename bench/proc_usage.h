// What a process costs while it does nothing, read from /proc: its CPU time
// and its threads' context switches, sampled twice and compared.
#ifndef GDP_BENCH_PROC_USAGE_H_
#define GDP_BENCH_PROC_USAGE_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gdp::bench {

// One live thread, from /proc/<pid>/task/<tid>/.
struct ThreadUsage {
  pid_t tid = 0;
  std::string comm;
  // On-CPU time from schedstat (ns resolution); utime+stime of the
  // thread's stat (clock-tick resolution) where schedstat is missing.
  int64_t cpu_ns = 0;
  int64_t voluntary = 0, nonvoluntary = 0;
};

// One sample of a process.
struct ProcessUsage {
  // utime+stime from /proc/<pid>/stat, in ns but clock-tick resolution
  // (10 ms at 100 Hz); exited threads included.
  int64_t ticks_ns = 0;
  // The process's CPU clock (clock_getcpuclockid): ns resolution, exited
  // threads included.
  int64_t cpu_ns = 0;
  // The live threads, by tid.
  std::vector<ThreadUsage> threads;
};

// Reads one sample of `pid`. Threads that exit while it reads are left
// out. Result on failure: NotFound when the process is gone, Internal when
// a file cannot be parsed. Thread-safe (reads only /proc).
absl::StatusOr<ProcessUsage> ReadUsage(pid_t pid);

// The number of live threads of `pid`, or -1 when the process is gone.
int CountThreads(pid_t pid);

// What happened between two samples of one process.
struct UsageDelta {
  int64_t ticks_ns = 0, cpu_ns = 0;
  // Summed over the threads alive at the end; a thread that started in
  // between counts from zero, one that exited in between is missing.
  int64_t voluntary = 0, nonvoluntary = 0;
  std::vector<ThreadUsage> threads;  // per-thread differences, by tid
  int threads_started = 0, threads_exited = 0;
};

// `after` minus `before`, matching threads by tid.
UsageDelta Diff(const ProcessUsage& before, const ProcessUsage& after);

}  // namespace gdp::bench

#endif  // GDP_BENCH_PROC_USAGE_H_
