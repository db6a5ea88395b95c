// End to end: the node labels written by the real binary on the fake NVML,
// standalone (`labels --oneshot`, the loop until SIGTERM) and beside the
// daemon (--labels), rewritten after a config reload changes sharing; and
// as NFD NodeFeature objects (--use-node-feature-api) in the API server
// emulator, which checks them against NFD's CRD.
#include <signal.h>

#include <sstream>

#include "tests/integration/dra_fixture.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class LabelsTest : public E2ETest {
 protected:
  std::string Output() { return (dir_ / "features.d" / "gfd").string(); }

  std::string ReadOutput() {
    std::ifstream in(Output());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // Polls the output file until it contains `line` (10 s).
  bool OutputHas(const std::string& line) {
    absl::Time deadline = absl::Now() + kTimeout;
    while (absl::Now() < deadline) {
      if (ReadOutput().find(line + "\n") != std::string::npos) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  std::vector<std::string> LabelFlags() {
    std::ofstream(dir_ / "product_name") << "DGX A100\n";
    return {"--output-file", Output(), "--machine-type-file",
            (dir_ / "product_name").string()};
  }
};

TEST_F(LabelsTest, OneshotWritesTheFileAndExits) {
  std::vector<std::string> args = {"labels", "--oneshot", "--no-timestamp"};
  for (const std::string& a : LabelFlags()) args.push_back(a);
  StartPlugin(args);
  ASSERT_EQ(plugin_->Wait(kTimeout), 0) << plugin_->Stderr();
  const std::string text = ReadOutput();
  EXPECT_THAT(text,
              HasSubstr("nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB\n"));
  EXPECT_THAT(text, HasSubstr("nvidia.com/gpu.count=8\n"));
  EXPECT_THAT(text, HasSubstr("nvidia.com/gpu.machine=DGX-A100\n"));
  EXPECT_THAT(text, HasSubstr("nvidia.com/gpu.mode=compute\n"));
  EXPECT_THAT(text, Not(HasSubstr("gfd.timestamp")));
  EXPECT_FALSE(fs::exists(dir_ / "kp" / "nvidia-gpu.sock"));  // no plugin
}

TEST_F(LabelsTest, LoopRemovesTheFileOnSigterm) {
  std::vector<std::string> args = {"labels", "--sleep-interval", "100ms"};
  for (const std::string& a : LabelFlags()) args.push_back(a);
  StartPlugin(args, "pcie-t4");
  ASSERT_TRUE(OutputHas("nvidia.com/gpu.product=Tesla-T4"))
      << plugin_->Stderr();
  EXPECT_THAT(ReadOutput(), HasSubstr("nvidia.com/gfd.timestamp="));
  plugin_->Signal(SIGTERM);
  ASSERT_EQ(plugin_->Wait(kTimeout), 0) << plugin_->Stderr();
  EXPECT_FALSE(fs::exists(Output()));
}

TEST_F(LabelsTest, WithoutNvmlFailsOrLabelsNoGpus) {
  std::vector<std::string> args = {
      "--driver-root", (dir_ / "nodriver").string(), "labels", "--oneshot"};
  for (const std::string& a : LabelFlags()) args.push_back(a);
  StartPlugin(args, "dgx-a100", {"LD_LIBRARY_PATH"});
  EXPECT_EQ(plugin_->Wait(kTimeout), 1);
  EXPECT_FALSE(fs::exists(Output()));

  args.push_back("--fail-on-init-error=false");
  StartPlugin(args, "dgx-a100", {"LD_LIBRARY_PATH"});
  ASSERT_EQ(plugin_->Wait(kTimeout), 0) << plugin_->Stderr();
  const std::string text = ReadOutput();
  EXPECT_THAT(text, HasSubstr("nvidia.com/gfd.timestamp="));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
}

TEST_F(LabelsTest, DaemonLabelsAndRelabelsAfterReload) {
  const std::string config = WriteConfig("version: v1\n");
  std::vector<std::string> args = {"--labels", "--config-file", config};
  for (const std::string& a : LabelFlags()) args.push_back(a);
  StartAndList(args);
  ASSERT_TRUE(OutputHas("nvidia.com/gpu.replicas=1")) << plugin_->Stderr();
  EXPECT_THAT(ReadOutput(),
              HasSubstr("nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB\n"));

  WriteConfig(
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: 4\n");
  ASSERT_TRUE(OutputHas("nvidia.com/gpu.replicas=4")) << plugin_->Stderr();
  const std::string text = ReadOutput();
  EXPECT_THAT(
      text, HasSubstr("nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB-SHARED\n"));
  EXPECT_THAT(text,
              HasSubstr("nvidia.com/gpu.sharing-strategy=time-slicing\n"));

  plugin_->Signal(SIGTERM);
  ASSERT_EQ(plugin_->Wait(kTimeout), 0) << plugin_->Stderr();
  EXPECT_FALSE(fs::exists(Output()));  // removed on exit, as GFD does
}

// --use-node-feature-api against the API server emulator.
class NodeFeatureLabelsTest : public DraTest {
 protected:
  static constexpr char kObject[] =
      "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/default/nodefeatures/"
      "nvidia-features-for-node-1";

  std::vector<std::string> Args(std::vector<std::string> extra) {
    std::ofstream(dir_ / "product_name") << "DGX A100\n";
    std::vector<std::string> args = {"labels",
                                     "--use-node-feature-api",
                                     "--node-name",
                                     kNode,
                                     "--kubeconfig",
                                     (dir_ / "api" / "kubeconfig").string(),
                                     "--no-timestamp",
                                     "--output-file",
                                     (dir_ / "features.d" / "gfd").string(),
                                     "--machine-type-file",
                                     (dir_ / "product_name").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // The NodeFeature once `pred` holds for it (10 s), else null.
  json WaitForObject(const std::function<bool(const json&)>& pred) {
    absl::Time deadline = absl::Now() + kTimeout;
    while (absl::Now() < deadline) {
      absl::StatusOr<json> got = api_client_->Get(kObject);
      if (got.ok() && pred(*got)) return *got;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return nullptr;
  }

  static std::string Label(const json& o, const std::string& name) {
    const json& labels = o["spec"]["labels"];
    return labels.contains(name) ? labels[name].get<std::string>() : "";
  }
};

TEST_F(NodeFeatureLabelsTest, CreatesKeepsAndUpdatesTheObject) {
  StartApiServer();
  absl::StatusOr<json> node = api_client_->Get("/api/v1/nodes/node-1");
  ASSERT_TRUE(node.ok()) << node.status();
  const std::string node_uid = (*node)["metadata"]["uid"];
  const std::string config = WriteConfig("version: v1\n");
  StartPlugin(Args({"--sleep-interval", "100ms", "--config-file", config}),
              "pcie-t4");

  json o = WaitForObject([](const json& o) {
    return Label(o, "nvidia.com/gpu.product") == "Tesla-T4";
  });
  ASSERT_FALSE(o.is_null()) << plugin_->Stderr() << api_->Stderr();
  EXPECT_EQ(Label(o, "nvidia.com/gpu.count"), "2");
  EXPECT_EQ(Label(o, "nvidia.com/gpu.machine"), "DGX-A100");
  EXPECT_EQ(Label(o, "nvidia.com/gpu.replicas"), "1");
  EXPECT_FALSE(o["spec"]["labels"].contains("nvidia.com/gfd.timestamp"));
  EXPECT_EQ(o["spec"]["features"], json({{"flags", json::object()},
                                         {"attributes", json::object()},
                                         {"instances", json::object()}}));
  EXPECT_EQ(o["metadata"]["labels"],
            json({{"nfd.node.kubernetes.io/node-name", kNode}}));
  EXPECT_EQ(o["metadata"]["ownerReferences"],
            json::array({{{"apiVersion", "v1"},
                          {"kind", "Node"},
                          {"name", kNode},
                          {"uid", node_uid}}}));
  EXPECT_FALSE(fs::exists(dir_ / "features.d" / "gfd"));  // no file

  // Unchanged labels: many intervals pass without a write.
  const std::string version = o["metadata"]["resourceVersion"];
  absl::SleepFor(absl::Seconds(1));
  absl::StatusOr<json> again = api_client_->Get(kObject);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)["metadata"]["resourceVersion"], version);

  // The labels change (sharing, after SIGHUP): the object is updated.
  WriteConfig(
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: 4\n");
  plugin_->Signal(SIGHUP);
  o = WaitForObject(
      [](const json& o) { return Label(o, "nvidia.com/gpu.replicas") == "4"; });
  ASSERT_FALSE(o.is_null()) << plugin_->Stderr();
  EXPECT_EQ(Label(o, "nvidia.com/gpu.product"), "Tesla-T4-SHARED");
  EXPECT_NE(o["metadata"]["resourceVersion"], version);

  // Another writer changes a label or the owner: put back at the next
  // labelling.
  o["spec"]["labels"]["nvidia.com/gpu.count"] = "9";
  o["metadata"].erase("ownerReferences");
  ASSERT_TRUE(api_client_->Update(kObject, o).ok());
  o = WaitForObject([](const json& o) {
    return Label(o, "nvidia.com/gpu.count") == "2" &&
           o["metadata"].contains("ownerReferences");
  });
  ASSERT_FALSE(o.is_null()) << plugin_->Stderr();

  // Deleted: made again.
  ASSERT_TRUE(api_client_->Delete(kObject).ok());
  o = WaitForObject([](const json&) { return true; });
  ASSERT_FALSE(o.is_null()) << plugin_->Stderr();

  // On exit the object stays, as GFD leaves it.
  plugin_->Signal(SIGTERM);
  ASSERT_EQ(plugin_->Wait(kTimeout), 0) << plugin_->Stderr();
  EXPECT_TRUE(api_client_->Get(kObject).ok());
  EXPECT_EQ(Violations(), json::array());
}

TEST_F(NodeFeatureLabelsTest, BesideTheDaemon) {
  StartApiServer();
  std::vector<std::string> args = Args({});
  args[0] = "--labels";  // the daemon, not the labels subcommand
  StartAndList(args, "nvidia.com/gpu", "pcie-t4");
  json o = WaitForObject([](const json& o) {
    return Label(o, "nvidia.com/gpu.product") == "Tesla-T4";
  });
  ASSERT_FALSE(o.is_null()) << plugin_->Stderr();
  EXPECT_EQ(o["metadata"]["ownerReferences"][0]["kind"], "Node");
  EXPECT_FALSE(fs::exists(dir_ / "features.d" / "gfd"));
  plugin_->Signal(SIGTERM);
  ASSERT_EQ(plugin_->Wait(kTimeout), 0) << plugin_->Stderr();
  EXPECT_TRUE(api_client_->Get(kObject).ok());
  EXPECT_EQ(Violations(), json::array());
}

TEST_F(NodeFeatureLabelsTest, OneshotFailsClearly) {
  StartApiServer();
  // No --node-name.
  std::vector<std::string> args = Args({"--oneshot"});
  args.erase(args.begin() + 2, args.begin() + 4);
  StartPlugin(args, "pcie-t4", {"NODE_NAME"});
  EXPECT_EQ(plugin_->Wait(kTimeout), 1);
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("--node-name (NODE_NAME)"));

  // A Node the API server does not have.
  args = Args({"--oneshot"});
  args[3] = "node-2";
  StartPlugin(args, "pcie-t4");
  EXPECT_EQ(plugin_->Wait(kTimeout), 1);
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("reading Node \"node-2\""));

  // The env var names NVIDIA's GFD reads.
  args = Args({"--oneshot"});
  args.erase(args.begin() + 1);  // --use-node-feature-api
  for (const char* variable :
       {"GFD_USE_NODE_FEATURE_API", "USE_NODE_FEATURE_API"}) {
    ASSERT_TRUE(api_client_->Delete(kObject).ok() ||
                !api_client_->Get(kObject).ok());
    setenv(variable, "true", 1);
    StartPlugin(args, "pcie-t4");
    EXPECT_EQ(plugin_->Wait(kTimeout), 0) << variable << plugin_->Stderr();
    unsetenv(variable);
    EXPECT_TRUE(api_client_->Get(kObject).ok()) << variable;
  }
  EXPECT_EQ(Violations(), json::array());
}

}  // namespace
}  // namespace gdp
