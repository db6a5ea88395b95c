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
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "device/device_set.h"
#include "dra/claim_edits.h"
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
