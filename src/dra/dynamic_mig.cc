#include "dra/dynamic_mig.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gdp::dra {
namespace {

void Step(const std::function<void(MigStep)>& on_step, MigStep step) {
  if (on_step) on_step(step);
}

// Whether a make call was given up rather than answered (NvmlRunner: a
// hung call past its deadline, or a cancel at shutdown): NVML may still
// make the instance.
bool GivenUp(const absl::Status& s) {
  return absl::IsDeadlineExceeded(s) || absl::IsCancelled(s);
}

absl::Status Prefixed(const absl::Status& s, absl::string_view what) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

// The GPU instance of `list` that is `p` (same profile at the same start).
const MigGpuInstance* Find(const std::vector<MigGpuInstance>& list,
                           const MigPlacement& p) {
  for (const MigGpuInstance& gi : list) {
    if (gi.profile_id == p.profile_id && gi.start == p.start) return &gi;
  }
  return nullptr;
}

}  // namespace

std::string Describe(const MigPlacement& p) {
  return absl::StrCat("GPU ", p.gpu_uuid, " placement ", p.profile,
                      " (profile ID ", p.profile_id, ") at memory slices ",
                      p.start, "-", p.start + p.size - 1);
}

bool Overlaps(const MigPlacement& a, const MigPlacement& b) {
  return a.gpu_uuid == b.gpu_uuid && a.start < b.start + b.size &&
         b.start < a.start + a.size;
}

const char* MigStepName(MigStep step) {
  switch (step) {
    case MigStep::kIntentRecorded:
      return "intent-recorded";
    case MigStep::kGpuInstanceMade:
      return "gi-made";
    case MigStep::kComputeInstanceMade:
      return "ci-made";
    case MigStep::kSpecWritten:
      return "spec-written";
    case MigStep::kPreparedRecorded:
      return "prepared-recorded";
    case MigStep::kUnprepareRecorded:
      return "unprepare-recorded";
    case MigStep::kComputeInstanceDestroyed:
      return "ci-destroyed";
    case MigStep::kGpuInstanceDestroyed:
      return "gi-destroyed";
  }
  return "unknown";
}

absl::Status MakeMig(MigMaker& maker, MigRecord& record,
                     const std::function<void(MigStep)>& on_step,
                     bool* may_remain) {
  const MigPlacement& p = record.placement;
  auto remains = [may_remain] {
    if (may_remain != nullptr) *may_remain = true;
  };
  absl::StatusOr<std::vector<MigGpuInstance>> list = maker.List(p.gpu_uuid);
  if (absl::IsUnimplemented(list.status())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "GPU ", p.gpu_uuid, " is not in MIG mode (", list.status().message(),
        "); this driver makes MIG instances on GPUs in MIG mode and never "
        "changes the mode: enable it (nvidia-smi -i <GPU> -mig 1) while the "
        "GPU is idle"));
  }
  if (!list.ok()) {
    return Prefixed(
        list.status(),
        absl::StrCat("listing the MIG instances of GPU ", p.gpu_uuid));
  }
  for (const MigGpuInstance& gi : *list) {
    MigPlacement other = p;
    other.start = gi.start;
    other.size = gi.size;
    if (Overlaps(p, other)) {
      return absl::FailedPreconditionError(absl::StrCat(
          Describe(p), " is occupied by GPU instance ", gi.gi_id,
          " (profile ID ", gi.profile_id, ", memory slices ", gi.start, "-",
          gi.start + gi.size - 1,
          "), which this driver did not make for "
          "this claim; nothing was destroyed (remove that instance, or keep "
          "this GPU out of dynamic MIG)"));
    }
  }
  absl::StatusOr<unsigned> gi = maker.CreateGpuInstance(p);
  if (!gi.ok()) {
    if (GivenUp(gi.status())) remains();
    return Prefixed(gi.status(),
                    absl::StrCat("creating the GPU instance of ", Describe(p)));
  }
  Step(on_step, MigStep::kGpuInstanceMade);
  auto undo_gi = [&](const absl::Status& why) {
    if (absl::Status s = maker.DestroyGpuInstance(p.gpu_uuid, *gi);
        !s.ok() && !absl::IsNotFound(s)) {
      remains();
    }
    return why;
  };
  absl::StatusOr<unsigned> ci = maker.CreateComputeInstance(p, *gi);
  if (!ci.ok()) {
    return undo_gi(Prefixed(
        ci.status(), absl::StrCat("creating the compute instance of ",
                                  Describe(p), " in GPU instance ", *gi)));
  }
  Step(on_step, MigStep::kComputeInstanceMade);
  absl::StatusOr<std::string> uuid = maker.MigUuid(p.gpu_uuid, *gi, *ci);
  if (!uuid.ok()) {
    if (absl::Status s = maker.DestroyComputeInstance(p.gpu_uuid, *gi, *ci);
        !s.ok() && !absl::IsNotFound(s)) {
      remains();
    }
    return undo_gi(Prefixed(
        uuid.status(),
        absl::StrCat("reading the MIG device of ", Describe(p),
                     " (GPU instance ", *gi, ", compute instance ", *ci, ")")));
  }
  record.gi_id = *gi;
  record.ci_id = *ci;
  record.uuid = *std::move(uuid);
  return absl::OkStatus();
}

absl::Status DestroyMig(MigMaker& maker, const MigRecord& record,
                        const std::function<void(MigStep)>& on_step) {
  const MigPlacement& p = record.placement;
  absl::StatusOr<std::vector<MigGpuInstance>> list = maker.List(p.gpu_uuid);
  if (absl::IsUnimplemented(list.status())) {
    return absl::OkStatus();  // MIG mode off: every instance is gone
  }
  if (!list.ok()) {
    return Prefixed(
        list.status(),
        absl::StrCat("listing the MIG instances of GPU ", p.gpu_uuid));
  }
  const MigGpuInstance* gi = Find(*list, p);
  if (gi == nullptr) return absl::OkStatus();
  for (unsigned ci : gi->ci_ids) {
    absl::Status s = maker.DestroyComputeInstance(p.gpu_uuid, gi->gi_id, ci);
    if (!s.ok() && !absl::IsNotFound(s)) {
      return Prefixed(
          s, absl::StrCat("destroying compute instance ", ci,
                          " of GPU instance ", gi->gi_id, " of ", Describe(p)));
    }
    Step(on_step, MigStep::kComputeInstanceDestroyed);
  }
  absl::Status s = maker.DestroyGpuInstance(p.gpu_uuid, gi->gi_id);
  if (!s.ok() && !absl::IsNotFound(s)) {
    return Prefixed(s, absl::StrCat("destroying GPU instance ", gi->gi_id,
                                    " of ", Describe(p)));
  }
  Step(on_step, MigStep::kGpuInstanceDestroyed);
  return absl::OkStatus();
}

}  // namespace gdp::dra
