// LoadKubeconfig: the subset of the kubeconfig format a node agent needs.
#include <yaml-cpp/yaml.h>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "kube/config.h"
#include "kube/files.h"

namespace gdp::kube {
namespace {

// Reads fields of one kubeconfig file, with errors that name the file and
// the field. Type queries come after IsDefined(): yaml-cpp throws on a type
// query of a missing key's node.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {
    size_t slash = path.rfind('/');
    dir_ = slash == std::string::npos ? "." : path.substr(0, slash);
    if (dir_.empty()) dir_ = "/";
  }

  absl::Status Error(absl::StatusCode code, absl::string_view field,
                     absl::string_view what) const {
    return absl::Status(code,
                        absl::StrCat("kubeconfig ", path_, ": ", field, what));
  }

  // The string at `node[key]`; "" when absent or null.
  absl::StatusOr<std::string> String(const YAML::Node& node,
                                     const std::string& key,
                                     absl::string_view where) const {
    YAML::Node value = node[key];
    if (!value.IsDefined() || value.IsNull()) return std::string();
    if (!value.IsScalar()) {
      return Error(absl::StatusCode::kInvalidArgument,
                   absl::StrCat(where, ".", key), " is not a string");
    }
    return value.Scalar();
  }

  absl::StatusOr<bool> Bool(const YAML::Node& node, const std::string& key,
                            absl::string_view where) const {
    YAML::Node value = node[key];
    if (!value.IsDefined() || value.IsNull()) return false;
    bool result = false;
    if (!value.IsScalar() || !YAML::convert<bool>::decode(value, result)) {
      return Error(absl::StatusCode::kInvalidArgument,
                   absl::StrCat(where, ".", key), " is not a boolean");
    }
    return result;
  }

  // The base64-decoded `node[key]`; "" when absent.
  absl::StatusOr<std::string> Data(const YAML::Node& node,
                                   const std::string& key,
                                   absl::string_view where) const {
    absl::StatusOr<std::string> encoded = String(node, key, where);
    if (!encoded.ok() || encoded->empty()) return encoded;
    std::string decoded;
    if (!absl::Base64Unescape(*encoded, &decoded)) {
      return Error(absl::StatusCode::kInvalidArgument,
                   absl::StrCat(where, ".", key), " is not valid base64");
    }
    return decoded;
  }

  // A path from the file, made absolute against the kubeconfig's directory.
  std::string Resolve(const std::string& p) const {
    if (p.empty() || p[0] == '/') return p;
    return dir_ + "/" + p;
  }

  // The `item` map of the entry of list `list` named `name`, e.g.
  // clusters[name=c].cluster.
  absl::StatusOr<YAML::Node> Named(const YAML::Node& root,
                                   const std::string& list,
                                   const std::string& item,
                                   const std::string& name) const {
    std::string where = absl::StrCat(list, "[name=", name, "]");
    YAML::Node entries = root[list];
    if (entries.IsDefined() && !entries.IsNull() && !entries.IsSequence()) {
      return Error(absl::StatusCode::kInvalidArgument, list, " is not a list");
    }
    if (entries.IsDefined() && entries.IsSequence()) {
      for (const YAML::Node& entry : entries) {
        if (!entry.IsMap()) continue;
        YAML::Node entry_name = entry["name"];
        if (!entry_name.IsDefined() || !entry_name.IsScalar() ||
            entry_name.Scalar() != name) {
          continue;
        }
        YAML::Node value = entry[item];
        if (!value.IsDefined() || value.IsNull()) {
          // An entry with nothing set (e.g. a user with no credentials).
          return YAML::Node(YAML::NodeType::Map);
        }
        if (!value.IsMap()) {
          return Error(absl::StatusCode::kInvalidArgument,
                       absl::StrCat(where, ".", item), " is not a map");
        }
        return value;
      }
    }
    return Error(absl::StatusCode::kNotFound, where, " not found");
  }

 private:
  std::string path_;
  std::string dir_;
};

absl::Status ReadCluster(const Reader& r, const YAML::Node& cluster,
                         const std::string& where, ClientConfig& config) {
  for (const char* unsupported : {"proxy-url", "tls-server-name"}) {
    absl::StatusOr<std::string> value = r.String(cluster, unsupported, where);
    if (!value.ok()) return value.status();
    if (!value->empty()) {
      return r.Error(absl::StatusCode::kUnimplemented,
                     absl::StrCat(where, ".", unsupported),
                     " is not supported");
    }
  }
  absl::StatusOr<std::string> server = r.String(cluster, "server", where);
  if (!server.ok()) return server.status();
  if (server->empty()) {
    return r.Error(absl::StatusCode::kInvalidArgument,
                   absl::StrCat(where, ".server"), " is missing");
  }
  config.server = *server;
  absl::StatusOr<std::string> ca_data =
      r.Data(cluster, "certificate-authority-data", where);
  if (!ca_data.ok()) return ca_data.status();
  absl::StatusOr<std::string> ca_file =
      r.String(cluster, "certificate-authority", where);
  if (!ca_file.ok()) return ca_file.status();
  absl::StatusOr<bool> insecure =
      r.Bool(cluster, "insecure-skip-tls-verify", where);
  if (!insecure.ok()) return insecure.status();
  config.insecure_skip_tls_verify = *insecure;
  if (!ca_data->empty()) {
    config.ca_data = *ca_data;  // the data wins over the file, as in client-go
  } else {
    config.ca_file = r.Resolve(*ca_file);
  }
  if (*insecure && (!config.ca_data.empty() || !config.ca_file.empty())) {
    return r.Error(absl::StatusCode::kInvalidArgument,
                   absl::StrCat(where, ".insecure-skip-tls-verify"),
                   " cannot be combined with a certificate authority");
  }
  return absl::OkStatus();
}

absl::Status ReadUser(const Reader& r, const YAML::Node& user,
                      const std::string& where, ClientConfig& config) {
  for (const char* unsupported :
       {"exec", "auth-provider", "username", "password", "as", "as-groups"}) {
    YAML::Node value = user[unsupported];
    if (value.IsDefined() && !value.IsNull()) {
      return r.Error(absl::StatusCode::kUnimplemented,
                     absl::StrCat(where, ".", unsupported),
                     " is not supported (use token, tokenFile or a client "
                     "certificate)");
    }
  }
  absl::StatusOr<std::string> token = r.String(user, "token", where);
  if (!token.ok()) return token.status();
  absl::StatusOr<std::string> token_file = r.String(user, "tokenFile", where);
  if (!token_file.ok()) return token_file.status();
  config.token = *token;
  config.token_file = r.Resolve(*token_file);

  struct PemField {
    const char* data_key;
    const char* file_key;
    std::string* data;
    std::string* file;
  };
  for (const PemField& f :
       {PemField{"client-certificate-data", "client-certificate",
                 &config.client_cert_data, &config.client_cert_file},
        PemField{"client-key-data", "client-key", &config.client_key_data,
                 &config.client_key_file}}) {
    absl::StatusOr<std::string> data = r.Data(user, f.data_key, where);
    if (!data.ok()) return data.status();
    absl::StatusOr<std::string> file = r.String(user, f.file_key, where);
    if (!file.ok()) return file.status();
    if (!data->empty()) {
      *f.data = *data;
    } else {
      *f.file = r.Resolve(*file);
    }
  }
  bool has_cert =
      !config.client_cert_data.empty() || !config.client_cert_file.empty();
  bool has_key =
      !config.client_key_data.empty() || !config.client_key_file.empty();
  if (has_cert != has_key) {
    return r.Error(absl::StatusCode::kInvalidArgument, where,
                   has_cert ? ": client-certificate without client-key"
                            : ": client-key without client-certificate");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path,
                                            const std::string& context) {
  absl::StatusOr<std::string> content = ReadSmallFile(path, 16 << 20);
  if (!content.ok()) {
    return absl::Status(
        content.status().code(),
        absl::StrCat("kubeconfig: ", content.status().message()));
  }
  Reader r(path);
  YAML::Node root;
  try {
    root = YAML::Load(*content);
  } catch (const YAML::Exception& e) {
    return r.Error(absl::StatusCode::kInvalidArgument, "", e.what());
  }
  if (!root.IsMap()) {
    return r.Error(absl::StatusCode::kInvalidArgument, "",
                   "not a kubeconfig (the document is not a map)");
  }
  try {
    std::string context_name = context;
    if (context_name.empty()) {
      absl::StatusOr<std::string> current =
          r.String(root, "current-context", "");
      if (!current.ok()) return current.status();
      if (current->empty()) {
        return r.Error(absl::StatusCode::kInvalidArgument, "current-context",
                       " is not set and no context was given");
      }
      context_name = *current;
    }
    absl::StatusOr<YAML::Node> ctx =
        r.Named(root, "contexts", "context", context_name);
    if (!ctx.ok()) return ctx.status();
    std::string ctx_where =
        absl::StrCat("contexts[name=", context_name, "].context");
    absl::StatusOr<std::string> cluster_name =
        r.String(*ctx, "cluster", ctx_where);
    if (!cluster_name.ok()) return cluster_name.status();
    if (cluster_name->empty()) {
      return r.Error(absl::StatusCode::kInvalidArgument,
                     absl::StrCat(ctx_where, ".cluster"), " is missing");
    }
    absl::StatusOr<std::string> user_name = r.String(*ctx, "user", ctx_where);
    if (!user_name.ok()) return user_name.status();
    absl::StatusOr<std::string> ns = r.String(*ctx, "namespace", ctx_where);
    if (!ns.ok()) return ns.status();

    ClientConfig config;
    config.default_namespace = *ns;
    absl::StatusOr<YAML::Node> cluster =
        r.Named(root, "clusters", "cluster", *cluster_name);
    if (!cluster.ok()) return cluster.status();
    absl::Status status = ReadCluster(
        r, *cluster, absl::StrCat("clusters[name=", *cluster_name, "].cluster"),
        config);
    if (!status.ok()) return status;
    if (!user_name->empty()) {
      absl::StatusOr<YAML::Node> user =
          r.Named(root, "users", "user", *user_name);
      if (!user.ok()) return user.status();
      status = ReadUser(
          r, *user, absl::StrCat("users[name=", *user_name, "].user"), config);
      if (!status.ok()) return status;
    }
    return config;
  } catch (const YAML::Exception& e) {
    return r.Error(absl::StatusCode::kInvalidArgument, "", e.what());
  }
}

}  // namespace gdp::kube
