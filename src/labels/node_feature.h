// The labels as a Node Feature Discovery NodeFeature object
// (nfd.k8s-sigs.io/v1alpha1), NVIDIA's gpu-feature-discovery's
// --use-node-feature-api output: one object per node, named
// "nvidia-features-for-<node>", labelled nfd.node.kubernetes.io/node-name,
// whose spec.labels NFD's master puts on the node.
#ifndef GDP_LABELS_NODE_FEATURE_H_
#define GDP_LABELS_NODE_FEATURE_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "kube/client.h"
#include "kube/config.h"
#include "labels/labels.h"

namespace gdp {

// NFD's label naming the node a NodeFeature is for.
inline constexpr char kNodeFeatureNodeLabel[] =
    "nfd.node.kubernetes.io/node-name";

// "nvidia-features-for-<node>", as NVIDIA's GFD names the object.
std::string NodeFeatureName(const std::string& node_name);

// The Node `node_name` with uid `node_uid` as an owner reference (not a
// controller): the object goes with the Node.
nlohmann::json NodeOwnerReference(const std::string& node_name,
                                  const std::string& node_uid);

// The NodeFeature for `labels` on `node_name` in `namespace_name`:
// apiVersion, kind, metadata {name, namespace, labels {node-name label},
// ownerReferences [NodeOwnerReference]}, spec {features {flags, attributes,
// instances: empty}, labels}. `node_uid` empty: no owner reference.
nlohmann::json NodeFeatureObject(const Labels& labels,
                                 const std::string& node_name,
                                 const std::string& node_uid,
                                 const std::string& namespace_name);

// Whether `existing` (as read from the API server) already says what
// `wanted` (a NodeFeatureObject) says: the same spec, the node-name label
// and the owner references. Other metadata is not compared.
bool NodeFeatureUpToDate(const nlohmann::json& existing,
                         const nlohmann::json& wanted);

// Writes the labels as this node's NodeFeature through the API server.
// Thread-safe: Write() calls run one at a time; Cancel() from any thread.
class NodeFeatureWriter {
 public:
  // `api`: how to reach the API server; `node_name`: this node (required);
  // `namespace_name`: where the object goes (empty: "default", as GFD's
  // --namespace default).
  // Result on failure: InvalidArgument naming --node-name when it is empty
  // or not a valid object name; the client's error (a CA that cannot be
  // read ...).
  static absl::StatusOr<std::unique_ptr<NodeFeatureWriter>> Create(
      kube::ClientConfig api, const std::string& node_name,
      const std::string& namespace_name, kube::RetryPolicy retry = {});

  // Reads the Node (for its uid, each time), then the NodeFeature: creates it
  // when missing, updates it when NodeFeatureUpToDate is false (replacing
  // the node-name label, the owner references and the spec), else writes
  // nothing. A write that loses a race (409: created or changed
  // meanwhile) reads again and retries, at most 3 times in all; each call
  // also retries per the RetryPolicy.
  // Result: whether the object was created or updated. On failure: the
  // API server's error, the message naming the Node or the NodeFeature
  // and what was being done (NotFound for a missing Node).
  absl::StatusOr<bool> Write(const Labels& labels);

  // Makes a Write in flight, and every later one, fail Cancelled promptly.
  void Cancel() { client_->Cancel(); }

  const std::string& name() const { return name_; }
  const std::string& namespace_name() const { return namespace_; }

 private:
  NodeFeatureWriter(std::unique_ptr<kube::Client> client, std::string node,
                    std::string namespace_name);

  const std::unique_ptr<kube::Client> client_;
  const std::string node_;
  const std::string namespace_;
  const std::string name_;
  absl::Mutex mu_;  // one Write at a time
};

}  // namespace gdp

#endif  // GDP_LABELS_NODE_FEATURE_H_
