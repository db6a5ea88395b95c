#include "cmd/nvml_report.h"

#include <ostream>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "health/watched_gpu.h"

namespace gdp {
namespace {

using Json = nlohmann::json;

// The result of one read: its value (through `to_json`) or NVML's code.
template <typename F, typename ToJson>
Json Read(F&& read, ToJson&& to_json) {
  const absl::Time start = absl::Now();
  auto result = read();
  const int64_t us = absl::ToInt64Microseconds(absl::Now() - start);
  if (!result.ok()) {
    return Json{{"ok", false},
                {"code", static_cast<int>(NvmlCode(result.status()))},
                {"error", std::string(result.status().message())},
                {"us", us}};
  }
  return Json{{"ok", true}, {"value", to_json(*result)}, {"us", us}};
}

template <typename F>
Json Read(F&& read) {
  return Read(std::forward<F>(read), [](const auto& v) { return Json(v); });
}

Json StatusJson(const absl::Status& s, int64_t us) {
  if (s.ok()) return Json{{"ok", true}, {"us", us}};
  return Json{{"ok", false},
              {"code", static_cast<int>(NvmlCode(s))},
              {"error", std::string(s.message())},
              {"us", us}};
}

std::string PciText(const NvmlPci& p) {
  return absl::StrFormat("%08x:%02x:%02x.0", p.domain, p.bus, p.device);
}

// Registration of the health event types, all at once and then each alone,
// on a fresh event set that is freed on return.
Json Events(const Nvml& nvml, nvmlDevice_t gpu) {
  Json out;
  out["supported"] = Read([&] { return nvml.SupportedEventTypes(gpu); });
  absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<NvmlEventSet>> set = nvml.CreateEventSet();
  if (!set.ok()) {
    out["event_set"] = StatusJson(
        set.status(), absl::ToInt64Microseconds(absl::Now() - start));
    return out;
  }
  const std::pair<const char*, unsigned long long> types[] = {
      {"health_types", kHealthEventTypes},
      {"xid", nvmlEventTypeXidCriticalError},
      {"double_bit_ecc", nvmlEventTypeDoubleBitEccError},
      {"single_bit_ecc", nvmlEventTypeSingleBitEccError}};
  for (const auto& [name, mask] : types) {
    start = absl::Now();
    absl::Status s = (*set)->Register(gpu, mask);
    out["register"][name] =
        StatusJson(s, absl::ToInt64Microseconds(absl::Now() - start));
  }
  start = absl::Now();
  absl::StatusOr<NvmlEvent> e = (*set)->Wait(absl::ZeroDuration());
  out["wait_0ms"] =
      Json{{"code", static_cast<int>(NvmlCode(e.status()))},
           {"us", absl::ToInt64Microseconds(absl::Now() - start)}};
  return out;
}

Json Signals(const Nvml& nvml, nvmlDevice_t gpu) {
  Json out;
  out["remapped_rows"] = Read([&] { return nvml.RemappedRows(gpu); },
                              [](const NvmlRemappedRows& r) {
                                return Json{{"corrected", r.corrected},
                                            {"uncorrectable", r.uncorrectable},
                                            {"pending", r.pending},
                                            {"failure", r.failure}};
                              });
  out["retired_pages_pending"] =
      Read([&] { return nvml.RetiredPagesPending(gpu); });
  out["pcie_link"] = Read([&] { return nvml.PcieLink(gpu); },
                          [](const NvmlPcieLink& l) {
                            return Json{{"gen", l.gen},
                                        {"max_gen", l.max_gen},
                                        {"width", l.width},
                                        {"max_width", l.max_width}};
                          });
  out["throttle_reasons"] = Read([&] { return nvml.ThrottleReasons(gpu); });
  out["reset_markers"] =
      Read([&] { return nvml.ResetMarkers(gpu); },
           [](const NvmlResetMarkers& m) {
             auto opt = [](const auto& o) { return o ? Json(*o) : Json(); };
             return Json{{"recovery_action", opt(m.recovery_action)},
                         {"volatile_sbe", opt(m.volatile_sbe)},
                         {"volatile_dbe", opt(m.volatile_dbe)}};
           });
  // NVLinks: until NVML says the index is past the GPU's last link (or the
  // GPU has none); 32 at most, more than any GPU has.
  Json links = Json::array();
  for (unsigned link = 0; link < 32; ++link) {
    Json r = Read([&] { return nvml.NvLinkActive(gpu, link); });
    const bool stop = !r["ok"].get<bool>() &&
                      (r["code"] == NVML_ERROR_INVALID_ARGUMENT || link == 0);
    r["link"] = link;
    links.push_back(std::move(r));
    if (stop) break;
  }
  out["nvlink_active"] = std::move(links);
  return out;
}

Json Mig(const Nvml& nvml, nvmlDevice_t gpu) {
  Json out;
  out["enabled"] = Read([&] { return nvml.MigEnabled(gpu); });
  out["max_devices"] = Read([&] { return nvml.MaxMigDeviceCount(gpu); });
  Json profiles = Json::array();
  for (unsigned p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; ++p) {
    absl::StatusOr<nvmlGpuInstanceProfileInfo_t> info =
        nvml.GpuInstanceProfileInfo(gpu, p);
    Json row{{"profile", p}};
    if (!info.ok()) {
      row["code"] = static_cast<int>(NvmlCode(info.status()));
      profiles.push_back(std::move(row));
      continue;
    }
    row.update(Json{{"id", info->id},
                    {"slices", info->sliceCount},
                    {"instances", info->instanceCount},
                    {"memory_mib", info->memorySizeMB},
                    {"multiprocessors", info->multiprocessorCount},
                    {"copy_engines", info->copyEngineCount},
                    {"decoders", info->decoderCount},
                    {"encoders", info->encoderCount},
                    {"jpegs", info->jpegCount},
                    {"ofas", info->ofaCount},
                    {"p2p", info->isP2pSupported}});
    row["placements"] =
        Read([&] { return nvml.GpuInstancePossiblePlacements(gpu, info->id); },
             [](const std::vector<nvmlGpuInstancePlacement_t>& v) {
               Json a = Json::array();
               for (const nvmlGpuInstancePlacement_t& pl : v) {
                 a.push_back(Json::array({pl.start, pl.size}));
               }
               return a;
             });
    profiles.push_back(std::move(row));
  }
  out["profiles"] = std::move(profiles);
  return out;
}

}  // namespace

Json NvmlReport(const Nvml& nvml, const std::string& cgroup_dir) {
  Json out{{"library", nvml.library_path()},
           {"entry_points",
            {{"mig", nvml.HasMig()},
             {"mig_making", nvml.HasMigMaking()},
             {"memory_limits", nvml.HasMemoryLimits()}}}};
  out["driver_version"] = Read([&] { return nvml.DriverVersion(); });
  out["cuda_driver_version"] = Read([&] { return nvml.CudaDriverVersion(); });
  Json gpus = Json::array();
  absl::StatusOr<unsigned> count = nvml.DeviceCount();
  out["device_count"] = Read([&] { return count; });
  for (unsigned i = 0; count.ok() && i < *count; ++i) {
    Json g{{"index", i}};
    absl::StatusOr<nvmlDevice_t> dev = nvml.DeviceByIndex(i);
    if (!dev.ok()) {
      g["handle"] = StatusJson(dev.status(), 0);
      gpus.push_back(std::move(g));
      continue;
    }
    nvmlDevice_t d = *dev;
    g["name"] = Read([&] { return nvml.Name(d); });
    g["uuid"] = Read([&] { return nvml.Uuid(d); });
    g["minor"] = Read([&] { return nvml.MinorNumber(d); });
    g["pci_bus_id"] = Read([&] { return nvml.PciInfo(d); }, PciText);
    g["memory_bytes"] = Read([&] { return nvml.MemoryTotal(d); });
    g["brand"] = Read([&] { return nvml.Brand(d); },
                      [](nvmlBrandType_t b) { return static_cast<int>(b); });
    g["architecture"] =
        Read([&] { return nvml.Architecture(d); },
             [](nvmlDeviceArchitecture_t a) { return static_cast<int>(a); });
    g["compute_capability"] =
        Read([&] { return nvml.ComputeCapability(d); },
             [](const std::pair<int, int>& cc) {
               return absl::StrFormat("%d.%d", cc.first, cc.second);
             });
    g["signals"] = Signals(nvml, d);
    g["events"] = Events(nvml, d);
    g["mig"] = Mig(nvml, d);
    if (nvml.HasMemoryLimits() && !cgroup_dir.empty()) {
      g["memory_limits"] = Read(
          [&] { return nvml.GetMemoryLimits(d, cgroup_dir); },
          [](const NvmlMemoryLimits& l) {
            return Json{{"soft", l.soft}, {"hard", l.hard}, {"used", l.used}};
          });
    }
    gpus.push_back(std::move(g));
  }
  out["gpus"] = std::move(gpus);
  return out;
}

int RunNvmlReport(const std::string& driver_root, const std::string& cgroup_dir,
                  std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::unique_ptr<Nvml>> nvml = Nvml::Open(driver_root);
  if (!nvml.ok()) {
    err << "gpu-device-plugin: " << nvml.status().message() << "\n";
    return 1;
  }
  out << NvmlReport(**nvml, cgroup_dir).dump(1) << "\n";
  return 0;
}

}  // namespace gdp
