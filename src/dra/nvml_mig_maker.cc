#include "dra/nvml_mig_maker.h"

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace gdp::dra {
namespace {

class NvmlMigMaker final : public MigMaker {
 public:
  NvmlMigMaker(const Nvml& nvml, NvmlRunner& runner)
      : nvml_(nvml), runner_(runner) {}

  absl::StatusOr<std::vector<MigGpuInstance>> List(
      const std::string& gpu_uuid) override {
    return Run<std::vector<MigGpuInstance>>(
        gpu_uuid,
        [](const Nvml& nvml,
           nvmlDevice_t gpu) -> absl::StatusOr<std::vector<MigGpuInstance>> {
          absl::StatusOr<std::vector<Nvml::GpuInstanceState>> list =
              nvml.GpuInstances(gpu);
          if (!list.ok()) return list.status();
          std::vector<MigGpuInstance> out;
          for (const Nvml::GpuInstanceState& g : *list) {
            out.push_back({g.gi_id, g.profile_id, g.placement.start,
                           g.placement.size, g.ci_ids});
          }
          return out;
        });
  }

  absl::StatusOr<unsigned> CreateGpuInstance(const MigPlacement& p) override {
    return Run<unsigned>(p.gpu_uuid, [p](const Nvml& nvml, nvmlDevice_t gpu) {
      nvmlGpuInstancePlacement_t placement{};
      placement.start = p.start;
      placement.size = p.size;
      return nvml.CreateGpuInstance(gpu, p.profile_id, placement);
    });
  }

  absl::StatusOr<unsigned> CreateComputeInstance(const MigPlacement& p,
                                                 unsigned gi_id) override {
    return Run<unsigned>(
        p.gpu_uuid, [p, gi_id](const Nvml& nvml, nvmlDevice_t gpu) {
          return nvml.CreateComputeInstance(gpu, gi_id, p.ci_profile_id);
        });
  }

  absl::StatusOr<std::string> MigUuid(const std::string& gpu_uuid,
                                      unsigned gi_id, unsigned ci_id) override {
    return Run<std::string>(
        gpu_uuid,
        [gpu_uuid, gi_id, ci_id](
            const Nvml& nvml, nvmlDevice_t gpu) -> absl::StatusOr<std::string> {
          absl::StatusOr<unsigned> count = nvml.MaxMigDeviceCount(gpu);
          if (!count.ok()) return count.status();
          for (unsigned i = 0; i < *count; ++i) {
            absl::StatusOr<nvmlDevice_t> mig = nvml.MigDeviceByIndex(gpu, i);
            if (absl::IsNotFound(mig.status())) continue;
            if (!mig.ok()) return mig.status();
            absl::StatusOr<unsigned> gi = nvml.GpuInstanceId(*mig);
            if (!gi.ok()) return gi.status();
            if (*gi != gi_id) continue;
            absl::StatusOr<unsigned> ci = nvml.ComputeInstanceId(*mig);
            if (!ci.ok()) return ci.status();
            if (*ci == ci_id) return nvml.Uuid(*mig);
          }
          return absl::NotFoundError(
              absl::StrCat("GPU ", gpu_uuid,
                           " has no MIG device of GPU "
                           "instance ",
                           gi_id, " and compute instance ", ci_id));
        });
  }

  absl::Status DestroyComputeInstance(const std::string& gpu_uuid,
                                      unsigned gi_id, unsigned ci_id) override {
    return Done(Run<bool>(
        gpu_uuid,
        [gi_id, ci_id](const Nvml& nvml,
                       nvmlDevice_t gpu) -> absl::StatusOr<bool> {
          absl::Status s = nvml.DestroyComputeInstance(gpu, gi_id, ci_id);
          if (!s.ok()) return s;
          return true;
        }));
  }

  absl::Status DestroyGpuInstance(const std::string& gpu_uuid,
                                  unsigned gi_id) override {
    return Done(Run<bool>(
        gpu_uuid,
        [gi_id](const Nvml& nvml, nvmlDevice_t gpu) -> absl::StatusOr<bool> {
          absl::Status s = nvml.DestroyGpuInstance(gpu, gi_id);
          if (!s.ok()) return s;
          return true;
        }));
  }

 private:
  static absl::Status Done(const absl::StatusOr<bool>& r) { return r.status(); }

  // `fn(nvml, handle of gpu_uuid)` in a runner job: its result, or the
  // runner's error (a hang, a cancel). The job captures only values and
  // `nvml`, which outlives it.
  template <typename T>
  absl::StatusOr<T> Run(
      const std::string& gpu_uuid,
      std::function<absl::StatusOr<T>(const Nvml&, nvmlDevice_t)> fn) {
    std::optional<nvmlDevice_t> known;
    {
      absl::MutexLock lock(&mu_);
      if (auto it = handles_.find(gpu_uuid); it != handles_.end()) {
        known = it->second;
      }
    }
    const Nvml* nvml = &nvml_;
    absl::StatusOr<std::pair<absl::StatusOr<T>, nvmlDevice_t>> out =
        runner_.Call<std::pair<absl::StatusOr<T>, nvmlDevice_t>>(
            [nvml, gpu_uuid, known, fn = std::move(fn)]()
                -> std::pair<absl::StatusOr<T>, nvmlDevice_t> {
              nvmlDevice_t gpu = nullptr;
              if (known.has_value()) {
                gpu = *known;
              } else {
                absl::StatusOr<nvmlDevice_t> h = nvml->DeviceByUuid(gpu_uuid);
                if (!h.ok()) return {h.status(), nullptr};
                gpu = *h;
              }
              return {fn(*nvml, gpu), gpu};
            });
    if (!out.ok()) return out.status();
    if (out->second != nullptr && !known.has_value()) {
      absl::MutexLock lock(&mu_);
      handles_[gpu_uuid] = out->second;
    }
    return std::move(out->first);
  }

  const Nvml& nvml_;
  NvmlRunner& runner_;
  absl::Mutex mu_;
  std::map<std::string, nvmlDevice_t> handles_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<MigMaker> MakeNvmlMigMaker(const Nvml& nvml,
                                           NvmlRunner& runner) {
  return std::make_unique<NvmlMigMaker>(nvml, runner);
}

}  // namespace gdp::dra
