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

}  // namespace

Preparer::Preparer(PreparerOptions options, ClaimReader& reader)
    : options_(std::move(options)), reader_(reader) {
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
  return checkpoint_.claims.size();
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
  std::vector<std::string> dropped;
  for (auto it = checkpoint_.claims.begin(); it != checkpoint_.claims.end();) {
    if (absl::Status s = WriteSpec(it->second); !s.ok()) {
      LOG_ERROR(
          "{}: dropping it from the checkpoint: its CDI spec cannot be "
          "written again: {}",
          Label(it->second.ref), s.message());
      dropped.push_back(it->first);
      it = checkpoint_.claims.erase(it);
    } else {
      ++it;
    }
  }
  if (!checkpoint_.claims.empty() || !dropped.empty()) {
    LOG_INFO("{} prepared claim(s) from the checkpoint{}",
             checkpoint_.claims.size(),
             rebooted ? "; the node rebooted since: their CDI specs were "
                        "written again"
                      : "");
  }
  if (rebooted || !dropped.empty()) return SaveLocked();
  return absl::OkStatus();
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

absl::Status Preparer::SaveLocked() {
  return WriteCheckpoint(options_.checkpoint_path, checkpoint_);
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
    auto sharing = claim.sharing.find(p.device);
    devices.push_back(
        {p.device, *d,
         sharing == claim.sharing.end() ? Sharing{} : sharing->second,
         p.share_id, p.memory_limit, p.shares,
         p.share_id.empty() ? 0 : base_->share_count});
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
  {
    absl::MutexLock lock(&mu_);
    if (auto it = checkpoint_.claims.find(ref.uid);
        it != checkpoint_.claims.end()) {
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
  return PrepareNew(ref, deadline, caller);
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
  {
    absl::MutexLock lock(&mu_);
    if (devices_ == nullptr) return fail("the DRA devices are not ready yet");
    list = devices_->Get();
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
    absl::StatusOr<Sharing> sharing = SharingFor(claim->configs, *r, *d);
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
  absl::MutexLock lock(&mu_);
  if (std::string conflict = WholeAndShared(prepared); !conflict.empty()) {
    return fail(conflict);
  }
  if (auto it = checkpoint_.claims.find(ref.uid);
      it != checkpoint_.claims.end()) {
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
  if (absl::Status s = WriteSpec(prepared); !s.ok()) {
    return fail(absl::StrCat("writing its CDI spec: ", s.message()));
  }
  checkpoint_.claims[ref.uid] = prepared;
  if (absl::Status s = SaveLocked(); !s.ok()) {
    checkpoint_.claims.erase(ref.uid);
    (void)cdi::RemoveSpec(options_.cdi_dir,
                          ClaimSpecFileName(options_.driver_name, ref.uid));
    return fail(absl::StrCat("recording it in the checkpoint: ", s.message()));
  }
  LOG_INFO("Prepared {}: {}", Label(ref), [&] {
    std::vector<std::string> names;
    for (const PreparedDevice& d : prepared.devices) {
      names.push_back(absl::StrCat(d.device, " (request ",
                                   absl::StrJoin(d.requests, ","), ")"));
    }
    return absl::StrJoin(names, ", ");
  }());
  result.devices = std::move(prepared.devices);
  return result;
}

std::map<std::string, std::string> Preparer::Unprepare(
    const std::vector<ClaimRef>& claims) {
  std::map<std::string, std::string> out;
  absl::MutexLock lock(&mu_);
  for (const ClaimRef& ref : claims) {
    if (out.contains(ref.uid)) continue;
    out[ref.uid] = "";
    if (auto it = reading_.find(ref.uid); it != reading_.end()) {
      it->second.unprepared = true;  // its Prepare writes nothing
    }
    if (absl::Status s = cdi::RemoveSpec(
            options_.cdi_dir, ClaimSpecFileName(options_.driver_name, ref.uid));
        !s.ok()) {
      out[ref.uid] =
          ClaimError(ref, absl::StrCat("removing its CDI spec: ", s.message()));
      continue;
    }
    auto it = checkpoint_.claims.find(ref.uid);
    if (it == checkpoint_.claims.end()) {
      VLOG(1, "Unprepare {}: not prepared here; nothing to do", Label(ref));
      continue;
    }
    PreparedClaim kept = std::move(it->second);
    checkpoint_.claims.erase(it);
    if (absl::Status s = SaveLocked(); !s.ok()) {
      checkpoint_.claims[ref.uid] = std::move(kept);
      out[ref.uid] = ClaimError(
          ref, absl::StrCat("updating the checkpoint: ", s.message()));
      continue;
    }
    LOG_INFO("Unprepared {}", Label(ref));
  }
  return out;
}

}  // namespace gdp::dra
