#include "labels/node_feature.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "kube/path.h"
#include "util/logging.h"

namespace gdp {
namespace {

using json = nlohmann::json;

constexpr char kGroup[] = "nfd.k8s-sigs.io";
constexpr char kVersion[] = "v1alpha1";
constexpr char kResource[] = "nodefeatures";
constexpr int kMaxWrites = 3;  // attempts when a write loses a race

// A DNS subdomain (RFC 1123) of at most 253 characters: what an object
// name must be.
bool IsDnsSubdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alnum = absl::ascii_islower(c) || absl::ascii_isdigit(c);
    bool edge = i == 0 || i + 1 == s.size() || s[i - 1] == '.' ||
                (i + 1 < s.size() && s[i + 1] == '.');
    if (alnum) continue;
    if ((c == '-' || c == '.') && !edge) continue;
    return false;
  }
  return true;
}

// `v` at `key` of an object, or null.
json Member(const json& v, const char* key) {
  if (!v.is_object()) return nullptr;
  auto it = v.find(key);
  return it == v.end() ? json(nullptr) : *it;
}

}  // namespace

std::string NodeFeatureName(const std::string& node_name) {
  return absl::StrCat("nvidia-features-for-", node_name);
}

json NodeOwnerReference(const std::string& node_name,
                        const std::string& node_uid) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"name", node_name},
          {"uid", node_uid}};
}

json NodeFeatureObject(const Labels& labels, const std::string& node_name,
                       const std::string& node_uid,
                       const std::string& namespace_name) {
  json meta = {{"name", NodeFeatureName(node_name)},
               {"namespace", namespace_name},
               {"labels", {{kNodeFeatureNodeLabel, node_name}}}};
  if (!node_uid.empty()) {
    meta["ownerReferences"] =
        json::array({NodeOwnerReference(node_name, node_uid)});
  }
  json spec_labels = json::object();
  for (const auto& [name, value] : labels) spec_labels[name] = value;
  return {{"apiVersion", absl::StrCat(kGroup, "/", kVersion)},
          {"kind", "NodeFeature"},
          {"metadata", std::move(meta)},
          {"spec",
           {{"features",
             {{"flags", json::object()},
              {"attributes", json::object()},
              {"instances", json::object()}}},
            {"labels", std::move(spec_labels)}}}};
}

bool NodeFeatureUpToDate(const json& existing, const json& wanted) {
  const json have_meta = Member(existing, "metadata");
  const json want_meta = Member(wanted, "metadata");
  json have_owners = Member(have_meta, "ownerReferences");
  if (have_owners.is_null()) have_owners = json::array();
  json want_owners = Member(want_meta, "ownerReferences");
  if (want_owners.is_null()) want_owners = json::array();
  return Member(existing, "spec") == Member(wanted, "spec") &&
         Member(have_meta, "labels") == Member(want_meta, "labels") &&
         have_owners == want_owners;
}

absl::StatusOr<std::unique_ptr<NodeFeatureWriter>> NodeFeatureWriter::Create(
    kube::ClientConfig api, const std::string& node_name,
    const std::string& namespace_name, kube::RetryPolicy retry) {
  if (node_name.empty()) {
    return absl::InvalidArgumentError(
        "--node-name (NODE_NAME) is required to write the labels as a "
        "NodeFeature (--use-node-feature-api)");
  }
  if (!IsDnsSubdomain(NodeFeatureName(node_name))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-name \"", node_name, "\": the NodeFeature name \"",
                     NodeFeatureName(node_name),
                     "\" is not a DNS subdomain of at most 253 characters"));
  }
  std::string ns = namespace_name.empty() ? "default" : namespace_name;
  if (!IsDnsSubdomain(ns) || ns.size() > 63 ||
      ns.find('.') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the namespace \"", ns, "\" for the NodeFeature is not a DNS label"));
  }
  absl::StatusOr<std::unique_ptr<kube::Client>> client =
      kube::Client::Create(std::move(api), retry);
  if (!client.ok()) {
    return absl::Status(client.status().code(),
                        absl::StrCat("NodeFeature: the API server client: ",
                                     client.status().message()));
  }
  return std::unique_ptr<NodeFeatureWriter>(
      new NodeFeatureWriter(*std::move(client), node_name, std::move(ns)));
}

NodeFeatureWriter::NodeFeatureWriter(std::unique_ptr<kube::Client> client,
                                     std::string node,
                                     std::string namespace_name)
    : client_(std::move(client)),
      node_(std::move(node)),
      namespace_(std::move(namespace_name)),
      name_(NodeFeatureName(node_)) {}

absl::StatusOr<bool> NodeFeatureWriter::Write(const Labels& labels) {
  absl::MutexLock lock(&mu_);
  // Read at each write: a Node deleted and made again has another uid, and
  // an owner reference to the old one would have the object collected.
  std::string node_uid;
  {
    absl::StatusOr<json> node =
        client_->Get(kube::ResourcePath("", "v1", "nodes", "", node_));
    if (!node.ok()) {
      return absl::Status(
          node.status().code(),
          absl::StrCat("reading Node \"", node_,
                       "\" for the NodeFeature's owner reference: ",
                       node.status().message()));
    }
    json uid = Member(Member(*node, "metadata"), "uid");
    if (!uid.is_string() || uid.get<std::string>().empty()) {
      return absl::UnknownError(
          absl::StrCat("Node \"", node_, "\" as read has no metadata.uid"));
    }
    node_uid = uid.get<std::string>();
  }
  const json wanted = NodeFeatureObject(labels, node_, node_uid, namespace_);
  const std::string collection =
      kube::ResourcePath(kGroup, kVersion, kResource, namespace_);
  const std::string path =
      kube::ResourcePath(kGroup, kVersion, kResource, namespace_, name_);
  const std::string what = absl::StrCat("NodeFeature ", namespace_, "/", name_);
  absl::Status last;
  for (int attempt = 0; attempt < kMaxWrites; ++attempt) {
    absl::StatusOr<json> existing = client_->Get(path);
    if (!existing.ok() &&
        existing.status().code() != absl::StatusCode::kNotFound) {
      return absl::Status(
          existing.status().code(),
          absl::StrCat("reading ", what, ": ", existing.status().message()));
    }
    if (!existing.ok()) {
      absl::StatusOr<json> made = client_->Create(collection, wanted);
      if (made.ok()) {
        LOG_INFO("Created {} with {} labels", what, labels.size());
        return true;
      }
      last = absl::Status(
          made.status().code(),
          absl::StrCat("creating ", what, ": ", made.status().message()));
      if (made.status().code() != absl::StatusCode::kAlreadyExists) {
        return last;
      }
      continue;  // created meanwhile: read it again
    }
    if (NodeFeatureUpToDate(*existing, wanted)) {
      VLOG(1, "{} is up to date ({} labels)", what, labels.size());
      return false;
    }
    // Keep what others set (other metadata); replace what GFD owns.
    json updated = *existing;
    updated["metadata"]["labels"] = wanted["metadata"]["labels"];
    if (wanted["metadata"].contains("ownerReferences")) {
      updated["metadata"]["ownerReferences"] =
          wanted["metadata"]["ownerReferences"];
    } else {
      updated["metadata"].erase("ownerReferences");
    }
    updated["spec"] = wanted["spec"];
    absl::StatusOr<json> put = client_->Update(path, updated);
    if (put.ok()) {
      LOG_INFO("Updated {} with {} labels", what, labels.size());
      return true;
    }
    last = absl::Status(
        put.status().code(),
        absl::StrCat("updating ", what, ": ", put.status().message()));
    // Aborted: a 409 Conflict (changed meanwhile); NotFound: deleted
    // meanwhile. Both: read again.
    if (put.status().code() != absl::StatusCode::kAborted &&
        put.status().code() != absl::StatusCode::kNotFound) {
      return last;
    }
  }
  return absl::Status(
      last.code(), absl::StrCat(last.message(), " (gave up after ", kMaxWrites,
                                " attempts)"));
}

}  // namespace gdp
