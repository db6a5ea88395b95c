#include "kube/testing_tls.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kube/test_server.h"
#include "testing/temp_dir.h"

namespace gdp::kube::testing {
namespace {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using CertPtr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

absl::Status SslError(absl::string_view step) {
  char buf[256] = "";
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code != 0) ERR_error_string_n(code, buf, sizeof(buf));
  return absl::InternalError(absl::StrCat("OpenSSL: ", step, ": ", buf));
}

// A certificate for `key` with subject CN `cn` (and O `org` when not
// empty), signed by `issuer`/`issuer_key` (self-signed when null), with
// the extensions as (NID, openssl.cnf-style value).
absl::StatusOr<CertPtr> NewCert(
    EVP_PKEY* key, const std::string& cn, const std::string& org, X509* issuer,
    EVP_PKEY* issuer_key,
    const std::vector<std::pair<int, std::string>>& extensions) {
  static std::atomic<uint64_t> serial{0};
  CertPtr cert(X509_new());
  if (cert == nullptr) return SslError("X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set_uint64(
      X509_get_serialNumber(cert.get()),
      static_cast<uint64_t>(absl::ToUnixMicros(absl::Now())) * 16 + serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()),
                             -1, -1, 0);
  if (!org.empty()) {
    X509_NAME_add_entry_by_txt(
        name, "O", MBSTRING_ASC,
        reinterpret_cast<const unsigned char*>(org.c_str()), -1, -1, 0);
  }
  X509_set_issuer_name(
      cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : cert.get(), cert.get(),
                 nullptr, nullptr, 0);
  for (const auto& [nid, value] : extensions) {
    X509_EXTENSION* ext =
        X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (ext == nullptr) return SslError(absl::StrCat("extension ", value));
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key,
                EVP_sha256()) == 0) {
    return SslError("X509_sign");
  }
  return cert;
}

absl::StatusOr<std::string> ToPem(X509* cert, EVP_PKEY* key) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()),
                                                &BIO_free);
  int ok = cert != nullptr
               ? PEM_write_bio_X509(bio.get(), cert)
               : PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0,
                                          nullptr, nullptr);
  if (ok != 1) return SslError("PEM_write");
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

absl::Status WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) return absl::ErrnoToStatus(errno, absl::StrCat("writing ", path));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TestPki> MakeTestPki(const std::string& dir,
                                    const std::string& client_cn) {
  static std::atomic<int> ca_number{0};
  KeyPtr ca_key(EVP_EC_gen("P-256"));
  KeyPtr server_key(EVP_EC_gen("P-256"));
  KeyPtr client_key(EVP_EC_gen("P-256"));
  if (!ca_key || !server_key || !client_key) return SslError("EVP_EC_gen");

  absl::StatusOr<CertPtr> ca =
      NewCert(ca_key.get(),
              absl::StrCat("gdp test CA ", absl::ToUnixMicros(absl::Now()), "-",
                           ca_number++),
              "", nullptr, nullptr,
              {{NID_basic_constraints, "critical,CA:TRUE"},
               {NID_key_usage, "critical,keyCertSign,cRLSign"}});
  if (!ca.ok()) return ca.status();
  absl::StatusOr<CertPtr> server =
      NewCert(server_key.get(), "gdp test server", "", ca->get(), ca_key.get(),
              {{NID_basic_constraints, "CA:FALSE"},
               {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
               {NID_ext_key_usage, "serverAuth"},
               {NID_subject_alt_name, "IP:127.0.0.1,IP:::1,DNS:localhost"}});
  if (!server.ok()) return server.status();
  absl::StatusOr<CertPtr> client = NewCert(
      client_key.get(), client_cn, "test-group", ca->get(), ca_key.get(),
      {{NID_basic_constraints, "CA:FALSE"},
       {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
       {NID_ext_key_usage, "clientAuth"}});
  if (!client.ok()) return client.status();

  TestPki pki;
  pki.ca_cert_file = dir + "/ca.crt";
  pki.server_cert_file = dir + "/server.crt";
  pki.server_key_file = dir + "/server.key";
  pki.client_cert_file = dir + "/client.crt";
  pki.client_key_file = dir + "/client.key";
  struct Item {
    X509* cert;
    EVP_PKEY* key;
    std::string* pem;
    const std::string* file;
  };
  for (const Item& item : {
           Item{ca->get(), nullptr, &pki.ca_cert_pem, &pki.ca_cert_file},
           Item{server->get(), nullptr, &pki.server_cert_pem,
                &pki.server_cert_file},
           Item{nullptr, server_key.get(), &pki.server_key_pem,
                &pki.server_key_file},
           Item{client->get(), nullptr, &pki.client_cert_pem,
                &pki.client_cert_file},
           Item{nullptr, client_key.get(), &pki.client_key_pem,
                &pki.client_key_file},
       }) {
    absl::StatusOr<std::string> pem = ToPem(item.cert, item.key);
    if (!pem.ok()) return pem.status();
    *item.pem = *pem;
    absl::Status written = WriteFile(*item.file, *pem);
    if (!written.ok()) return written;
  }
  return pki;
}

const TestPki& SharedTestPki() {
  // The directory goes at exit, with the static's destruction.
  static const ::gdp::testing::TempDir dir("kube-pki");
  static const TestPki* const pki = [] {
    absl::StatusOr<TestPki> made = MakeTestPki(dir.path().string());
    if (!made.ok()) {
      fprintf(stderr, "MakeTestPki: %s\n", made.status().ToString().c_str());
      abort();
    }
    return new TestPki(*std::move(made));
  }();
  return *pki;
}

}  // namespace gdp::kube::testing
