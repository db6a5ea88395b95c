#include "bench/dra_env.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kube/config.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace gdp::bench {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::Subprocess;

namespace {
constexpr char kClaims[] =
    "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims";
constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";
}  // namespace

void AddDraEnvOptions(CLI::App& app, DraEnvOptions* o) {
  app.add_option("--apiserver", o->apiserver,
                 "the API server emulator (tests/kube/apiserver.py)")
      ->required();
  app.add_option("--python", o->python, "the Python that runs it");
  app.add_option("--health-quiet-period", o->quiet_period,
                 "the plugin's --health-quiet-period");
  app.add_option("--health-probe-interval", o->probe_interval,
                 "the plugin's --health-probe-interval");
}

absl::StatusOr<std::unique_ptr<DraEnv>> DraEnv::Create(const DraEnvOptions& o,
                                                       const fs::path& dir) {
  fs::remove_all(dir);
  auto env = std::unique_ptr<DraEnv>(new DraEnv(o, dir));
  FixtureOptions fixture = o;
  fixture.plugin_args = {"--device-api",
                         "dra",
                         "--node-name",
                         kDraNode,
                         "--kubeconfig",
                         (dir / "api/kubeconfig").string(),
                         "--kubelet-registration-dir",
                         (dir / "reg").string(),
                         "--kubelet-plugins-dir",
                         (dir / "plugins").string(),
                         "--cdi-spec-dir",
                         (dir / "cdi").string(),
                         "--proc-root",
                         "{root}/proc",
                         "--health-quiet-period",
                         o.quiet_period,
                         "--health-probe-interval",
                         o.probe_interval};
  // Each start is a fresh plugin: no health kept from the one before
  // (TimeXids counts on it).
  fixture.plugin_args.insert(fixture.plugin_args.end(), {"--state-dir", ""});
  fixture.plugin_args.insert(fixture.plugin_args.end(), o.plugin_args.begin(),
                             o.plugin_args.end());
  absl::StatusOr<std::vector<std::string>> argv = MakeFixture(fixture, dir);
  if (!argv.ok()) return argv.status();
  env->argv_ = *std::move(argv);
  fs::create_directories(dir / "root/proc/sys/kernel/random");
  std::ofstream(dir / "root/proc/sys/kernel/random/boot_id") << "boot-1\n";
  fs::create_directories(dir / "api");

  env->api_server_ = std::make_unique<Subprocess>(
      testing::SpawnOptions{.argv = {o.python, o.apiserver, "--dir",
                                     (dir / "api").string(), "--port", "0"},
                            .stderr_path = (dir / "api.err").string()});
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  bool listening = false;
  while (!listening && absl::Now() < deadline) {
    std::optional<std::string> line =
        env->api_server_->ReadLine(deadline - absl::Now());
    if (!line.has_value()) break;
    json e = json::parse(*line, nullptr, /*allow_exceptions=*/false);
    listening = e.is_object() && e.value("event", "") == "listening";
  }
  if (!listening) {
    return absl::InternalError(
        absl::StrCat("the API server emulator did not "
                     "start: ",
                     env->api_server_->Stderr()));
  }
  absl::StatusOr<std::unique_ptr<kube::Client>> api = env->NewClient();
  if (!api.ok()) return api.status();
  env->api_ = *std::move(api);
  absl::StatusOr<json> node =
      env->api_->Create("/api/v1/nodes", {{"apiVersion", "v1"},
                                          {"kind", "Node"},
                                          {"metadata", {{"name", kDraNode}}}});
  if (!node.ok()) {
    return absl::InternalError(
        absl::StrCat("creating the Node: ", node.status().message()));
  }
  return env;
}

DraEnv::~DraEnv() {
  api_.reset();
  api_server_.reset();  // SIGKILL
  fs::remove_all(dir_);
}

std::unique_ptr<Subprocess> DraEnv::SpawnPlugin() const {
  return std::make_unique<Subprocess>(
      testing::SpawnOptions{.argv = argv_,
                            .env = PluginEnv(options_, control()),
                            .stderr_path = (dir_ / "plugin.err").string()});
}

absl::StatusOr<std::unique_ptr<kube::Client>> DraEnv::NewClient() const {
  absl::StatusOr<kube::ClientConfig> c =
      kube::LoadKubeconfig((dir_ / "api/kubeconfig").string());
  if (!c.ok()) return c.status();
  c->user_agent = "dra_bench";
  return kube::Client::Create(*c);
}

absl::StatusOr<std::string> DraEnv::CreateClaim(const std::string& name,
                                                const std::string& device) {
  json claim = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", name}, {"namespace", "ns"}}}};
  claim["spec"]["devices"]["requests"] = json::array(
      {{{"name", "gpu"}, {"exactly", {{"deviceClassName", kDraDriver}}}}});
  absl::StatusOr<json> made = api_->Create(kClaims, claim);
  if (!made.ok()) return made.status();
  json status = *made;
  status["status"]["allocation"]["devices"]["results"] =
      json::array({{{"request", "gpu"},
                    {"driver", kDraDriver},
                    {"pool", kDraNode},
                    {"device", device}}});
  absl::StatusOr<json> updated =
      api_->Update(absl::StrCat(kClaims, "/", name, "/status"), status);
  if (!updated.ok()) return updated.status();
  return (*made)["metadata"]["uid"].get<std::string>();
}

absl::Status DraEnv::DeleteSlices() {
  kube::ListOptions o;
  o.field_selector = absl::StrCat("spec.nodeName=", kDraNode);
  return api_->DeleteCollection(kSlices, o);
}

void DraEnv::ForgetClaims() const {
  fs::remove(dir_ / "plugins" / kDraDriver / "gdp-checkpoint.json");
  fs::remove_all(dir_ / "cdi");
}

std::string DraEnv::registration_socket() const {
  return (dir_ / "reg" / absl::StrCat(kDraDriver, "-reg.sock")).string();
}

bool WaitForSocket(const std::string& path, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!fs::is_socket(path)) {
    if (absl::Now() >= deadline) return false;
    usleep(1000);
  }
  return true;
}

absl::StatusOr<pluginregistration::PluginInfo> RegisterDraPlugin(
    const std::string& socket, absl::Duration timeout) {
  if (!WaitForSocket(socket, timeout)) {
    return absl::UnavailableError(absl::StrCat("no socket at ", socket));
  }
  // The socket may be bound before it listens: retry a refused GetInfo on
  // a new channel (a channel's own reconnect waits a second).
  const absl::Time deadline = absl::Now() + timeout;
  std::unique_ptr<pluginregistration::Registration::Stub> stub;
  pluginregistration::PluginInfo info;
  for (;;) {
    stub = pluginregistration::Registration::NewStub(grpc::CreateChannel(
        "unix:" + socket, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(deadline));
    grpc::Status s = stub->GetInfo(&ctx, {}, &info);
    if (s.ok()) break;
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE ||
        absl::Now() >= deadline) {
      return absl::UnavailableError(
          absl::StrCat("GetInfo on ", socket, ": ", s.error_message()));
    }
    usleep(1000);
  }
  bool v1 = false;
  for (const std::string& v : info.supported_versions()) {
    v1 = v1 || v == "v1.DRAPlugin";
  }
  std::string error;
  if (info.type() != "DRAPlugin" || info.name() != kDraDriver ||
      info.endpoint().empty() || info.endpoint().front() != '/' || !v1) {
    error = absl::StrCat("GetInfo answered a plugin the kubelet refuses: ",
                         info.ShortDebugString());
  }
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(error.empty());
  status.set_error(error);
  pluginregistration::RegistrationStatusResponse response;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  grpc::Status s = stub->NotifyRegistrationStatus(&ctx, status, &response);
  if (!error.empty()) return absl::InternalError(error);
  if (!s.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "NotifyRegistrationStatus on ", socket, ": ", s.error_message()));
  }
  return info;
}

}  // namespace gdp::bench
