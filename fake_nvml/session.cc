#include "fake_nvml/session.h"

#include <atomic>
#include <cstdint>
#include <utility>

namespace gdp::fake_nvml {
namespace {

// Device handles are addresses inside this table, row = generation modulo
// kGenerations, column = GPU index. Nothing is ever stored there: the table
// only provides addresses the library owns, distinct for each GPU and for
// each of the last kGenerations sessions, that can be validated by
// arithmetic alone.
constexpr unsigned kGenerations = 1024;
char handle_table[kGenerations][kMaxGpus];
// The same for MIG device, GPU instance and compute instance handles, with
// kMaxMigDevices slots per GPU.
using InstanceTable = char[kGenerations][kMaxGpus][kMaxMigDevices];
InstanceTable mig_table;
InstanceTable gpu_instance_table;
InstanceTable compute_instance_table;

void* InstanceAddress(InstanceTable& table, unsigned generation, unsigned gpu,
                      unsigned pos) {
  return &table[generation][gpu][pos];
}

// The slot of `address` in row `generation` of `table`, if it is one of
// the first `gpus` GPUs' slots.
std::optional<Session::InstanceRef> InstanceSlot(InstanceTable& table,
                                                 unsigned generation,
                                                 unsigned gpus,
                                                 const void* address) {
  const auto base = reinterpret_cast<uintptr_t>(&table[generation][0][0]);
  const auto at = reinterpret_cast<uintptr_t>(address);
  if (at < base || at - base >= uintptr_t{gpus} * kMaxMigDevices) {
    return std::nullopt;
  }
  const auto offset = static_cast<unsigned>(at - base);
  return Session::InstanceRef{offset / kMaxMigDevices, offset % kMaxMigDevices};
}

std::atomic<unsigned> next_generation{0};

}  // namespace

Session::Session(Machine machine)
    : machine_(std::move(machine)),
      generation_(next_generation.fetch_add(1) % kGenerations),
      lost_(machine_.gpus.size(), false),
      hung_(machine_.gpus.size(), false) {
  for (const Gpu& gpu : machine_.gpus) {
    Signals s;
    s.remapped_rows = gpu.remapped_rows;
    s.retired_pages_pending = gpu.retired_pages_pending;
    s.pcie = gpu.pcie;
    s.throttle_reasons = gpu.throttle_reasons;
    for (const NvLink& link : gpu.nvlinks)
      s.nvlink_active.push_back(link.active);
    signals_.push_back(std::move(s));
  }
}

Session::~Session() {
  for (auto& [handle, set] : event_sets_) set->Close();
}

nvmlDevice_t Session::Handle(unsigned index) const {
  return reinterpret_cast<nvmlDevice_t>(&handle_table[generation_][index]);
}

std::optional<unsigned> Session::IndexOf(nvmlDevice_t handle) const {
  const auto base = reinterpret_cast<uintptr_t>(&handle_table[generation_][0]);
  const auto address = reinterpret_cast<uintptr_t>(handle);
  if (address < base || address - base >= gpu_count()) return std::nullopt;
  return static_cast<unsigned>(address - base);
}

std::optional<unsigned> Session::GpuOf(nvmlDevice_t handle) const {
  if (std::optional<unsigned> gpu = IndexOf(handle)) return gpu;
  if (std::optional<InstanceRef> mig = MigOf(handle)) return mig->gpu;
  return std::nullopt;
}

nvmlDevice_t Session::MigHandle(unsigned gpu, unsigned mig) const {
  return static_cast<nvmlDevice_t>(
      InstanceAddress(mig_table, generation_, gpu, mig));
}

std::optional<Session::InstanceRef> Session::MigOf(nvmlDevice_t handle) const {
  std::optional<InstanceRef> ref =
      InstanceSlot(mig_table, generation_, gpu_count(), handle);
  if (!ref.has_value() ||
      ref->pos >= machine_.gpus[ref->gpu].mig_devices.size()) {
    return std::nullopt;
  }
  return ref;
}

nvmlGpuInstance_t Session::GpuInstanceHandle(unsigned gpu, unsigned pos) const {
  return static_cast<nvmlGpuInstance_t>(
      InstanceAddress(gpu_instance_table, generation_, gpu, pos));
}

std::optional<Session::InstanceRef> Session::GpuInstanceOf(
    nvmlGpuInstance_t handle) const {
  std::optional<InstanceRef> ref =
      InstanceSlot(gpu_instance_table, generation_, gpu_count(), handle);
  if (!ref.has_value() ||
      ref->pos >= machine_.gpus[ref->gpu].gpu_instances.size()) {
    return std::nullopt;
  }
  return ref;
}

nvmlComputeInstance_t Session::ComputeInstanceHandle(unsigned gpu,
                                                     unsigned mig) const {
  return static_cast<nvmlComputeInstance_t>(
      InstanceAddress(compute_instance_table, generation_, gpu, mig));
}

std::optional<Session::InstanceRef> Session::ComputeInstanceOf(
    nvmlComputeInstance_t handle) const {
  std::optional<InstanceRef> ref =
      InstanceSlot(compute_instance_table, generation_, gpu_count(), handle);
  if (!ref.has_value() ||
      ref->pos >= machine_.gpus[ref->gpu].mig_devices.size()) {
    return std::nullopt;
  }
  return ref;
}

void Session::set_failure(std::optional<nvmlReturn_t> code) {
  failure_ = code;
  for (auto& [handle, set] : event_sets_) set->Wake();
}

std::optional<nvmlReturn_t> Session::mig_failure(unsigned gpu,
                                                 unsigned mig) const {
  const auto it = mig_failures_.find(std::pair{gpu, mig});
  if (it == mig_failures_.end()) return std::nullopt;
  return it->second;
}

std::optional<nvmlReturn_t> Session::nvlink_failure(unsigned gpu) const {
  const auto it = nvlink_failures_.find(gpu);
  if (it == nvlink_failures_.end()) return std::nullopt;
  return it->second;
}

void Session::set_mig_failure(unsigned gpu, unsigned mig, nvmlReturn_t code) {
  mig_failures_[std::pair{gpu, mig}] = code;
}

void Session::clear_hangs() {
  hung_.assign(hung_.size(), false);
  hang_all_ = false;
}

nvmlEventSet_t Session::CreateEventSet() {
  auto set = std::make_shared<EventSet>();
  auto handle = reinterpret_cast<nvmlEventSet_t>(set.get());
  event_sets_.emplace(handle, std::move(set));
  return handle;
}

std::shared_ptr<EventSet> Session::FindEventSet(nvmlEventSet_t handle) const {
  const auto it = event_sets_.find(handle);
  return it == event_sets_.end() ? nullptr : it->second;
}

bool Session::FreeEventSet(nvmlEventSet_t handle) {
  const auto it = event_sets_.find(handle);
  if (it == event_sets_.end()) return false;
  it->second->Close();
  event_sets_.erase(it);
  return true;
}

void Session::WakeEventSets() {
  for (auto& [handle, set] : event_sets_) set->Wake();
}

void Session::Deliver(unsigned gpu, unsigned long long type,
                      unsigned long long data, unsigned gpu_instance,
                      unsigned compute_instance) {
  nvmlEventData_t event;
  event.device = Handle(gpu);
  event.eventType = type;
  event.eventData = data;
  event.gpuInstanceId = gpu_instance;
  event.computeInstanceId = compute_instance;
  for (auto& [handle, set] : event_sets_) set->Offer(gpu, event);
}

}  // namespace gdp::fake_nvml
