#include "kube/endpoint.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <pthread.h>

#include <ctime>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kube/files.h"

namespace gdp::kube::internal {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

// The oldest error on this thread's OpenSSL queue in words ("" if none);
// clears the queue.
std::string OpenSslError() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof(buf));
  return buf;
}

// The PEM text of a setting given as data or as a file (data wins); ""
// when neither is set.
absl::StatusOr<std::string> PemText(const std::string& file,
                                    const std::string& data,
                                    absl::string_view what) {
  if (!data.empty()) return data;
  if (file.empty()) return std::string();
  absl::StatusOr<std::string> text = ReadSmallFile(file);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", text.status().message()));
  }
  return text;
}

// Every certificate in `pem`, in order. Result on failure: InvalidArgument
// when there is none.
absl::StatusOr<STACK_OF(X509) *> ParseCerts(const std::string& pem,
                                            absl::string_view what) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  STACK_OF(X509)* certs = sk_X509_new_null();
  if (bio == nullptr || certs == nullptr) {
    sk_X509_free(certs);
    return absl::InternalError("out of memory parsing certificates");
  }
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    sk_X509_push(certs, cert);
  }
  ERR_clear_error();  // the end of the input reads as an error
  if (sk_X509_num(certs) == 0) {
    sk_X509_free(certs);
    return absl::InvalidArgumentError(
        absl::StrCat(what, " holds no PEM certificate"));
  }
  return certs;
}

// The outcome of the last server certificate verification on this thread
// (handshakes run on the calling thread).
thread_local long last_verify_error = X509_V_OK;

// Verifies the server's chain, and its name through the SSL's
// X509_VERIFY_PARAM, against the configured CAs only (`arg`, a
// STACK_OF(X509)) or, when `arg` is null, the context's store (the system
// CAs); records the outcome for DescribeTransportError.
int VerifyServer(X509_STORE_CTX* ctx, void* arg) {
  if (arg != nullptr) {
    X509_STORE_CTX_set0_trusted_stack(ctx, static_cast<STACK_OF(X509)*>(arg));
  }
  int ok = X509_verify_cert(ctx);
  last_verify_error = ok == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
  if (ok != 1 && last_verify_error == X509_V_OK) {
    last_verify_error = X509_V_ERR_UNSPECIFIED;
  }
  return ok;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const TlsSettings>> TlsSettings::Create(
    const ClientConfig& config) {
  std::shared_ptr<TlsSettings> tls(new TlsSettings());
  tls->insecure_ = config.insecure_skip_tls_verify;

  absl::StatusOr<std::string> ca =
      PemText(config.ca_file, config.ca_data,
              config.ca_data.empty() ? "CA file " + config.ca_file : "CA data");
  if (!ca.ok()) return ca.status();
  if (!ca->empty()) {
    absl::StatusOr<STACK_OF(X509)*> certs = ParseCerts(
        *ca, config.ca_data.empty() ? "CA file " + config.ca_file : "CA data");
    if (!certs.ok()) return certs.status();
    tls->trusted_ = *certs;
  }

  std::string cert_what =
      config.client_cert_data.empty()
          ? "client certificate file " + config.client_cert_file
          : "client certificate data";
  std::string key_what = config.client_key_data.empty()
                             ? "client key file " + config.client_key_file
                             : "client key data";
  absl::StatusOr<std::string> cert_pem =
      PemText(config.client_cert_file, config.client_cert_data, cert_what);
  if (!cert_pem.ok()) return cert_pem.status();
  absl::StatusOr<std::string> key_pem =
      PemText(config.client_key_file, config.client_key_data, key_what);
  if (!key_pem.ok()) return key_pem.status();
  if (cert_pem->empty() != key_pem->empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs a client key, and a key a certificate");
  }
  if (!cert_pem->empty()) {
    absl::StatusOr<STACK_OF(X509)*> certs = ParseCerts(*cert_pem, cert_what);
    if (!certs.ok()) return certs.status();
    tls->client_cert_ = sk_X509_shift(*certs);
    tls->client_chain_ = *certs;
    BioPtr bio(
        BIO_new_mem_buf(key_pem->data(), static_cast<int>(key_pem->size())));
    tls->client_key_ =
        PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
    if (tls->client_key_ == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          key_what, " holds no PEM private key: ", OpenSslError()));
    }
    if (X509_check_private_key(tls->client_cert_, tls->client_key_) != 1) {
      OpenSslError();
      return absl::InvalidArgumentError(
          absl::StrCat(key_what, " does not match the ", cert_what));
    }
  }
  return tls;
}

TlsSettings::~TlsSettings() {
  sk_X509_pop_free(trusted_, X509_free);
  sk_X509_pop_free(client_chain_, X509_free);
  X509_free(client_cert_);
  EVP_PKEY_free(client_key_);
}

absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> TlsSettings::NewHttpClient(
    const ServerUrl& url) const {
  std::unique_ptr<httplib::ClientImpl> http;
  if (url.https) {
    auto ssl = std::make_unique<httplib::SSLClient>(url.host, url.port,
                                                    client_cert_, client_key_);
    if (!ssl->is_valid()) {
      return absl::InternalError(
          absl::StrCat("cannot create a TLS context: ", OpenSslError()));
    }
    SSL_CTX* ctx = ssl->ssl_context();
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    for (int i = 0; i < sk_X509_num(client_chain_); ++i) {
      SSL_CTX_add1_chain_cert(ctx, sk_X509_value(client_chain_, i));
    }
    // OpenSSL verifies, not httplib: httplib adds the system CAs to any
    // store, and its host check misreads IP addresses of the other family.
    ssl->enable_server_certificate_verification(false);
    if (!insecure_) {
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
      if (X509_VERIFY_PARAM_set1_ip_asc(param, url.host.c_str()) != 1) {
        ERR_clear_error();  // not an IP address: a DNS name
        X509_VERIFY_PARAM_set_hostflags(param,
                                        X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (X509_VERIFY_PARAM_set1_host(param, url.host.c_str(), 0) != 1) {
          return absl::InternalError(absl::StrCat(
              "cannot verify host name ", url.host, ": ", OpenSslError()));
        }
      }
      if (trusted_ == nullptr && SSL_CTX_set_default_verify_paths(ctx) != 1) {
        return absl::InternalError(
            absl::StrCat("cannot load the system CA store: ", OpenSslError()));
      }
      SSL_CTX_set_cert_verify_callback(ctx, &VerifyServer, trusted_);
    }
    http = std::move(ssl);
  } else {
    http = std::make_unique<httplib::ClientImpl>(url.host, url.port);
  }
  http->set_keep_alive(false);
  http->set_url_encode(false);
  http->set_tcp_nodelay(true);
  http->set_follow_location(false);
  return http;
}

ScopedSigpipeBlock::ScopedSigpipeBlock() {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  was_blocked_ = sigismember(&old, SIGPIPE) == 1;
  sigset_t pending;
  sigpending(&pending);
  was_pending_ = sigismember(&pending, SIGPIPE) == 1;
}

ScopedSigpipeBlock::~ScopedSigpipeBlock() {
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  if (!was_pending_) {
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE) == 1) {
      struct timespec zero = {0, 0};
      sigtimedwait(&pipe_set, nullptr, &zero);
    }
  }
  if (!was_blocked_) pthread_sigmask(SIG_UNBLOCK, &pipe_set, nullptr);
}

void ResetLastVerifyError() { last_verify_error = X509_V_OK; }

bool LastVerifyFailed() { return last_verify_error != X509_V_OK; }

std::string DescribeTransportError(int error) {
  std::string text;
  if (last_verify_error != X509_V_OK) {
    text = absl::StrCat("server certificate verification failed: ",
                        X509_verify_cert_error_string(last_verify_error));
    ERR_clear_error();
    return text;
  }
  text = httplib::to_string(static_cast<httplib::Error>(error));
  std::string ssl_error = OpenSslError();
  if (!ssl_error.empty()) absl::StrAppend(&text, " (", ssl_error, ")");
  return text;
}

}  // namespace gdp::kube::internal
