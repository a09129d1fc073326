// SPDX-License-Identifier: GPL-3.0-or-later
// mm-ca: the user's local certificate authority, which signs the certificates mm-record shows
// browsers while it records HTTPS and the ones replay's web servers present. Shows it, makes
// leaf certificates with it, and adds it to (or removes it from) the NSS database that Chromium
// reads on Linux. Runs with the invoking user's rights only.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "tls/certificate_authority.hh"
#include "tls/nss_database.hh"
#include "util/args.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/time_text.hh"

namespace fs = std::filesystem;

namespace {
const ProgramInfo kInfo{"mm-ca", "[--ca-dir DIR] [show|path|spki|create|trust|untrust|leaf] ...",
                        "Manages the local certificate authority whose certificates mm-record presents for HTTPS\n"
                        "sites while recording and replay's servers present while replaying. It is made on first use\n"
                        "by mm-record, mm-replay and every command here but path and untrust (EC P-256, valid 20\n"
                        "years); its private key stays in the CA directory, readable by you only.\n"
                        "\n"
                        "Commands:\n"
                        "  show              the CA's files, subject, validity and SPKI hash, with the Chromium flag\n"
                        "                    that accepts its certificates (the default command)\n"
                        "  path              print the CA certificate's path, for curl --cacert \"$(mm-ca path)\";\n"
                        "                    it creates nothing: with no CA there yet, it prints the path all the\n"
                        "                    same, says so on standard error and exits with status 1\n"
                        "  spki              print base64(SHA-256(SubjectPublicKeyInfo)) for Chromium's\n"
                        "                    --ignore-certificate-errors-spki-list\n"
                        "  create            make the CA if there is none; say whether it was made or existed\n"
                        "  trust             add the CA to your NSS database (Chromium and Firefox read it), as\n"
                        "                    \"Mahimahi local CA\" trusted to identify web sites; needs certutil\n"
                        "                    (Debian/Ubuntu package libnss3-tools). Running it again replaces it.\n"
                        "                    curl uses OpenSSL's store, not NSS: give it --cacert \"$(mm-ca path)\".\n"
                        "  untrust           remove it from the NSS database (no error if absent)\n"
                        "  leaf NAME... --cert FILE --key FILE\n"
                        "                    write a certificate for the host names or IP addresses NAME... (chain:\n"
                        "                    certificate then CA, PEM) to FILE, and its private key to the other FILE\n"
                        "\n"
                        "Options:\n"
                        "  --ca-dir DIR      the CA directory (default: $MAHIMAHI_CA_DIR, else\n"
                        "                    $XDG_DATA_HOME/mahimahi/ca, else ~/.local/share/mahimahi/ca)\n"
                        "  --nssdb DIR       the NSS database for trust and untrust (default: ~/.pki/nssdb, made if\n"
                        "                    absent); for Firefox, give its profile directory\n"
                        "  --cert FILE, --key FILE\n"
                        "                    for leaf: the files to write the certificate chain and its private\n"
                        "                    key (mode 0600) to\n"
                        "  --help            show this help\n"
                        "  --version         show the version\n"};

const CertutilRunner kCertutil = run_certutil;

int show(const CertificateAuthority& ca, bool created) {
  const std::string spki = ca.spki_sha256_base64();
  std::cout << "directory       " << ca.directory().string() << (created ? "  (CA created now)" : "") << "\n"
            << "certificate     " << ca.certificate_path().string() << "\n"
            << "subject         " << ca.subject() << "\n"
            << "valid           " << utc_text(ca.not_before()) << " to " << utc_text(ca.not_after()) << "\n"
            << "SPKI SHA-256    " << spki << "\n"
            << "trusted by NSS  " << nss_status(ca, find_program("certutil") ? &kCertutil : nullptr) << "\n"
            << "\n"
            << "Chromium flag (accepts this CA's certificates without trusting it system-wide):\n"
            << "  --ignore-certificate-errors-spki-list=" << spki << "\n"
            << "curl:\n"
            << "  --cacert " << ca.certificate_path().string() << "\n";
  return 0;
}

// mm-ca path: the path, and nothing created. A script's curl --cacert "$(mm-ca path)" then fails
// naming the missing file, after the line here that says how to make it.
int print_path(const fs::path& directory) {
  const fs::path certificate = CertificateAuthority::certificate_file(directory);
  std::cout << certificate.string() << "\n";
  struct stat st {};
  if (::stat(certificate.c_str(), &st) == 0) return 0;
  const int err = errno;
  std::cout.flush();
  if (err == ENOENT) {
    std::cerr << "mm-ca: there is no CA in " << directory.string()
              << " yet: mm-ca create makes one (mm-record also does, on first use)\n";
  } else {
    std::cerr << "mm-ca: cannot use " << certificate.string() << ": " << std::strerror(err) << "\n";
  }
  return 1;
}

int run(int argc, char** argv) {
  std::optional<std::string> ca_dir, nssdb, certificate, key;
  const auto set = [](std::optional<std::string>& target, const char* name) {
    return [&target, name](std::string_view value) {
      if (value.empty()) throw UsageError(std::string("--") + name + " needs a non-empty value");
      target = std::string(value);
    };
  };
  ArgScanner scanner(kInfo, {{"ca-dir", true, set(ca_dir, "ca-dir")},
                             {"nssdb", true, set(nssdb, "nssdb")},
                             {"cert", true, set(certificate, "cert")},
                             {"key", true, set(key, "key")}});
  std::vector<std::string> words;
  for (auto& rest : scanner.scan(argc, argv, [&](std::string_view word) {
         words.emplace_back(word);
         return true;
       })) {
    words.push_back(std::move(rest));
  }

  const std::string command = words.empty() ? "show" : words.front();
  const std::vector<std::string> operands(words.empty() ? words.end() : words.begin() + 1, words.end());
  static const std::vector<std::string> kCommands = {"show", "path", "spki", "create", "trust", "untrust", "leaf"};
  if (std::find(kCommands.begin(), kCommands.end(), command) == kCommands.end()) {
    throw UsageError("unknown command \"" + command + "\" (show, path, spki, create, trust, untrust or leaf)");
  }
  if (command != "leaf" && !operands.empty())
    throw UsageError(command + " takes no arguments, not \"" + operands.front() + "\"");
  if (nssdb && command != "trust" && command != "untrust") throw UsageError("--nssdb goes with trust or untrust only");
  if ((certificate || key) && command != "leaf") throw UsageError("--cert and --key go with leaf only");
  if (command == "leaf") {
    if (operands.empty())
      throw UsageError("leaf needs at least one host name, e.g. mm-ca leaf example.com --cert c.pem --key c.key");
    if (!certificate || !key) throw UsageError("leaf needs --cert FILE and --key FILE");
    if (fs::absolute(*certificate) == fs::absolute(*key)) throw UsageError("--cert and --key must be different files");
  }

  const fs::path directory = ca_dir ? fs::absolute(*ca_dir) : CertificateAuthority::default_directory();
  if (command == "untrust") {
    nss_untrust(nss_database(nssdb), kCertutil, std::cout);
    return 0;
  }

  if (command == "path") return print_path(directory);

  bool created = false;
  const auto trust_db = command == "trust" ? std::optional<NssDatabase>(nss_database(nssdb)) : std::nullopt;
  CertificateAuthority ca = CertificateAuthority::load_or_create(directory, &created);
  if (command == "spki") {
    std::cout << ca.spki_sha256_base64() << "\n";
  } else if (command == "create") {
    std::cout << (created ? "created a new CA in " : "a CA already exists in ") << directory.string() << "\n";
    if (created) std::cout << "Next: mm-ca trust (for Chromium), or mm-ca show for the flag that accepts it.\n";
  } else if (command == "show") {
    return show(ca, created);
  } else if (command == "trust") {
    certutil_path();  // fail early, before creating anything, if it is missing
    nss_trust(ca, *trust_db, !nssdb, kCertutil, std::cout);
  } else if (command == "leaf") {
    ca.write_leaf(operands, *certificate, *key);
    std::cout << "wrote " << *certificate << " (certificate and CA) and " << *key << " (private key) for";
    for (const auto& name : operands) std::cout << " " << name;
    std::cout << "\n";
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "mm-ca: " << e.what() << "\n" << usage_line(kInfo) << "\nTry 'mm-ca --help' for more information.\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "mm-ca: " << e.what() << "\n";
    return 1;
  }
}
