#include "fake_nvml/session.h"

#include <atomic>
#include <cstdint>
#include <utility>

#include "fake_nvml/report.h"

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
// one slot per GPU instance ID and compute instance ID: slot gi * 8 + ci
// (GPU instance handles use ci 0).
constexpr unsigned kSlots = kMaxGpuInstanceIds * kMaxComputeInstanceIds;
using InstanceTable = char[kGenerations][kMaxGpus][kSlots];
InstanceTable mig_table;
InstanceTable gpu_instance_table;
InstanceTable compute_instance_table;

void* InstanceAddress(InstanceTable& table, unsigned generation, unsigned gpu,
                      unsigned slot) {
  return &table[generation][gpu][slot];
}

// The GPU and slot of `address` in row `generation` of `table`, if it is
// one of the first `gpus` GPUs' slots.
std::optional<std::pair<unsigned, unsigned>> InstanceSlot(InstanceTable& table,
                                                          unsigned generation,
                                                          unsigned gpus,
                                                          const void* address) {
  const auto base = reinterpret_cast<uintptr_t>(&table[generation][0][0]);
  const auto at = reinterpret_cast<uintptr_t>(address);
  if (at < base || at - base >= uintptr_t{gpus} * kSlots) {
    return std::nullopt;
  }
  const auto offset = static_cast<unsigned>(at - base);
  return std::pair{offset / kSlots, offset % kSlots};
}

unsigned MigSlot(const Gpu& gpu, unsigned mig) {
  const MigDevice& m = gpu.mig_devices[mig];
  const GpuInstance& gi = gpu.gpu_instances[m.gpu_instance];
  return gi.id * kMaxComputeInstanceIds +
         gi.compute_instances[m.compute_instance].id;
}

// The position in gpu.mig_devices of the MIG device in `slot`.
std::optional<unsigned> MigAt(const Gpu& gpu, unsigned slot) {
  for (unsigned m = 0; m < gpu.mig_devices.size(); ++m) {
    if (MigSlot(gpu, m) == slot) return m;
  }
  return std::nullopt;
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
  return static_cast<nvmlDevice_t>(InstanceAddress(
      mig_table, generation_, gpu, MigSlot(machine_.gpus[gpu], mig)));
}

std::optional<Session::InstanceRef> Session::MigOf(nvmlDevice_t handle) const {
  const auto slot = InstanceSlot(mig_table, generation_, gpu_count(), handle);
  if (!slot.has_value()) return std::nullopt;
  const std::optional<unsigned> mig =
      MigAt(machine_.gpus[slot->first], slot->second);
  if (!mig.has_value()) return std::nullopt;
  return InstanceRef{slot->first, *mig};
}

nvmlGpuInstance_t Session::GpuInstanceHandle(unsigned gpu, unsigned pos) const {
  const unsigned id = machine_.gpus[gpu].gpu_instances[pos].id;
  return static_cast<nvmlGpuInstance_t>(InstanceAddress(
      gpu_instance_table, generation_, gpu, id * kMaxComputeInstanceIds));
}

std::optional<Session::InstanceRef> Session::GpuInstanceOf(
    nvmlGpuInstance_t handle) const {
  const auto slot =
      InstanceSlot(gpu_instance_table, generation_, gpu_count(), handle);
  if (!slot.has_value() || slot->second % kMaxComputeInstanceIds != 0) {
    return std::nullopt;
  }
  const std::vector<GpuInstance>& gis =
      machine_.gpus[slot->first].gpu_instances;
  for (unsigned g = 0; g < gis.size(); ++g) {
    if (gis[g].id * kMaxComputeInstanceIds == slot->second) {
      return InstanceRef{slot->first, g};
    }
  }
  return std::nullopt;
}

nvmlComputeInstance_t Session::ComputeInstanceHandle(unsigned gpu,
                                                     unsigned mig) const {
  return static_cast<nvmlComputeInstance_t>(
      InstanceAddress(compute_instance_table, generation_, gpu,
                      MigSlot(machine_.gpus[gpu], mig)));
}

std::optional<Session::InstanceRef> Session::ComputeInstanceOf(
    nvmlComputeInstance_t handle) const {
  const auto slot =
      InstanceSlot(compute_instance_table, generation_, gpu_count(), handle);
  if (!slot.has_value()) return std::nullopt;
  const std::optional<unsigned> mig =
      MigAt(machine_.gpus[slot->first], slot->second);
  if (!mig.has_value()) return std::nullopt;
  return InstanceRef{slot->first, *mig};
}

void Session::SyncMig() {
  if (!mig_state_path_.has_value()) return;
  const MigStateStamp stamp = StampMigState(*mig_state_path_);
  if (stamp == mig_state_stamp_) return;
  mig_state_stamp_ = stamp;
  if (absl::Status s = ReadMigState(*mig_state_path_, &machine_); !s.ok()) {
    Report(s.message());
  }
}

nvmlReturn_t Session::UpdateMig(absl::FunctionRef<nvmlReturn_t(Machine&)> op) {
  if (!mig_state_path_.has_value()) return op(machine_);
  absl::StatusOr<nvmlReturn_t> r =
      UpdateMigState(*mig_state_path_, &machine_, op);
  if (!r.ok()) {
    Report(r.status().message());
    return NVML_ERROR_UNKNOWN;
  }
  // Read again at the next call: another writer may have come between.
  mig_state_stamp_ = MigStateStamp{};
  return *r;
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
