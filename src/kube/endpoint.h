// Internal to gdp_kube: the parsed server URL, the TLS material of a
// ClientConfig, and the httplib clients built from them.
#ifndef GDP_KUBE_ENDPOINT_H_
#define GDP_KUBE_ENDPOINT_H_

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <signal.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kube/config.h"
#include "kube/server_url.h"

namespace httplib {
class ClientImpl;
}

namespace gdp::kube::internal {

// The TLS material of a ClientConfig, read and parsed once and shared by
// every connection of one Client. Immutable after Create; thread-safe.
class TlsSettings {
 public:
  // Reads the CA and client certificate files (or parses the PEM data).
  // Result on failure: InvalidArgument naming the file or field that is
  // unreadable or holds no usable PEM, or a key that does not match the
  // certificate.
  static absl::StatusOr<std::shared_ptr<const TlsSettings>> Create(
      const ClientConfig& config);

  ~TlsSettings();
  TlsSettings(const TlsSettings&) = delete;
  TlsSettings& operator=(const TlsSettings&) = delete;

  // A new httplib client for `url`: for https an SSLClient that presents
  // the client certificate, speaks TLS 1.2 or later and (unless insecure)
  // makes the handshake fail when the server's certificate does not chain
  // to a configured CA (the system store when none is configured) or does
  // not name url.host (DNS name or IP address); for http a plain one. Either
  // way: keep-alive off, no URL re-encoding, TCP_NODELAY. The settings must
  // outlive the client. Result on failure: Internal when OpenSSL cannot make a
  // context.
  absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> NewHttpClient(
      const ServerUrl& url) const;

 private:
  TlsSettings() = default;

  bool insecure_ = false;
  STACK_OF(X509) * trusted_ = nullptr;  // the CAs; null: the system store
  X509* client_cert_ = nullptr;
  STACK_OF(X509) * client_chain_ = nullptr;  // intermediates after the leaf
  EVP_PKEY* client_key_ = nullptr;
};

// Blocks SIGPIPE in the calling thread for its lifetime and discards a
// SIGPIPE raised meanwhile by a write to a closed socket (OpenSSL writes
// without MSG_NOSIGNAL), so a dead connection is an error and not the end
// of the process. Restores the thread's mask on destruction.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock();
  ~ScopedSigpipeBlock();
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  bool was_blocked_ = false;
  bool was_pending_ = false;
};

// Forgets the outcome of this thread's last server certificate
// verification; call before an exchange.
void ResetLastVerifyError();

// Whether a server certificate verification failed on this thread since
// ResetLastVerifyError().
bool LastVerifyFailed();

// A transport failure (`error`, an httplib::Error, returned by an exchange
// on this thread) in words: the certificate verification error when that
// failed, else httplib's words and OpenSSL's last error. Clears this
// thread's OpenSSL error queue.
std::string DescribeTransportError(int error);

}  // namespace gdp::kube::internal

#endif  // GDP_KUBE_ENDPOINT_H_
