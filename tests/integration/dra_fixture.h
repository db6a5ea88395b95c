// The DRA end-to-end fixture: the Kubernetes API server emulator
// (tests/kube/apiserver.py, which validates everything written against the
// upstream schema), the kubelet's DRA side (`dpctl dra-kubelet --json`), and
// the real gpu-device-plugin binary on the fake NVML with --device-api=dra.
#ifndef GDP_TESTS_INTEGRATION_DRA_FIXTURE_H_
#define GDP_TESTS_INTEGRATION_DRA_FIXTURE_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kube/client.h"
#include "kube/config.h"
#include "tests/integration/e2e_fixture.h"

namespace gdp {

inline constexpr char kNode[] = "node-1";
inline constexpr char kDriver[] = "gpu.nvidia.com";
inline constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";

// A free TCP port on 127.0.0.1 (closed again: a server may take it).
inline int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

class DraTest : public E2ETest {
 protected:
  void SetUp() override {
    E2ETest::SetUp();
    fs::create_directories(dir_ / "api");
    SetBootId("boot-1");
  }
  void TearDown() override {
    dra_kubelet_.reset();
    plugin_.reset();
    api_client_.reset();
    api_.reset();
    E2ETest::TearDown();
  }

  void SetBootId(const std::string& id) {
    fs::create_directories(dir_ / "root/proc/sys/kernel/random");
    std::ofstream(dir_ / "root/proc/sys/kernel/random/boot_id") << id << "\n";
  }

  // Starts the emulator (on `port`, 0: any) and, the first time, a client
  // for the test and the Node this plugin runs on.
  void StartApiServer(int port = 0, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {
        "/usr/bin/python3",      GDP_APISERVER_PY, "--dir",
        (dir_ / "api").string(), "--port",         std::to_string(port)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    api_ = std::make_unique<Subprocess>(
        SpawnOptions{.argv = argv, .stderr_path = (dir_ / "api.err").string()});
    json e = NextEvent(*api_, "listening", absl::Seconds(30));
    ASSERT_FALSE(e.is_null()) << api_->Stderr();
    api_port_ = e["port"].get<int>();
    if (api_client_ == nullptr) {
      absl::StatusOr<kube::ClientConfig> c = LoadKubeconfig();
      ASSERT_TRUE(c.ok()) << c.status();
      kube::RetryPolicy retry;
      retry.deadline = absl::Seconds(10);
      auto client = kube::Client::Create(*c, retry);
      ASSERT_TRUE(client.ok()) << client.status();
      api_client_ = *std::move(client);
      CreateNode();
    }
  }

  // The Node our slices belong to (a restarted emulator starts empty).
  void CreateNode() {
    absl::StatusOr<json> node =
        api_client_->Create("/api/v1/nodes", {{"apiVersion", "v1"},
                                              {"kind", "Node"},
                                              {"metadata", {{"name", kNode}}}});
    ASSERT_TRUE(node.ok()) << node.status();
  }

  absl::StatusOr<kube::ClientConfig> LoadKubeconfig() {
    return kube::LoadKubeconfig((dir_ / "api" / "kubeconfig").string());
  }

  void StartDraKubelet(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {GDP_DPCTL_BIN, "dra-kubelet",
                                     "--registry-dir", (dir_ / "reg").string(),
                                     "--json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    dra_kubelet_ = std::make_unique<Subprocess>(
        SpawnOptions{.argv = argv,
                     .stderr_path = (dir_ / "dra-kubelet.err").string(),
                     .pipe_stdin = true});
    ASSERT_FALSE(NextEvent(*dra_kubelet_, "listening").is_null())
        << dra_kubelet_->Stderr();
  }

  std::vector<std::string> DraArgs(const std::string& api = "dra") {
    return {"--device-api",
            api,
            "--node-name",
            kNode,
            "--kubeconfig",
            (dir_ / "api" / "kubeconfig").string(),
            "--kubelet-registration-dir",
            (dir_ / "reg").string(),
            "--kubelet-plugins-dir",
            (dir_ / "plugins").string(),
            "--cdi-spec-dir",
            (dir_ / "cdi").string(),
            "--proc-root",
            (dir_ / "root" / "proc").string()};
  }

  void StartDraPlugin(std::vector<std::string> extra = {},
                      const std::string& machine = "dgx-a100",
                      const std::string& api = "dra") {
    std::vector<std::string> args = DraArgs(api);
    args.insert(args.end(), extra.begin(), extra.end());
    StartPlugin(args, machine);
  }

  // The next registered event of the DRA kubelet emulator.
  json Registered() {
    json e = NextEvent(*dra_kubelet_, "registered", absl::Seconds(20));
    EXPECT_FALSE(e.is_null()) << dra_kubelet_->Stderr() << plugin_->Stderr();
    EXPECT_TRUE(e.value("ok", false)) << e.dump();
    return e;
  }

  // This node's slices of our driver, or an empty list on error.
  std::vector<json> Slices() {
    kube::ListOptions o;
    o.field_selector = absl::StrCat("spec.nodeName=", kNode);
    absl::StatusOr<json> list = api_client_->List(kSlices, o);
    if (!list.ok()) return {};
    return (*list)["items"].get<std::vector<json>>();
  }

  // Every device of this node's slices, by name.
  std::map<std::string, json> SliceDevices() {
    std::map<std::string, json> out;
    for (const json& s : Slices()) {
      // A slice of shared counters (DynamicMIG) has no devices.
      for (const json& d : s["spec"].value("devices", json::array())) {
        out[d["name"].get<std::string>()] = d;
      }
    }
    return out;
  }

  // Polls the slices until `pred` holds (true) or the timeout (false).
  bool WaitForSlices(const std::function<bool(const std::vector<json>&)>& pred,
                     absl::Duration timeout = absl::Seconds(15)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (pred(Slices())) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  bool WaitForDevices(size_t n, absl::Duration timeout = absl::Seconds(15)) {
    return WaitForSlices(
        [&](const std::vector<json>&) { return SliceDevices().size() == n; },
        timeout);
  }

  // Every object the emulator refused (should be none).
  json Violations() {
    absl::StatusOr<json> v = api_client_->Get("/emulator/violations");
    return v.ok() ? *v : json("cannot read violations");
  }

  // Creates claim `name` in namespace "ns" allocated `results` ({request,
  // driver, pool, device} each); returns its UID.
  std::string CreateClaim(const std::string& name, const json& results,
                          const json& config = json::array()) {
    json request = {{"name", "gpu"},
                    {"exactly", {{"deviceClassName", "gpu.nvidia.com"}}}};
    json claim = {{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceClaim"},
                  {"metadata", {{"name", name}, {"namespace", "ns"}}}};
    claim["spec"]["devices"]["requests"] = json::array({request});
    absl::StatusOr<json> made = api_client_->Create(
        "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims", claim);
    EXPECT_TRUE(made.ok()) << made.status();
    if (!made.ok()) return "";
    if (!results.empty()) {
      json claim = *made;
      // {Result(..)} is read by nlohmann::json as the object itself.
      const json list = results.is_array() ? results : json::array({results});
      claim["status"]["allocation"]["devices"]["results"] = list;
      if (!config.empty()) {
        claim["status"]["allocation"]["devices"]["config"] = config;
      }
      absl::StatusOr<json> updated = api_client_->Update(
          absl::StrCat("/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/",
                       name, "/status"),
          claim);
      EXPECT_TRUE(updated.ok()) << updated.status();
    }
    return (*made)["metadata"]["uid"].get<std::string>();
  }

  static json Result(const std::string& device,
                     const std::string& request = "gpu",
                     const std::string& driver = kDriver,
                     const std::string& pool = kNode) {
    return {{"request", request},
            {"driver", driver},
            {"pool", pool},
            {"device", device}};
  }

  // Sends `command` (e.g. "prepare - ns/c/uid") and returns the answer
  // event (prepare, prepare_failed, unprepare or unprepare_failed).
  json KubeletCall(const std::string& command) {
    dra_kubelet_->WriteLine(command);
    const std::string verb = command.substr(0, command.find(' '));
    return NextEventWhere(
        *dra_kubelet_,
        [&](const json& e) {
          std::string ev = e.value("event", "");
          return ev == verb || ev == verb + "_failed";
        },
        absl::Seconds(30));
  }

  std::string SpecPath(const std::string& uid) {
    return (dir_ / "cdi" /
            absl::StrCat("k8s.gpu.nvidia.com-claim_", uid, ".json"))
        .string();
  }

  std::unique_ptr<Subprocess> api_, dra_kubelet_;
  std::unique_ptr<kube::Client> api_client_;
  int api_port_ = 0;
};

}  // namespace gdp

#endif  // GDP_TESTS_INTEGRATION_DRA_FIXTURE_H_
