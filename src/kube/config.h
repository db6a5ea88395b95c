// Where the Kubernetes API server is and how to authenticate to it: the
// in-cluster service-account configuration, or a kubeconfig file.
#ifndef GDP_KUBE_CONFIG_H_
#define GDP_KUBE_CONFIG_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gdp::kube {

// How to reach one API server. A plain value; copy freely.
struct ClientConfig {
  // "https://host:port" with an optional path prefix ("https://h/k8s/c1");
  // http:// is allowed for tests only. An IPv6 host is bracketed.
  std::string server;
  // The cluster CA as a PEM file, or as PEM text (kubeconfig's
  // certificate-authority-data, decoded). Only these CAs are trusted; with
  // neither (and insecure_skip_tls_verify false) the system store is used.
  std::string ca_file;
  std::string ca_data;
  // Accepts any server certificate. For development clusters only.
  bool insecure_skip_tls_verify = false;
  // A bearer token file (the projected service-account token), re-read when
  // it changes (inode, size or mtime) and after a 401.
  std::string token_file;
  // A static bearer token, used when token_file is empty.
  std::string token;
  // A client certificate and key, as PEM files or PEM text.
  std::string client_cert_file, client_key_file;
  std::string client_cert_data, client_key_data;
  std::string user_agent = "gpu-device-plugin";
  // Connect + read limit for one attempt of a unary call, and for connecting
  // a watch.
  absl::Duration request_timeout = absl::Seconds(10);
  // The namespace of the kubeconfig context or of the service account
  // (sa_dir/namespace); empty when neither says. Informational: the client
  // does not use it.
  std::string default_namespace;
};

// The in-cluster config as client-go builds it: server
// "https://<host>:<port>" (an IPv6 host bracketed), CA <sa_dir>/ca.crt,
// token file <sa_dir>/token, namespace from <sa_dir>/namespace when present.
// `host` and `port` are the values of KUBERNETES_SERVICE_HOST and
// KUBERNETES_SERVICE_PORT, which the caller reads (nothing here reads the
// environment).
// Result on failure: FailedPrecondition naming what is missing (an empty
// host or port, an unreadable or empty token, an unreadable CA file).
absl::StatusOr<ClientConfig> InClusterConfig(
    std::string_view host, std::string_view port,
    const std::string& sa_dir =
        "/var/run/secrets/kubernetes.io/serviceaccount");

// The config of a kubeconfig file's context `context` (current-context when
// empty): the cluster's server, certificate-authority (a path relative to the
// kubeconfig's directory) or certificate-authority-data,
// insecure-skip-tls-verify; the user's token or tokenFile,
// client-certificate / client-key (paths) or their -data forms; the
// context's namespace. Files named are not read here (Client::Create reads
// them).
// Result on failure: NotFound for a missing file, context, cluster or user;
// InvalidArgument for malformed YAML, a missing or mistyped field or bad
// base64; Unimplemented for exec and auth-provider users, username/password,
// proxy-url and tls-server-name. Each message names the file and the field.
absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path,
                                            const std::string& context = "");

// "host:port" with an IPv6 host (one containing ':') bracketed, unless it
// already is.
std::string JoinHostPort(std::string_view host, std::string_view port);

}  // namespace gdp::kube

#endif  // GDP_KUBE_CONFIG_H_
