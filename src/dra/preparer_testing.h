// What the Preparer's tests and the tests of what runs it (ClaimCalls)
// share: claims read from a table, devices, and a preparer on a temporary
// directory.
#ifndef GDP_DRA_PREPARER_TESTING_H_
#define GDP_DRA_PREPARER_TESTING_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "device/device_set.h"
#include "dra/claim_edits.h"
#include "dra/dynamic_mig.h"
#include "dra/preparer.h"
#include "testing/temp_dir.h"

namespace gdp::dra {

namespace fs = std::filesystem;

// Claims by "<namespace>/<name>".
class TableReader final : public ClaimReader {
 public:
  absl::StatusOr<AllocatedClaim> Read(const ClaimRef& ref, absl::Time deadline,
                                      CallBudget& caller) override {
    if (on_read) {
      absl::Status s = on_read(ref, deadline, caller);
      if (!s.ok()) return s;
    }
    absl::MutexLock lock(&mu_);
    ++reads;
    auto it = claims.find(ref.ns + "/" + ref.name);
    if (it == claims.end()) {
      return absl::NotFoundError(absl::StrCat("reading the claim: ", ref.ns,
                                              "/", ref.name, " not found"));
    }
    return it->second;
  }
  absl::Mutex mu_;
  std::map<std::string, AllocatedClaim> claims;
  int reads = 0;
  // Runs at each read, before the claim is looked up (set before use); an
  // error is the read's.
  std::function<absl::Status(const ClaimRef&, absl::Time, CallBudget&)> on_read;
};

// MIG instances in a table: GPU instances by GPU UUID, IDs the lowest free
// (GPU instance IDs from 1, compute instance IDs from 0), placements
// checked for overlap. Failures can be injected by call name.
class TableMigMaker final : public MigMaker {
 public:
  absl::StatusOr<std::vector<MigGpuInstance>> List(
      const std::string& gpu) override {
    absl::MutexLock lock(&mu);
    ++calls["List"];
    if (absl::Status s = Injected("List"); !s.ok()) return s;
    return gpus[gpu];
  }
  absl::StatusOr<unsigned> CreateGpuInstance(const MigPlacement& p) override {
    absl::MutexLock lock(&mu);
    ++calls["CreateGpuInstance"];
    if (absl::Status s = Injected("CreateGpuInstance"); !s.ok()) return s;
    std::vector<MigGpuInstance>& list = gpus[p.gpu_uuid];
    unsigned id = 1;
    for (const MigGpuInstance& gi : list) {
      if (p.start < gi.start + gi.size && gi.start < p.start + p.size) {
        return absl::ResourceExhaustedError("placement occupied");
      }
      if (gi.gi_id >= id) id = gi.gi_id + 1;
    }
    list.push_back({id, p.profile_id, p.start, p.size, {}});
    return id;
  }
  absl::StatusOr<unsigned> CreateComputeInstance(const MigPlacement& p,
                                                 unsigned gi_id) override {
    absl::MutexLock lock(&mu);
    ++calls["CreateComputeInstance"];
    if (absl::Status s = Injected("CreateComputeInstance"); !s.ok()) return s;
    MigGpuInstance* gi = Find(p.gpu_uuid, gi_id);
    if (gi == nullptr) return absl::NotFoundError("no GPU instance");
    if (!gi->ci_ids.empty()) return absl::ResourceExhaustedError("full");
    gi->ci_ids.push_back(0);
    return 0u;
  }
  absl::StatusOr<std::string> MigUuid(const std::string& gpu, unsigned gi_id,
                                      unsigned ci_id) override {
    absl::MutexLock lock(&mu);
    if (absl::Status s = Injected("MigUuid"); !s.ok()) return s;
    MigGpuInstance* gi = Find(gpu, gi_id);
    if (gi == nullptr || gi->ci_ids.empty()) {
      return absl::NotFoundError("no MIG device");
    }
    return absl::StrCat("MIG-", gpu, "-", gi_id, "-", ci_id);
  }
  absl::Status DestroyComputeInstance(const std::string& gpu, unsigned gi_id,
                                      unsigned ci_id) override {
    absl::MutexLock lock(&mu);
    ++calls["DestroyComputeInstance"];
    if (absl::Status s = Injected("DestroyComputeInstance"); !s.ok()) return s;
    MigGpuInstance* gi = Find(gpu, gi_id);
    if (gi == nullptr) return absl::NotFoundError("no GPU instance");
    if (busy.contains(absl::StrCat(gpu, "/", gi_id))) {
      return absl::FailedPreconditionError("in use");
    }
    std::erase(gi->ci_ids, ci_id);
    return absl::OkStatus();
  }
  absl::Status DestroyGpuInstance(const std::string& gpu,
                                  unsigned gi_id) override {
    absl::MutexLock lock(&mu);
    ++calls["DestroyGpuInstance"];
    if (absl::Status s = Injected("DestroyGpuInstance"); !s.ok()) return s;
    MigGpuInstance* gi = Find(gpu, gi_id);
    if (gi == nullptr) return absl::NotFoundError("no GPU instance");
    if (!gi->ci_ids.empty()) return absl::FailedPreconditionError("in use");
    std::erase_if(gpus[gpu],
                  [&](const MigGpuInstance& g) { return g.gi_id == gi_id; });
    return absl::OkStatus();
  }

  // The GPU instances of `gpu` now.
  std::vector<MigGpuInstance> On(const std::string& gpu) {
    absl::MutexLock lock(&mu);
    return gpus[gpu];
  }

  absl::Mutex mu;
  std::map<std::string, std::vector<MigGpuInstance>> gpus;
  std::map<std::string, int> calls;
  std::map<std::string, absl::Status> fail;  // by call name
  std::set<std::string> busy;                // "<gpu>/<gi>": CIs in use

 private:
  absl::Status Injected(const std::string& call) {
    auto it = fail.find(call);
    return it == fail.end() ? absl::OkStatus() : it->second;
  }
  MigGpuInstance* Find(const std::string& gpu, unsigned gi_id) {
    for (MigGpuInstance& gi : gpus[gpu]) {
      if (gi.gi_id == gi_id) return &gi;
    }
    return nullptr;
  }
};

inline Device Dev(const std::string& name, unsigned minor) {
  Device d;
  d.id = name;
  d.visible_id = absl::StrCat("GPU-", minor);
  d.gpu_uuid = d.visible_id;
  d.gpu_index = minor;
  d.device_nodes = {absl::StrCat("/dev/nvidia", minor)};
  return d;
}

inline AllocatedClaim Allocated(const std::string& name, const std::string& uid,
                                std::vector<AllocatedDevice> results) {
  AllocatedClaim c;
  c.ref = {"ns", name, uid};
  c.results = std::move(results);
  return c;
}

class PreparerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devices_ = std::make_unique<DeviceSet>(
        std::vector<Device>{Dev("gpu-0", 0), Dev("gpu-1", 1)});
    base_ = std::make_shared<ClaimSpecBase>();
    base_->control_nodes = {"/dev/nvidiactl"};
    reader_.claims["ns/one"] =
        Allocated("one", "u-1", {{"gpu", "gpu.nvidia.com", "node-1", "gpu-0"}});
  }

  std::unique_ptr<Preparer> Make(const std::string& boot = "boot-1",
                                 const std::string& driver = "gpu.nvidia.com") {
    auto p = std::make_unique<Preparer>(
        PreparerOptions{.driver_name = driver,
                        .pool = "node-1",
                        .cdi_dir = (dir_ / "cdi").string(),
                        .checkpoint_path = (dir_ / "cp.json").string(),
                        .boot_id = boot},
        reader_);
    p->SetSources(devices_.get(), base_);
    return p;
  }

  std::string SpecPath(const std::string& uid) {
    return (dir_ / "cdi" / ClaimSpecFileName("gpu.nvidia.com", uid)).string();
  }

  const gdp::testing::TempDir tmp_{"preparer"};
  const fs::path dir_ = tmp_.path();
  TableReader reader_;
  std::unique_ptr<DeviceSet> devices_;
  std::shared_ptr<ClaimSpecBase> base_;
};

}  // namespace gdp::dra

#endif  // GDP_DRA_PREPARER_TESTING_H_
