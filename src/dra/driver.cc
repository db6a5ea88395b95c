#include "dra/driver.h"

#include <filesystem>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cdi/driver_files.h"
#include "device/mig_profiles.h"
#include "dra/claim_edits.h"
#include "dra/nvml_mig_maker.h"
#include "dra/slices.h"
#include "util/boot_id.h"
#include "util/logging.h"
#include "util/thread_name.h"

namespace gdp::dra {
namespace {

// Ours, beside the endpoint (NVIDIA's driver keeps checkpoint.json there,
// in another format: the two never read each other's).
constexpr char kCheckpointFile[] = "gdp-checkpoint.json";

// The dynamic MIG devices of `inventory` (MIG profile placements of GPUs
// published partitionable) and what each makes.
std::map<std::string, MigPlacement> DynamicMig(
    const std::vector<DraDevice>& inventory) {
  std::map<std::string, MigPlacement> out;
  for (const DraDevice& d : inventory) {
    if (d.mig_placement.has_value()) out[d.name] = *d.mig_placement;
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DraDriver>> DraDriver::Create(
    DraDriverOptions options) {
  options.publisher.driver_name = options.driver_name;
  options.publisher.node_name = options.node_name;
  options.publisher.limits = options.limits;
  options.kubelet.driver_name = options.driver_name;
  options.kubelet.registration_dir = options.registration_dir;
  options.kubelet.plugins_dir = options.plugins_dir;
  auto d = std::unique_ptr<DraDriver>(new DraDriver(std::move(options)));
  const DraDriverOptions& o = d->options_;
  absl::StatusOr<std::unique_ptr<kube::Client>> c = kube::Client::Create(o.api);
  if (!c.ok()) {
    return absl::Status(
        c.status().code(),
        absl::StrCat("the Kubernetes API client: ", c.status().message()));
  }
  d->slices_api_ = *std::move(c);
  // Claims are read over clients of their own (made as reads need them),
  // one per reader thread.
  d->claims_ = std::make_unique<KubeClaimReader>(
      [api = o.api] { return kube::Client::Create(api); }, o.driver_name,
      o.calls.readers);
  d->devices_ = std::make_unique<DeviceSet>(std::vector<Device>{});
  if (o.nvml != nullptr) {
    d->mig_runner_ = std::make_unique<NvmlRunner>(*o.nvml);
    d->mig_maker_ = MakeNvmlMigMaker(*o.nvml, *d->mig_runner_);
  }
  d->preparer_ = std::make_unique<Preparer>(
      PreparerOptions{
          .driver_name = o.driver_name,
          .pool = o.node_name,
          .cdi_dir = o.cdi_dir,
          .checkpoint_path =
              (std::filesystem::path(EndpointSocket(o.kubelet)).parent_path() /
               kCheckpointFile)
                  .string(),
          .boot_id = ReadBootId(o.proc_root),
          .proc_root = o.proc_root,
          .on_mig_step = o.on_mig_step},
      *d->claims_, d->mig_maker_.get());
  d->publisher_ =
      std::make_unique<SlicePublisher>(*d->slices_api_, o.publisher);
  d->calls_ = std::make_unique<ClaimCalls>(*d->preparer_, o.calls);
  DraDriver* self = d.get();
  absl::StatusOr<std::unique_ptr<KubeletPlugin>> plugin = KubeletPlugin::Create(
      o.kubelet,
      [self] {
        return EndpointServices(*self->calls_, *self->devices_,
                                self->options_.node_name, self->streams_);
      },
      d->streams_, d->registration_);
  if (!plugin.ok()) return plugin.status();
  d->plugin_ = *std::move(plugin);
  return d;
}

DraDriver::DraDriver(DraDriverOptions options) : options_(std::move(options)) {}

DraDriver::~DraDriver() {
  if (subscription_ != 0) devices_->Unsubscribe(subscription_);
  // Calls in flight read claims: let them fail fast. The server ends the
  // calls in flight as it shuts down; their work then finishes unheard.
  if (claims_ != nullptr) claims_->Cancel();
  // A MIG instance being made or destroyed: its prepare or unprepare fails
  // at once (recorded, so the next start finishes it).
  if (mig_runner_ != nullptr) mig_runner_->Cancel();
  if (plugin_ != nullptr) plugin_->Stop();
  if (plugin_thread_.joinable()) plugin_thread_.join();
  plugin_.reset();
  calls_.reset();
  if (publisher_ != nullptr) publisher_->Stop();
  if (publisher_thread_.joinable()) publisher_thread_.join();
  if (watch_thread_.joinable()) watch_thread_.join();
}

void DraDriver::Publish() {
  std::shared_ptr<const std::vector<DraDevice>> inventory;
  {
    absl::MutexLock lock(&mu_);
    inventory = inventory_;
  }
  if (inventory == nullptr) return;
  std::shared_ptr<const DeviceList> health = devices_->Get();
  publisher_->SetDevices(SliceDevices(*inventory, health->devices,
                                      options_.driver_name,
                                      /*withhold_unhealthy=*/false));
}

absl::Status DraDriver::Apply(const NodeGpus& node,
                              std::shared_ptr<const NodeTopology> topology,
                              const MigCaps* mig_caps) {
  InventoryOptions inventory_options = options_.inventory;
  inventory_options.driver_name = options_.driver_name;
  absl::StatusOr<std::vector<DraDevice>> inventory =
      BuildInventory(node, topology.get(), mig_caps, inventory_options);
  if (!inventory.ok()) return inventory.status();

  // Claim specs are built from what is found here, once, not per claim.
  auto base = std::make_shared<ClaimSpecBase>();
  base->cdi = options_.cdi;
  base->cdi.kind = ClaimCdiKind(options_.driver_name);
  base->cdi.driver_version = node.driver_version;
  const std::string& lookup = options_.cdi.lookup_root.empty()
                                  ? options_.cdi.host_driver_root
                                  : options_.cdi.lookup_root;
  absl::StatusOr<cdi::DriverFiles> files =
      cdi::FindDriverFiles(lookup.empty() ? "/" : lookup, node.driver_version);
  if (!files.ok()) return files.status();
  if (files->libraries.empty()) {
    LOG_WARN(
        "No NVIDIA driver libraries found under {}; claim CDI specs "
        "mount none",
        lookup);
  }
  base->files = *std::move(files);
  base->control_nodes = cdi::FindControlNodes(
      options_.cdi.dev_lookup_root.empty() ? options_.cdi.dev_root
                                           : options_.cdi.dev_lookup_root);
  base->mps_root = options_.mps_root;
  base->memory_limit_hook = options_.memory_limit_hook;
  if (options_.inventory.shares.mode == ConsumableShares::Mode::kCount) {
    base->share_count = static_cast<uint64_t>(options_.inventory.shares.count);
  }
  base->dynamic_mig = DynamicMig(*inventory);

  // Devices that stay keep what health monitoring learned; the daemon
  // pushes the rest.
  std::shared_ptr<const DeviceList> old = devices_->Get();
  std::vector<Device> devices;
  std::vector<std::string> names;
  for (const DraDevice& d : *inventory) {
    Device device = d.device;
    if (const Device* o = old->Find(device.id); o != nullptr) {
      device.health = o->health;
      device.unhealthy_reason = o->unhealthy_reason;
      device.unhealthy_cause = o->unhealthy_cause;
    }
    devices.push_back(std::move(device));
    names.push_back(d.name);
  }
  {
    absl::MutexLock lock(&mu_);
    inventory_ =
        std::make_shared<const std::vector<DraDevice>>(*std::move(inventory));
  }
  preparer_->SetSources(devices_.get(), std::move(base));
  devices_->Replace(std::move(devices));
  if (names.size() > 16) {
    names.resize(16);
    names.push_back("...");
  }
  LOG_INFO("DRA driver {}: {} device(s) in pool {}: {}", options_.driver_name,
           devices_->Get()->devices.size(), options_.node_name,
           absl::StrJoin(names, ", "));
  if (started_) {
    Publish();  // attributes may have changed with the same devices
    return absl::OkStatus();
  }
  started_ = true;
  if (absl::Status s = preparer_->Start(); !s.ok()) {
    absl::MutexLock lock(&mu_);
    checkpoint_error_ = std::string(s.message());
  }
  subscription_ = devices_->Subscribe([this] { Publish(); });
  Publish();
  publisher_thread_ = std::thread([p = publisher_.get()] {
    NameThisThread("gdp-dra-publish");
    p->Run();
  });
  watch_thread_ = std::thread([p = publisher_.get()] {
    NameThisThread("gdp-dra-watch");
    p->RunWatch();
  });
  plugin_thread_ = std::thread([p = plugin_.get()] {
    NameThisThread("gdp-dra-plugin");
    p->Run();
  });
  return absl::OkStatus();
}

DraStatus DraDriver::status() const {
  DraStatus s;
  s.serving = plugin_->serving();
  s.registered = registration_.registered();
  s.registration_error = registration_.last_error();
  s.slices = publisher_->status();
  std::shared_ptr<const DeviceList> list = devices_->Get();
  s.devices = list->devices.size();
  for (const Device& d : list->devices) {
    if (d.health == Health::kHealthy) ++s.healthy;
  }
  s.prepared_claims = preparer_->prepared();
  absl::MutexLock lock(&mu_);
  s.checkpoint_error = checkpoint_error_;
  return s;
}

}  // namespace gdp::dra
