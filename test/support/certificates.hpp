// Test certificates made with the openssl command line in a test's temporary directory: a CA, a node certificate it
// signed for 127.0.0.1/localhost (server and client use), one per broker b1..b3 that also names the broker (DNS:bN,
// as mutual TLS between brokers requires), one it signed for another name, and a self-signed rogue.
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace moonmq::test {

struct certificates {
  std::string dir;
  std::string ca() const { return dir + "/ca.crt"; }
  std::string node_cert() const { return dir + "/node.crt"; }
  std::string node_key() const { return dir + "/node.key"; }
  std::string elsewhere_cert() const { return dir + "/elsewhere.crt"; }  ///< signed by the CA for another host
  std::string elsewhere_key() const { return dir + "/elsewhere.key"; }
  std::string rogue_cert() const { return dir + "/rogue.crt"; }  ///< self-signed
  std::string rogue_key() const { return dir + "/rogue.key"; }
  std::string broker_cert(const std::string& id) const { return dir + "/" + id + ".crt"; }  ///< b1, b2 or b3
  std::string broker_key(const std::string& id) const { return dir + "/" + id + ".key"; }
};

/// Writes the certificates into `dir` (which must exist).
inline certificates make_certificates(const std::string& dir) {
  auto signed_for = [&](const std::string& name, const std::string& cn, const std::string& san) {
    return "openssl req -newkey rsa:2048 -nodes -keyout " + name + ".key -out " + name + ".csr -subj /CN=" + cn +
           " 2>/dev/null && printf 'subjectAltName=" + san + "\\nextendedKeyUsage=serverAuth,clientAuth\\n' > " + name +
           ".cnf && openssl x509 -req -in " + name + ".csr -CA ca.crt -CAkey ca.key -CAcreateserial -out " + name +
           ".crt -days 2 -extfile " + name + ".cnf 2>/dev/null";
  };
  const std::string gen =
      "cd '" + dir +
      "' && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=moonmq-test-ca "
      "2>/dev/null && " +
      signed_for("node", "127.0.0.1", "IP:127.0.0.1,DNS:localhost") + " && " +
      signed_for("b1", "b1", "IP:127.0.0.1,DNS:localhost,DNS:b1") + " && " +
      signed_for("b2", "b2", "IP:127.0.0.1,DNS:localhost,DNS:b2") + " && " +
      signed_for("b3", "b3", "IP:127.0.0.1,DNS:localhost,DNS:b3") + " && " +
      signed_for("elsewhere", "elsewhere.invalid", "DNS:elsewhere.invalid") +
      " && openssl req -x509 -newkey rsa:2048 -nodes -keyout rogue.key -out rogue.crt -days 2 -subj /CN=rogue "
      "2>/dev/null";
  if (std::system(gen.c_str()) != 0) throw std::runtime_error("openssl could not make the test certificates");
  return {dir};
}

/// The `Server.Cluster.Tls` section for mutual TLS with broker `id`'s certificate (for moonmqd_process::configure).
inline std::string mutual_tls_section(const certificates& c, const std::string& id) {
  return "\"Tls\": {\"CertFile\": \"" + c.broker_cert(id) + "\", \"KeyFile\": \"" + c.broker_key(id) +
         "\", \"CaFile\": \"" + c.ca() + "\", \"Verify\": \"required\"}";
}

}  // namespace moonmq::test
