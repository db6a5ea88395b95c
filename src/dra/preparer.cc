#include "dra/preparer.h"

#include <cstdio>
#include <filesystem>
#include <set>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cdi/write_spec.h"
#include "device/proc_devices.h"
#include "dra/claim_edits.h"
#include "util/logging.h"
#include "util/quote.h"

namespace gdp::dra {
namespace {

// "claim <namespace>/<name> (<uid>)", each part cut: what the kubelet
// sent is checked at the gRPC edge, but a message never trusts it.
std::string Label(const ClaimRef& ref) {
  return absl::StrCat("claim ", CutText(Describe(ref), 320), " (",
                      CutText(ref.uid, 128), ")");
}

// A claim's error for the kubelet and the log: its label and `what`, cut to
// kMaxClaimErrorBytes (escaped where not UTF-8: the answer is protobuf).
std::string ClaimError(const ClaimRef& ref, absl::string_view what) {
  return CutText(absl::StrCat(Label(ref), ": ", what), kMaxClaimErrorBytes);
}

// Whether `claim` has dynamic MIG devices.
bool HasMig(const PreparedClaim& claim) {
  for (const PreparedDevice& d : claim.devices) {
    if (d.mig.has_value()) return true;
  }
  return false;
}

// "GPU instance 5, compute instance 0, MIG-..." of a made record.
std::string Made(const MigRecord& r) {
  return absl::StrCat("GPU instance ", r.gi_id.value_or(0),
                      ", compute instance ", r.ci_id.value_or(0),
                      r.uuid.empty() ? "" : ", ", r.uuid);
}

}  // namespace

Preparer::Preparer(PreparerOptions options, ClaimReader& reader, MigMaker* mig)
    : options_(std::move(options)), reader_(reader), mig_(mig) {
  checkpoint_.boot_id = options_.boot_id;
}

void Preparer::SetSources(const DeviceSet* devices,
                          std::shared_ptr<const ClaimSpecBase> base) {
  absl::MutexLock lock(&mu_);
  devices_ = devices;
  base_ = std::move(base);
}

size_t Preparer::prepared() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [uid, c] : checkpoint_.claims) {
    if (c.state == ClaimState::kPrepared) ++n;
  }
  return n;
}

void Preparer::Step(MigStep step) const {
  if (options_.on_mig_step) options_.on_mig_step(step);
}

absl::Status Preparer::Start() {
  absl::StatusOr<Checkpoint> read = ReadCheckpoint(options_.checkpoint_path);
  absl::MutexLock lock(&mu_);
  if (absl::IsNotFound(read.status())) return absl::OkStatus();
  if (!read.ok()) {
    const std::string aside = absl::StrCat(options_.checkpoint_path, ".bad-",
                                           absl::ToUnixSeconds(absl::Now()));
    std::error_code ec;
    std::filesystem::rename(options_.checkpoint_path, aside, ec);
    LOG_ERROR(
        "Cannot use the checkpoint of prepared claims: {}. It was moved to {} "
        "({}); starting with no prepared claims: claims prepared before "
        "are not known to this plugin (their pods keep running; unpreparing "
        "them succeeds)",
        read.status().message(), aside, ec ? ec.message() : "kept");
    return read.status();
  }
  const bool rebooted = read->boot_id != options_.boot_id;
  checkpoint_.claims = std::move(read->claims);
  checkpoint_.boot_id = options_.boot_id;
  // A boot ID that could not be read (either) proves no reboot: the
  // instances found are then taken as this boot's.
  const bool reconciled = ReconcileMigLocked(
      rebooted && !read->boot_id.empty() && !options_.boot_id.empty());
  std::vector<std::string> dropped;
  size_t prepared = 0;
  for (auto it = checkpoint_.claims.begin(); it != checkpoint_.claims.end();) {
    if (it->second.state != ClaimState::kPrepared) {
      ++it;  // kept by ReconcileMigLocked to destroy later: no spec
      continue;
    }
    if (absl::Status s = WriteSpec(it->second); !s.ok()) {
      LOG_ERROR(
          "{}: dropping it from the checkpoint: its CDI spec cannot be "
          "written again: {}",
          Label(it->second.ref), s.message());
      // Its MIG instances go with it (the kubelet prepares it again).
      for (const PreparedDevice& d : it->second.devices) {
        if (!d.mig.has_value() || mig_ == nullptr) continue;
        if (absl::Status e = DestroyMig(*mig_, *d.mig, nullptr); !e.ok()) {
          LOG_ERROR("{}: cannot destroy its MIG instance {}: {}",
                    Label(it->second.ref), Describe(d.mig->placement),
                    e.message());
        }
      }
      dropped.push_back(it->first);
      it = checkpoint_.claims.erase(it);
    } else {
      ++prepared;
      ++it;
    }
  }
  if (!checkpoint_.claims.empty() || !dropped.empty()) {
    LOG_INFO("{} prepared claim(s) from the checkpoint{}", prepared,
             rebooted ? "; the node rebooted since: their CDI specs were "
                        "written again"
                      : "");
  }
  if (rebooted || reconciled || !dropped.empty()) return SaveLocked();
  return absl::OkStatus();
}

bool Preparer::ReconcileMigLocked(bool rebooted) {
  std::set<std::string> gpus;  // the GPUs to look at
  if (base_ != nullptr) {
    for (const auto& [name, p] : base_->dynamic_mig) gpus.insert(p.gpu_uuid);
  }
  bool any = false;
  for (const auto& [uid, c] : checkpoint_.claims) {
    for (const PreparedDevice& d : c.devices) {
      if (!d.mig.has_value()) continue;
      any = true;
      gpus.insert(d.mig->placement.gpu_uuid);
    }
  }
  if (mig_ == nullptr) {
    if (any) {
      LOG_ERROR(
          "The checkpoint records dynamic MIG devices, and this plugin makes "
          "no MIG instances (no NVML): their instances are neither checked "
          "nor destroyed");
    }
    return false;
  }
  bool changed = false;
  std::vector<std::string> drop;
  // The records whose instances were made here: after a reboot the only
  // instances of ours.
  std::set<const MigRecord*> made_now;
  for (auto& [uid, c] : checkpoint_.claims) {
    if (!HasMig(c)) continue;
    if (c.state != ClaimState::kPrepared && rebooted) {
      // A reboot destroyed every instance it had made: one at its
      // placement now was made by someone else since.
      for (const PreparedDevice& d : c.devices) {
        if (!d.mig.has_value()) continue;
        LOG_INFO(
            "MIG instance {} of {}: its {} was cut short before the node "
            "rebooted, which destroyed its instances; nothing destroyed",
            Describe(d.mig->placement), Label(c.ref),
            c.state == ClaimState::kPreparing ? "prepare" : "unprepare");
      }
      drop.push_back(uid);
      continue;
    }
    if (c.state != ClaimState::kPrepared) {
      // Cut short by a crash: the kubelet never had its answer (or asks
      // again), so no container uses them.
      const char* what = c.state == ClaimState::kPreparing
                             ? "its prepare was cut short"
                             : "its unprepare was cut short";
      bool ok = true;
      for (const PreparedDevice& d : c.devices) {
        if (!d.mig.has_value()) continue;
        bool found = false;
        absl::StatusOr<std::vector<MigGpuInstance>> list =
            mig_->List(d.mig->placement.gpu_uuid);
        if (list.ok()) {
          for (const MigGpuInstance& gi : *list) {
            found |= gi.profile_id == d.mig->placement.profile_id &&
                     gi.start == d.mig->placement.start;
          }
        }
        if (absl::Status s = DestroyMig(*mig_, *d.mig, nullptr); !s.ok()) {
          LOG_ERROR(
              "MIG instance {} of {}: {}; cannot destroy it: {}. The claim "
              "stays recorded; destroying it is tried again at the next "
              "start, prepare or unprepare of the claim",
              Describe(d.mig->placement), Label(c.ref), what, s.message());
          ok = false;
        } else if (found) {
          LOG_INFO("MIG instance {} of {}: removed ({})",
                   Describe(d.mig->placement), Label(c.ref), what);
        }
      }
      if (ok) {
        drop.push_back(uid);
        (void)cdi::RemoveSpec(options_.cdi_dir,
                              ClaimSpecFileName(options_.driver_name, uid));
      }
      continue;
    }
    for (PreparedDevice& d : c.devices) {
      if (!d.mig.has_value()) continue;
      MigRecord& r = *d.mig;
      absl::StatusOr<std::vector<MigGpuInstance>> list =
          mig_->List(r.placement.gpu_uuid);
      const MigGpuInstance* gi = nullptr;
      if (list.ok()) {
        for (const MigGpuInstance& g : *list) {
          // After a reboot none is ours: whoever made it is not this driver.
          if (g.profile_id == r.placement.profile_id &&
              g.start == r.placement.start && !rebooted) {
            gi = &g;
          }
        }
      } else if (!absl::IsUnimplemented(list.status())) {
        LOG_ERROR(
            "MIG instance {} of {}: cannot list the GPU's instances: {}; "
            "kept as recorded",
            Describe(r.placement), Label(c.ref), list.status().message());
        continue;
      }
      absl::Status s = absl::OkStatus();
      const MigRecord before = r;
      if (gi != nullptr && !gi->ci_ids.empty()) {
        const unsigned ci =
            r.ci_id.has_value() &&
                    std::find(gi->ci_ids.begin(), gi->ci_ids.end(), *r.ci_id) !=
                        gi->ci_ids.end()
                ? *r.ci_id
                : gi->ci_ids.front();
        absl::StatusOr<std::string> uuid =
            mig_->MigUuid(r.placement.gpu_uuid, gi->gi_id, ci);
        if (uuid.ok()) {
          r.gi_id = gi->gi_id;
          r.ci_id = ci;
          r.uuid = *uuid;
          LOG_INFO("MIG instance {} of {}: adopted ({}{})",
                   Describe(r.placement), Label(c.ref), Made(r),
                   r == before ? "" : "; its IDs changed since recorded");
        } else {
          s = uuid.status();
        }
      } else if (gi != nullptr) {
        absl::StatusOr<unsigned> ci =
            mig_->CreateComputeInstance(r.placement, gi->gi_id);
        absl::StatusOr<std::string> uuid =
            ci.ok() ? mig_->MigUuid(r.placement.gpu_uuid, gi->gi_id, *ci)
                    : absl::StatusOr<std::string>(ci.status());
        if (uuid.ok()) {
          r.gi_id = gi->gi_id;
          r.ci_id = *ci;
          r.uuid = *uuid;
          LOG_INFO(
              "MIG instance {} of {}: adopted, its compute instance made "
              "again ({})",
              Describe(r.placement), Label(c.ref), Made(r));
        } else {
          s = uuid.status();
        }
      } else {
        s = MakeMig(*mig_, r, nullptr);
        if (s.ok()) {
          made_now.insert(&r);
          LOG_INFO(
              "MIG instance {} of {}: made again, it was gone (a reboot or a "
              "MIG reset) ({})",
              Describe(r.placement), Label(c.ref), Made(r));
        }
      }
      if (!s.ok()) {
        LOG_ERROR(
            "MIG instance {} of {}: cannot adopt or make it again: {}; "
            "dropping the claim (the kubelet prepares it again)",
            Describe(r.placement), Label(c.ref), s.message());
        drop.push_back(uid);
        break;
      }
      changed |= r != before;
    }
  }
  for (const std::string& uid : drop) {
    auto it = checkpoint_.claims.find(uid);
    if (it->second.state == ClaimState::kPrepared) {
      // Its instances that are there are its own (after a reboot, those
      // made again here): destroy them with it.
      for (const PreparedDevice& d : it->second.devices) {
        if (d.mig.has_value() && (!rebooted || made_now.contains(&*d.mig))) {
          (void)DestroyMig(*mig_, *d.mig, nullptr);
        }
      }
      (void)cdi::RemoveSpec(options_.cdi_dir,
                            ClaimSpecFileName(options_.driver_name, uid));
    }
    checkpoint_.claims.erase(it);
    changed = true;
  }
  // What no claim recorded: not ours, left alone.
  for (const std::string& gpu : gpus) {
    absl::StatusOr<std::vector<MigGpuInstance>> list = mig_->List(gpu);
    if (!list.ok()) continue;
    for (const MigGpuInstance& gi : *list) {
      bool recorded = false;
      for (const auto& [uid, c] : checkpoint_.claims) {
        for (const PreparedDevice& d : c.devices) {
          recorded |= d.mig.has_value() && d.mig->placement.gpu_uuid == gpu &&
                      d.mig->placement.profile_id == gi.profile_id &&
                      d.mig->placement.start == gi.start;
        }
      }
      if (!recorded) {
        LOG_WARN(
            "MIG instance on GPU {}: GPU instance {} (profile ID {}, memory "
            "slices {}-{}) is in no prepared claim of this driver: not made by "
            "it, left alone (a dynamic MIG device overlapping it fails its "
            "claim)",
            gpu, gi.gi_id, gi.profile_id, gi.start, gi.start + gi.size - 1);
      }
    }
  }
  return changed;
}

absl::StatusOr<std::vector<cdi::CdiDevice::CharNode>>
Preparer::MigCapNodesLocked(const MigRecord& r) {
  if (!r.gi_id.has_value() || !r.ci_id.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat(Describe(r.placement), " is not made yet"));
  }
  if (!caps_major_.has_value()) {
    absl::StatusOr<unsigned> major =
        ReadCharDeviceMajor(options_.proc_root, "nvidia-caps");
    if (!major.ok()) return major.status();
    caps_major_ = *major;
  }
  const unsigned minor = r.placement.gpu_minor;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!caps_.has_value() || attempt == 1) {
      absl::StatusOr<MigCaps> read = MigCaps::Read(options_.proc_root);
      if (!read.ok()) return read.status();
      caps_ = *std::move(read);
    }
    absl::StatusOr<unsigned> gi = caps_->GpuInstanceMinor(minor, *r.gi_id);
    absl::StatusOr<unsigned> ci =
        caps_->ComputeInstanceMinor(minor, *r.gi_id, *r.ci_id);
    if (gi.ok() && ci.ok()) {
      return std::vector<cdi::CdiDevice::CharNode>{
          {MigCaps::DevicePath(*gi), *caps_major_, *gi},
          {MigCaps::DevicePath(*ci), *caps_major_, *ci}};
    }
    if (attempt == 1) return gi.ok() ? ci.status() : gi.status();
  }
  return absl::InternalError("unreachable");
}

std::string Preparer::WholeAndShared(const PreparedClaim& claim) const {
  // Every device of `claim` and of the prepared claims: given whole (the
  // claim that has it) or as shares.
  struct Use {
    const PreparedClaim* whole = nullptr;
    const PreparedClaim* shared = nullptr;
  };
  std::map<std::string, Use> uses;
  auto add = [&](const PreparedClaim& c) -> std::string {
    for (const PreparedDevice& d : c.devices) {
      if (d.admin_access) continue;  // may overlap any use, as upstream
      Use& u = uses[d.device];
      (d.share_id.empty() ? u.whole : u.shared) = &c;
      if (u.whole != nullptr && u.shared != nullptr) {
        const PreparedClaim* other = u.whole == &c ? u.shared : u.whole;
        return absl::StrCat(
            "device ", d.device, " is given ",
            d.share_id.empty() ? "whole"
                               : absl::StrCat("as share ", d.share_id),
            other == &c
                ? " and also "
                : absl::StrCat(" while ", Label(other->ref), " has it "),
            d.share_id.empty() ? "as a share" : "whole",
            "; a GPU is given whole or as shares, never both (the scheduler "
            "allocates a device with allowMultipleAllocations only as shares: "
            "was the device published differently meanwhile?)");
      }
    }
    return "";
  };
  for (const auto& [uid, c] : checkpoint_.claims) {
    if (uid == claim.ref.uid) continue;
    // A conflict between prepared claims was refused when it came.
    (void)add(c);
  }
  return add(claim);
}

absl::Status Preparer::SaveLocked(bool durable) {
  return WriteCheckpoint(options_.checkpoint_path, checkpoint_, durable);
}

absl::Status Preparer::WriteSpec(const PreparedClaim& claim) {
  if (devices_ == nullptr || base_ == nullptr) {
    return absl::FailedPreconditionError("no devices yet");
  }
  std::shared_ptr<const DeviceList> list = devices_->Get();
  std::vector<ClaimDevice> devices;
  std::set<std::pair<std::string, std::string>> seen;  // device, share
  for (const PreparedDevice& p : claim.devices) {
    if (!seen.emplace(p.device, p.share_id).second) continue;
    const Device* d = list->Find(p.device);
    if (d == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("device ", p.device, " is no longer on this node"));
    }
    Device made;
    std::vector<cdi::CdiDevice::CharNode> caps;
    if (p.mig.has_value()) {
      absl::StatusOr<std::vector<cdi::CdiDevice::CharNode>> nodes =
          MigCapNodesLocked(*p.mig);
      if (!nodes.ok()) {
        return absl::Status(
            nodes.status().code(),
            absl::StrCat("the capability nodes of MIG device ", p.device, " (",
                         Made(*p.mig), "): ", nodes.status().message()));
      }
      caps = *std::move(nodes);
      made = *d;
      made.device_nodes = {
          absl::StrCat("/dev/nvidia", p.mig->placement.gpu_minor)};
      made.visible_id = p.mig->uuid;
      made.mig_gi = static_cast<int>(*p.mig->gi_id);
      made.mig_ci = static_cast<int>(*p.mig->ci_id);
      d = &made;
    }
    auto sharing = claim.sharing.find(p.device);
    devices.push_back(
        {p.device, *d,
         sharing == claim.sharing.end() ? Sharing{} : sharing->second,
         p.share_id, p.memory_limit, p.shares,
         p.share_id.empty() ? 0 : base_->share_count, std::move(caps)});
  }
  absl::StatusOr<std::vector<cdi::CdiDevice>> cdi_devices =
      ClaimCdiDevices(claim.ref.uid, devices, options_.driver_name,
                      base_->mps_root, {base_->memory_limit_hook});
  if (!cdi_devices.ok()) return cdi_devices.status();
  cdi::CdiSpecOptions o = base_->cdi;
  o.kind = ClaimCdiKind(options_.driver_name);
  absl::StatusOr<nlohmann::json> spec =
      cdi::BuildDeviceSpec(o, base_->files, base_->control_nodes, *cdi_devices);
  if (!spec.ok()) return spec.status();
  return cdi::WriteSpec(options_.cdi_dir,
                        ClaimSpecFileName(options_.driver_name, claim.ref.uid),
                        *spec);
}

PrepareResult Preparer::Prepare(const ClaimRef& ref, absl::Time deadline,
                                CallBudget& caller) {
  std::optional<PreparedClaim> undo;  // left being prepared: undo it first
  {
    absl::MutexLock lock(&mu_);
    if (auto it = checkpoint_.claims.find(ref.uid);
        it != checkpoint_.claims.end() &&
        it->second.state != ClaimState::kPrepared) {
      PrepareResult result;
      if (it->second.state == ClaimState::kUnpreparing) {
        result.error = ClaimError(
            ref,
            "it is being unprepared (its MIG instances could not all be "
            "destroyed yet); the kubelet's unprepare goes on with it");
        return result;
      }
      if (reading_.contains(ref.uid) || destroying_.contains(ref.uid)) {
        result.error = ClaimError(
            ref, "another call is preparing it; the kubelet asks again");
        return result;
      }
      undo = it->second;
      destroying_.insert(ref.uid);
    } else if (it != checkpoint_.claims.end()) {
      // Idempotent; a spec that went missing is written again.
      PrepareResult result;
      std::error_code ec;
      absl::Status s = absl::OkStatus();
      if (!std::filesystem::exists(
              absl::StrCat(options_.cdi_dir, "/",
                           ClaimSpecFileName(options_.driver_name, ref.uid)),
              ec)) {
        s = WriteSpec(it->second);
      }
      if (!s.ok()) {
        result.error = ClaimError(
            ref, absl::StrCat("prepared, but its CDI spec cannot be written: ",
                              s.message()));
      } else {
        result.devices = it->second.devices;
      }
      return result;
    }
  }
  if (undo.has_value()) {
    // An earlier prepare whose instances could not be destroyed.
    if (absl::Status s = DestroyAndForget(ref.uid, *undo); !s.ok()) {
      PrepareResult result;
      result.error = ClaimError(
          ref, absl::StrCat("an earlier attempt to prepare it cannot be "
                            "undone: ",
                            s.message()));
      return result;
    }
  }
  return PrepareNew(ref, deadline, caller);
}

absl::Status Preparer::DestroyAndForget(const std::string& uid,
                                        const PreparedClaim& claim) {
  // Runs last, after any lock below is released.
  absl::Cleanup done = [this, &uid] {
    absl::MutexLock lock(&mu_);
    destroying_.erase(uid);
  };
  for (const PreparedDevice& d : claim.devices) {
    if (!d.mig.has_value()) continue;
    if (mig_ == nullptr) {
      return absl::FailedPreconditionError(
          "its MIG instances cannot be destroyed: this plugin makes and "
          "destroys no MIG instances (no NVML)");
    }
    std::function<void(MigStep)> step = [this](MigStep s) { Step(s); };
    if (absl::Status s = DestroyMig(*mig_, *d.mig, step); !s.ok()) return s;
  }
  absl::MutexLock lock(&mu_);
  auto it = checkpoint_.claims.find(uid);
  if (it == checkpoint_.claims.end()) return absl::OkStatus();
  PreparedClaim kept = std::move(it->second);
  checkpoint_.claims.erase(it);
  if (absl::Status s = SaveLocked(); !s.ok()) {
    checkpoint_.claims[uid] = std::move(kept);
    return absl::Status(
        s.code(), absl::StrCat("its MIG instances were destroyed, but the "
                               "checkpoint cannot be updated: ",
                               s.message()));
  }
  return absl::OkStatus();
}

std::string Preparer::MakeAndRecord(PreparedClaim& claim) {
  const std::string uid = claim.ref.uid;
  std::function<void(MigStep)> step = [this](MigStep s) { Step(s); };
  // The device whose make may have left an instance no ID names (MakeMig's
  // may_remain): destroyed by placement with those made.
  const PreparedDevice* uncertain = nullptr;
  // Undoes what was made and forgets the claim; `why` is the error.
  auto undo = [&](std::string why) {
    for (const PreparedDevice& d : claim.devices) {
      if (!d.mig.has_value() ||
          (!d.mig->gi_id.has_value() && &d != uncertain)) {
        continue;
      }
      if (absl::Status s = DestroyMig(*mig_, *d.mig, nullptr); !s.ok()) {
        LOG_ERROR(
            "{}: cannot destroy MIG instance {} it made: {}; the claim stays "
            "recorded as being prepared, and destroying it is tried again",
            Label(claim.ref), Describe(d.mig->placement), s.message());
        return why;
      }
    }
    absl::MutexLock lock(&mu_);
    checkpoint_.claims.erase(uid);
    if (absl::Status s = SaveLocked(); !s.ok()) {
      LOG_ERROR(
          "{}: its MIG instances were destroyed, but the checkpoint "
          "cannot be updated: {}",
          Label(claim.ref), s.message());
    }
    return why;
  };
  for (PreparedDevice& d : claim.devices) {
    if (!d.mig.has_value() || d.mig->gi_id.has_value()) continue;
    bool may_remain = false;
    if (absl::Status s = MakeMig(*mig_, *d.mig, step, &may_remain); !s.ok()) {
      if (may_remain) uncertain = &d;
      return undo(
          absl::StrCat("making MIG device ", d.device, ": ", s.message()));
    }
    // The same device named by several requests is made once.
    for (PreparedDevice& o : claim.devices) {
      if (o.device == d.device && o.mig.has_value()) o.mig = d.mig;
    }
  }
  std::string error;
  {
    absl::MutexLock lock(&mu_);
    if (reading_[uid].unprepared) {
      error =
          "it was unprepared while it was being prepared; not prepared (the "
          "kubelet asks again if a pod still needs it)";
    } else if (absl::Status s = WriteSpec(claim); !s.ok()) {
      error = absl::StrCat("writing its CDI spec: ", s.message());
    } else {
      Step(MigStep::kSpecWritten);
      claim.state = ClaimState::kPrepared;
      PreparedClaim before = checkpoint_.claims[uid];
      checkpoint_.claims[uid] = claim;
      if (absl::Status s = SaveLocked(); !s.ok()) {
        checkpoint_.claims[uid] = std::move(before);
        (void)cdi::RemoveSpec(options_.cdi_dir,
                              ClaimSpecFileName(options_.driver_name, uid));
        error = absl::StrCat("recording it in the checkpoint: ", s.message());
      }
    }
  }
  if (!error.empty()) return undo(std::move(error));
  Step(MigStep::kPreparedRecorded);
  return "";
}

std::map<std::string, PrepareResult> Preparer::Prepare(
    const std::vector<ClaimRef>& claims) {
  std::map<std::string, PrepareResult> out;
  CallBudget caller;
  for (const ClaimRef& ref : claims) {
    if (out.contains(ref.uid)) continue;
    out[ref.uid] = Prepare(ref, absl::InfiniteFuture(), caller);
  }
  return out;
}

std::string Preparer::OccupiedLocked(
    const PreparedClaim& claim,
    const std::map<std::string, std::vector<MigGpuInstance>>& instances) const {
  // Whether a claim in the checkpoint holds a MIG device overlapping `p`
  // (ours, then: the checkpoint's own overlap check judges it).
  auto checkpoint_holds =
      [&](const MigPlacement& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        for (const auto& [uid, c] : checkpoint_.claims) {
          for (const PreparedDevice& o : c.devices) {
            if (o.mig.has_value() && Overlaps(o.mig->placement, p)) return true;
          }
        }
        return false;
      };
  for (const PreparedDevice& d : claim.devices) {
    if (!d.mig.has_value()) continue;
    const MigPlacement& want = d.mig->placement;
    auto listed = instances.find(want.gpu_uuid);
    if (listed == instances.end()) continue;
    for (const MigGpuInstance& gi : listed->second) {
      MigPlacement held = want;
      held.start = gi.start;
      held.size = gi.size;
      if (!Overlaps(held, want) || checkpoint_holds(held)) continue;
      return absl::StrCat("making MIG device ", d.device, ": ", Describe(want),
                          " is occupied by GPU instance ", gi.gi_id,
                          " (profile ID ", gi.profile_id, ", memory slices ",
                          gi.start, "-", gi.start + gi.size - 1,
                          "), which this driver did not make; nothing was "
                          "destroyed");
    }
  }
  return "";
}

PrepareResult Preparer::PrepareNew(const ClaimRef& ref, absl::Time deadline,
                                   CallBudget& caller) {
  PrepareResult result;
  auto fail = [&](absl::string_view what) {
    result.error = ClaimError(ref, what);
    LOG_WARN("Cannot prepare {}", result.error);
    return result;
  };
  {
    absl::MutexLock lock(&mu_);
    ++reading_[ref.uid].reads;
  }
  // Until the end, an Unprepare of this claim marks it (checked under the
  // lock that writes it).
  absl::Cleanup done_reading = [this, &ref] {
    absl::MutexLock lock(&mu_);
    auto it = reading_.find(ref.uid);
    if (--it->second.reads == 0) reading_.erase(it);
  };
  absl::StatusOr<AllocatedClaim> claim = reader_.Read(ref, deadline, caller);
  if (!caller.live()) {
    return fail(
        "the kubelet's call ended (cancelled or past its deadline) before the "
        "claim was read; not prepared (the kubelet asks again)");
  }
  if (!claim.ok()) return fail(claim.status().message());
  if (claim->ref.uid != ref.uid) {
    return fail(absl::StrCat("the API server has a claim with UID ",
                             claim->ref.uid,
                             " under that name (deleted and created again?)"));
  }
  std::vector<const AllocatedDevice*> ours;
  std::set<std::string> drivers;
  for (const AllocatedDevice& r : claim->results) {
    if (r.driver == options_.driver_name) {
      ours.push_back(&r);
    } else {
      drivers.insert(r.driver);
    }
  }
  if (ours.empty()) {
    return fail(absl::StrCat(
        "no device of driver ", options_.driver_name, " is allocated to it",
        drivers.empty() ? ""
                        : absl::StrCat(" (its devices are of ",
                                       absl::StrJoin(drivers, ", "), ")")));
  }
  std::shared_ptr<const DeviceList> list;
  std::shared_ptr<const ClaimSpecBase> base;
  {
    absl::MutexLock lock(&mu_);
    if (devices_ == nullptr || base_ == nullptr) {
      return fail("the DRA devices are not ready yet");
    }
    list = devices_->Get();
    base = base_;
  }
  PreparedClaim prepared;
  prepared.ref = ref;
  for (const AllocatedDevice* r : ours) {
    if (r->pool != options_.pool) {
      return fail(absl::StrCat("request ", r->request, " was allocated device ",
                               r->device, " of pool ", r->pool,
                               ", not of this node's pool ", options_.pool));
    }
    const Device* d = list->Find(r->device);
    if (d == nullptr) {
      return fail(absl::StrCat("request ", r->request, " was allocated device ",
                               r->device, ", which pool ", options_.pool,
                               " does not have"));
    }
    if (d->health != Health::kHealthy) {
      return fail(absl::StrCat("device ", r->device,
                               " is unhealthy: ", d->unhealthy_reason));
    }
    auto dynamic = base->dynamic_mig.find(r->device);
    const bool is_dynamic = dynamic != base->dynamic_mig.end();
    if (is_dynamic && mig_ == nullptr) {
      return fail(absl::StrCat("device ", r->device,
                               " is a dynamic MIG device, and this plugin "
                               "makes no MIG instances (no NVML)"));
    }
    if (is_dynamic && (!r->share_id.empty() || r->admin_access)) {
      return fail(absl::StrCat(
          "device ", r->device,
          " is a dynamic MIG device, made for one claim: ",
          r->admin_access ? "adminAccess to it" : "a share of it",
          " cannot be given (it exists only while its claim is prepared)"));
    }
    // A dynamic MIG device takes MigDeviceConfig, as the MIG device it
    // becomes.
    Device as_mig = *d;
    if (is_dynamic) as_mig.mig_gi = 0;
    absl::StatusOr<Sharing> sharing = SharingFor(claim->configs, *r, as_mig);
    if (!sharing.ok()) return fail(sharing.status().message());
    if (auto [it, added] = prepared.sharing.emplace(r->device, *sharing);
        !added && it->second != *sharing) {
      return fail(absl::StrCat("device ", r->device,
                               " is given to several requests of the claim "
                               "with different sharing configurations"));
    }
    PreparedDevice p{
        {r->request},
        r->pool,
        r->device,
        {ClaimCdiId(options_.driver_name, ref.uid, r->device, r->share_id)}};
    p.admin_access = r->admin_access;
    if (is_dynamic) {
      p.mig.emplace();
      p.mig->placement = dynamic->second;
    }
    if (!r->share_id.empty()) {
      p.share_id = r->share_id;
      if (auto m = r->consumed_capacity.find("memory");
          m != r->consumed_capacity.end()) {
        p.memory_limit = m->second;
      }
      if (auto n = r->consumed_capacity.find("shares");
          n != r->consumed_capacity.end()) {
        p.shares = n->second;
      }
    }
    prepared.devices.push_back(std::move(p));
  }
  // A placement held by a GPU instance we did not make, checked before the
  // intent is recorded (listed outside the lock, judged under it against
  // the checkpoint): a crash after the intent is undone at the next start
  // by destroying what sits at its placements, which must then be ours.
  // Where the listing fails, making the instance says why.
  std::map<std::string, std::vector<MigGpuInstance>> instances;
  if (HasMig(prepared)) {
    for (const PreparedDevice& d : prepared.devices) {
      if (!d.mig.has_value() || instances.contains(d.mig->placement.gpu_uuid)) {
        continue;
      }
      absl::StatusOr<std::vector<MigGpuInstance>> listed =
          mig_->List(d.mig->placement.gpu_uuid);
      if (listed.ok()) {
        instances.emplace(d.mig->placement.gpu_uuid, *std::move(listed));
      }
    }
  }
  {  // mu_
    absl::MutexLock lock(&mu_);
    if (std::string conflict = WholeAndShared(prepared); !conflict.empty()) {
      return fail(conflict);
    }
    if (auto it = checkpoint_.claims.find(ref.uid);
        it != checkpoint_.claims.end()) {
      if (it->second.state != ClaimState::kPrepared) {
        return fail(
            "another call is preparing or unpreparing it; the "
            "kubelet asks again");
      }
      result.devices = it->second.devices;  // prepared meanwhile
      return result;
    }
    if (reading_[ref.uid].unprepared) {
      result.error = ClaimError(
          ref,
          "it was unprepared while it was being read; not prepared (the "
          "kubelet asks again if a pod still needs it)");
      LOG_WARN("Cannot prepare {}", result.error);
      return result;
    }
    if (std::string occupied = OccupiedLocked(prepared, instances);
        !occupied.empty()) {
      return fail(occupied);
    }
    if (HasMig(prepared)) {
      for (const auto& [uid, c] : checkpoint_.claims) {
        for (const PreparedDevice& o : c.devices) {
          for (const PreparedDevice& d : prepared.devices) {
            if (o.mig.has_value() && d.mig.has_value() &&
                Overlaps(o.mig->placement, d.mig->placement)) {
              return fail(absl::StrCat(
                  "its MIG device ", d.device, " (", Describe(d.mig->placement),
                  ") overlaps MIG device ", o.device, " of ", Label(c.ref),
                  " (was the GPU's layout published differently meanwhile?)"));
            }
          }
        }
      }
      // The intent, recorded before anything is made: a crash from here on
      // is undone at the next start.
      prepared.state = ClaimState::kPreparing;
      checkpoint_.claims[ref.uid] = prepared;
      if (absl::Status s = SaveLocked(/*durable=*/false); !s.ok()) {
        checkpoint_.claims.erase(ref.uid);
        return fail(
            absl::StrCat("recording it in the checkpoint: ", s.message()));
      }
    }
  }  // mu_
  if (HasMig(prepared)) {
    Step(MigStep::kIntentRecorded);
    if (std::string error = MakeAndRecord(prepared); !error.empty()) {
      return fail(error);
    }
  } else {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = WriteSpec(prepared); !s.ok()) {
      return fail(absl::StrCat("writing its CDI spec: ", s.message()));
    }
    checkpoint_.claims[ref.uid] = prepared;
    if (absl::Status s = SaveLocked(); !s.ok()) {
      checkpoint_.claims.erase(ref.uid);
      (void)cdi::RemoveSpec(options_.cdi_dir,
                            ClaimSpecFileName(options_.driver_name, ref.uid));
      return fail(
          absl::StrCat("recording it in the checkpoint: ", s.message()));
    }
  }
  LOG_INFO("Prepared {}: {}", Label(ref), [&] {
    std::vector<std::string> names;
    for (const PreparedDevice& d : prepared.devices) {
      names.push_back(absl::StrCat(
          d.device, " (request ", absl::StrJoin(d.requests, ","),
          d.mig.has_value() ? absl::StrCat("; made: ", Made(*d.mig)) : "",
          ")"));
    }
    return absl::StrJoin(names, ", ");
  }());
  result.devices = std::move(prepared.devices);
  return result;
}

std::map<std::string, std::string> Preparer::Unprepare(
    const std::vector<ClaimRef>& claims) {
  std::map<std::string, std::string> out;
  for (const ClaimRef& ref : claims) {
    if (out.contains(ref.uid)) continue;
    out[ref.uid] = "";
    std::optional<PreparedClaim> destroy;  // its MIG instances, unlocked
    {
      absl::MutexLock lock(&mu_);
      const auto reading = reading_.find(ref.uid);
      if (reading != reading_.end()) {
        reading->second.unprepared = true;  // its Prepare writes nothing
      }
      if (absl::Status s =
              cdi::RemoveSpec(options_.cdi_dir,
                              ClaimSpecFileName(options_.driver_name, ref.uid));
          !s.ok()) {
        out[ref.uid] = ClaimError(
            ref, absl::StrCat("removing its CDI spec: ", s.message()));
        continue;
      }
      auto it = checkpoint_.claims.find(ref.uid);
      if (it == checkpoint_.claims.end()) {
        VLOG(1, "Unprepare {}: not prepared here; nothing to do", Label(ref));
        continue;
      }
      if (HasMig(it->second)) {
        if (it->second.state == ClaimState::kPreparing &&
            reading != reading_.end()) {
          continue;  // its Prepare, in flight, undoes what it made
        }
        if (destroying_.contains(ref.uid)) {
          out[ref.uid] = ClaimError(
              ref,
              "another call is destroying its MIG instances; the kubelet "
              "asks again");
          continue;
        }
        if (it->second.state != ClaimState::kUnpreparing) {
          // Recorded before anything is destroyed: a crash from here on
          // finishes the destruction at the next start.
          const ClaimState was = it->second.state;
          it->second.state = ClaimState::kUnpreparing;
          if (absl::Status s = SaveLocked(/*durable=*/false); !s.ok()) {
            it->second.state = was;
            out[ref.uid] = ClaimError(
                ref, absl::StrCat("updating the checkpoint: ", s.message()));
            continue;
          }
        }
        destroy = it->second;
        destroying_.insert(ref.uid);
      } else {
        PreparedClaim kept = std::move(it->second);
        checkpoint_.claims.erase(it);
        if (absl::Status s = SaveLocked(); !s.ok()) {
          checkpoint_.claims[ref.uid] = std::move(kept);
          out[ref.uid] = ClaimError(
              ref, absl::StrCat("updating the checkpoint: ", s.message()));
          continue;
        }
        LOG_INFO("Unprepared {}", Label(ref));
        continue;
      }
    }
    Step(MigStep::kUnprepareRecorded);
    if (absl::Status s = DestroyAndForget(ref.uid, *destroy); !s.ok()) {
      out[ref.uid] = ClaimError(
          ref, absl::StrCat("destroying its MIG instances: ", s.message(),
                            " (the kubelet's next unprepare goes on)"));
      LOG_WARN("Cannot unprepare {}", out[ref.uid]);
      continue;
    }
    LOG_INFO("Unprepared {}: its MIG instances destroyed", Label(ref));
  }
  return out;
}

}  // namespace gdp::dra
