#include "nvml/deadline.h"

#include <algorithm>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "metrics/registry.h"
#include "util/logging.h"

namespace gdp {
namespace {

constexpr char kHangPayloadUrl[] = "gdp.nvml/hang";

thread_local NvmlJob* current_job = nullptr;

void CountHang(const char* function) {
  static metrics::Family<metrics::Counter>& hangs =
      metrics::DefaultRegistry().AddCounter(
          "gpu_device_plugin_nvml_hangs_total",
          "NVML calls that did not return by their deadline (--nvml-timeout), "
          "by function.",
          {"function"});
  hangs.With({function}).Increment();
}

}  // namespace

std::string NvmlHang::Message() const {
  std::string m = absl::StrCat("NVML ", function, " did not return in ",
                               absl::FormatDuration(deadline));
  if (!subject.empty()) absl::StrAppend(&m, " (", subject, ")");
  return m;
}

absl::Status NvmlHangStatus(const std::string& message, bool per_gpu) {
  absl::Status s(absl::StatusCode::kDeadlineExceeded, message);
  s.SetPayload(kHangPayloadUrl, absl::Cord(per_gpu ? "gpu" : "all"));
  return s;
}

bool IsNvmlHang(const absl::Status& status) {
  return status.GetPayload(kHangPayloadUrl).has_value();
}

bool IsNvmlHangOfAll(const absl::Status& status) {
  auto p = status.GetPayload(kHangPayloadUrl);
  return p.has_value() && *p == "all";
}

NvmlJob* CurrentNvmlJob() { return current_job; }
void SetCurrentNvmlJob(NvmlJob* job) { current_job = job; }

void NvmlCallGate::Name(nvmlDevice_t device, const std::string& uuid) {
  absl::MutexLock lock(&mu_);
  names_[device] = uuid;
  by_uuid_[uuid] = device;
}

void NvmlCallGate::NameIndex(unsigned index, nvmlDevice_t device) {
  absl::MutexLock lock(&mu_);
  by_index_[index] = device;
}

nvmlDevice_t NvmlCallGate::HandleOf(const std::string& uuid) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = by_uuid_.find(uuid);
  return it == by_uuid_.end() ? nullptr : it->second;
}

nvmlDevice_t NvmlCallGate::HandleAt(unsigned index) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = by_index_.find(index);
  return it == by_index_.end() ? nullptr : it->second;
}

absl::Status NvmlCallGate::Blocked(nvmlDevice_t a, nvmlDevice_t b) const {
  for (const auto& [id, r] : hangs_) {
    const bool all = r.devices[0] == nullptr && r.devices[1] == nullptr;
    // A hung call about two GPUs (their common ancestor) does not say
    // which one is sick: it blocks only other calls about two GPUs that
    // share one; a call about one of them alone goes through (and is
    // recorded itself if it hangs).
    const bool pair = r.devices[0] != nullptr && r.devices[1] != nullptr;
    bool hit = all;
    if (!pair || (a != nullptr && b != nullptr)) {
      for (nvmlDevice_t d : r.devices) {
        hit = hit || (d != nullptr && (d == a || d == b));
      }
    }
    if (hit) return NvmlHangStatus(r.hang.Message(), r.hang.per_gpu);
  }
  return absl::OkStatus();
}

absl::Status NvmlCallGate::Enter(const char* function, nvmlDevice_t a,
                                 nvmlDevice_t b, absl::Duration extra) {
  if (hang_count_.load(std::memory_order_acquire) > 0) {
    absl::ReaderMutexLock lock(&mu_);
    if (absl::Status s = Blocked(a, b); !s.ok()) return s;
  }
  NvmlJob* job = current_job;
  if (job == nullptr) return absl::OkStatus();
  absl::MutexLock lock(&job->mu);
  if (job->abandoned) {
    return absl::CancelledError(absl::StrCat(
        function,
        ": not called: the job was given up after an NVML call hung"));
  }
  job->in_call = true;
  job->function = function;
  job->devices[0] = a;
  job->devices[1] = b;
  job->start = absl::Now();
  job->extra = extra;
  return absl::OkStatus();
}

void NvmlCallGate::Leave() {
  NvmlJob* job = current_job;
  if (job == nullptr) return;
  absl::MutexLock lock(&job->mu);
  job->in_call = false;
  if (job->hang_id == 0) return;
  const uint64_t id = job->hang_id;
  absl::MutexLock gate(&mu_);
  auto it = std::find_if(hangs_.begin(), hangs_.end(),
                         [id](const auto& h) { return h.first == id; });
  if (it != hangs_.end()) {
    LOG_WARN("{} returned after {}; calls about it go through again",
             it->second.hang.Message(),
             absl::FormatDuration(absl::Trunc(
                 absl::Now() - it->second.hang.since, absl::Milliseconds(1))));
    hangs_.erase(it);
    hang_count_.fetch_sub(1, std::memory_order_release);
  }
  job->hang_id = 0;
}

absl::Status NvmlCallGate::MarkHung(NvmlJob& job) {
  Record r;
  r.hang.function = job.function;
  r.hang.since = job.start;
  r.hang.deadline = deadline_;
  r.hang.per_gpu = job.devices[0] != nullptr || job.devices[1] != nullptr;
  r.devices[0] = job.devices[0];
  r.devices[1] = job.devices[1];
  const bool r_per_gpu = r.hang.per_gpu;
  job.abandoned = true;
  std::string message;
  {
    absl::MutexLock lock(&mu_);
    for (nvmlDevice_t d : r.devices) {
      auto name = d == nullptr ? names_.end() : names_.find(d);
      if (name == names_.end()) continue;
      if (!r.hang.subject.empty()) absl::StrAppend(&r.hang.subject, ", ");
      absl::StrAppend(&r.hang.subject, name->second);
    }
    message = r.hang.Message();
    job.hang_id = next_id_++;
    hangs_.emplace_back(job.hang_id, std::move(r));
    hang_count_.fetch_add(1, std::memory_order_release);
  }
  CountHang(job.function);
  LOG_ERROR("{}; {} until it does", message,
            job.devices[0] == nullptr && job.devices[1] == nullptr
                ? "every NVML call fails at once"
                : "calls about this GPU fail at once");
  return NvmlHangStatus(message, r_per_gpu);
}

void NvmlCallGate::WorkerStarted() {
  absl::MutexLock lock(&mu_);
  ++workers_;
}

void NvmlCallGate::WorkerEnded() {
  absl::MutexLock lock(&mu_);
  --workers_;
}

bool NvmlCallGate::WaitForWorkers(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto none = [this]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return workers_ == 0; };
  return mu_.AwaitWithTimeout(absl::Condition(&none), timeout);
}

std::vector<NvmlHang> NvmlCallGate::Hangs() const {
  std::vector<NvmlHang> out;
  if (hang_count_.load(std::memory_order_acquire) == 0) return out;
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [id, r] : hangs_) out.push_back(r.hang);
  return out;
}

}  // namespace gdp
