// For tests: a throwaway PKI made with OpenSSL at test time.
#ifndef GDP_KUBE_TESTING_TLS_H_
#define GDP_KUBE_TESTING_TLS_H_

#include <string>

#include "absl/status/statusor.h"

namespace gdp::kube::testing {

// Files (under `dir`) and PEM text of one test PKI.
struct TestPki {
  std::string ca_cert_file, server_cert_file, server_key_file;
  std::string client_cert_file, client_key_file;
  std::string ca_cert_pem, server_cert_pem, server_key_pem;
  std::string client_cert_pem, client_key_pem;
};

// Makes a CA (a unique name each call) and, signed by it, a server
// certificate for 127.0.0.1, ::1 and localhost and a client certificate with
// CN `client_cn` and O "test-group"; P-256 keys, valid from an hour ago for a
// day. Writes ca.crt, server.crt, server.key, client.crt and client.key into
// `dir`, which must exist. Thread-safe.
// Result on failure: Internal naming the OpenSSL step, or the errno's
// status for a file that cannot be written.
absl::StatusOr<TestPki> MakeTestPki(const std::string& dir,
                                    const std::string& client_cn = "test-user");

// One PKI per process (made on first use in a temporary directory), for
// tests that need any. Thread-safe; aborts when it cannot be made.
const TestPki& SharedTestPki();

}  // namespace gdp::kube::testing

#endif  // GDP_KUBE_TESTING_TLS_H_
