#include "fake_nvml/event_set.h"

namespace gdp::fake_nvml {

void EventSet::Register(unsigned gpu, unsigned long long types) {
  recorded_[gpu] |= types;
}

void EventSet::Offer(unsigned gpu, const nvmlEventData_t& event) {
  const auto it = recorded_.find(gpu);
  if (closed_ || it == recorded_.end() || (it->second & event.eventType) == 0) {
    return;
  }
  queue_.push_back(event);
  changed_.SignalAll();
}

std::vector<unsigned> EventSet::RecordedGpus() const {
  std::vector<unsigned> gpus;
  gpus.reserve(recorded_.size());
  for (const auto& [gpu, types] : recorded_) gpus.push_back(gpu);
  return gpus;
}

std::optional<nvmlEventData_t> EventSet::Pop() {
  if (queue_.empty()) return std::nullopt;
  nvmlEventData_t event = queue_.front();
  queue_.pop_front();
  return event;
}

void EventSet::Close() {
  closed_ = true;
  queue_.clear();
  changed_.SignalAll();
}

void EventSet::Wake() { changed_.SignalAll(); }

void EventSet::WaitUntil(absl::Time deadline) {
  changed_.WaitWithDeadline(&state_mutex, deadline);
}

}  // namespace gdp::fake_nvml
