// mm-ca: the user's local certificate authority, which signs the certificates mm-record shows
// browsers while it records HTTPS and the ones replay's web servers present. Shows it, makes
// leaf certificates with it, and adds it to (or removes it from) the NSS database that Chromium
// reads on Linux. Runs with the invoking user's rights only.
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "tls/certificate_authority.hh"
#include "util/args.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace fs = std::filesystem;

namespace {
const char* const kNickname = "Mahimahi local CA";

const ProgramInfo kInfo{"mm-ca", "[--ca-dir DIR] [show|path|spki|create|trust|untrust|leaf] ...",
                        "Manages the local certificate authority whose certificates mm-record presents for HTTPS\n"
                        "sites while recording and replay's servers present while replaying. It is made on first use\n"
                        "(EC P-256, valid 20 years); its private key stays in the CA directory, readable by you only.\n"
                        "\n"
                        "Commands:\n"
                        "  show              the CA's files, subject, validity and SPKI hash, with the Chromium flag\n"
                        "                    that accepts its certificates (the default command)\n"
                        "  path              print the CA certificate's path\n"
                        "  spki              print base64(SHA-256(SubjectPublicKeyInfo)) for Chromium's\n"
                        "                    --ignore-certificate-errors-spki-list\n"
                        "  create            make the CA if there is none; say whether it was made or existed\n"
                        "  trust             add the CA to your NSS database (Chromium, curl built with NSS...), as\n"
                        "                    \"Mahimahi local CA\" trusted to identify web sites; needs certutil\n"
                        "                    (Debian/Ubuntu package libnss3-tools). Running it again replaces it.\n"
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
                        "  --help            show this help\n"
                        "  --version         show the version\n"};

std::string home_directory() {
  const char* home = std::getenv("HOME");
  if (home && home[0] == '/') return home;
  const struct passwd* entry = ::getpwuid(::getuid());
  if (entry && entry->pw_dir && entry->pw_dir[0] == '/') return entry->pw_dir;
  throw UserError("cannot find your home directory; set HOME or give --nssdb DIR");
}

std::string format_date(std::time_t time) {
  char text[64];
  struct tm parts {};
  ::gmtime_r(&time, &parts);
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &parts);
  return text;
}

// ---- certutil ----

struct ProgramResult {
  int status = 0;  // as a shell reports it
  std::string out, errors;
};

// The first executable `name` on $PATH, or nullopt.
std::optional<std::string> find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string directories = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= directories.size()) {
    const size_t end = std::min(directories.find(':', start), directories.size());
    const std::string directory = end > start ? directories.substr(start, end - start) : ".";
    const std::string candidate = directory + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

std::string certutil_path() {
  static const std::optional<std::string> found = find_program("certutil");
  if (!found) {
    throw UserError(
        "certutil is not installed; install it (Debian/Ubuntu: sudo apt install libnss3-tools; "
        "Fedora: sudo dnf install nss-tools) and run this again");
  }
  return *found;
}

// Runs certutil with `arguments` (no shell), standard input from /dev/null so that it never
// waits for a password, and collects its output.
ProgramResult run_certutil(const std::vector<std::string>& arguments) {
  const std::string program = certutil_path();

  int out_pipe[2], error_pipe[2];
  check_syscall("pipe2", ::pipe2(out_pipe, O_CLOEXEC));
  FileDescriptor out_read(out_pipe[0]), out_write(out_pipe[1]);
  check_syscall("pipe2", ::pipe2(error_pipe, O_CLOEXEC));
  FileDescriptor error_read(error_pipe[0]), error_write(error_pipe[1]);
  const int null = check_syscall("open /dev/null", ::open("/dev/null", O_RDONLY | O_CLOEXEC));
  FileDescriptor null_fd(null);

  SpawnOptions options;
  options.argv0 = "certutil";
  options.stdin_fd = null_fd.get();
  options.stdout_fd = out_write.get();
  options.stderr_fd = error_write.get();
  pid_t pid = -1;
  try {
    pid = spawn_program(program, arguments, options);
  } catch (const SystemError& e) {
    return ProgramResult{127, "", std::string(e.what()) + "\n"};  // "cannot run PATH: reason", as a shell says
  }
  out_write.close();
  error_write.close();
  null_fd.close();

  ProgramResult result;
  pollfd fds[2] = {{out_read.get(), POLLIN, 0}, {error_read.get(), POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.errors};
  int open_streams = 2;
  while (open_streams > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw SystemError("poll");
    }
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        open_streams--;
      }
    }
  }
  result.status = wait_for_exit(pid);
  return result;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line.empty() ? "no message" : line;
}

// An NSS database directory, given as DIR or sql:DIR.
struct NssDatabase {
  fs::path directory;
  std::string argument() const { return "sql:" + directory.string(); }
  bool exists() const { return fs::exists(directory / "cert9.db"); }
};

NssDatabase nss_database(const std::optional<std::string>& option) {
  std::string directory = option ? *option : home_directory() + "/.pki/nssdb";
  if (directory.rfind("sql:", 0) == 0) directory = directory.substr(4);
  if (directory.rfind("dbm:", 0) == 0) {
    throw UsageError("--nssdb " + *option + ": old dbm: databases are not supported; give the directory of a cert9.db");
  }
  if (directory.empty()) throw UsageError("--nssdb needs a directory");
  return {fs::absolute(directory)};
}

// The PEM text NSS holds under our nickname ("" if none).
std::string nss_certificates(const NssDatabase& db) {
  const ProgramResult listed = run_certutil({"-L", "-n", kNickname, "-a", "-d", db.argument()});
  return listed.status == 0 ? listed.out : "";
}

std::string without_whitespace(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  }
  return out;
}

// Deletes every certificate with our nickname; returns how many.
int remove_from_nss(const NssDatabase& db) {
  int removed = 0;
  while (removed < 100 && !nss_certificates(db).empty()) {
    const ProgramResult deleted = run_certutil({"-D", "-n", kNickname, "-d", db.argument()});
    if (deleted.status != 0) {
      throw UserError("certutil could not remove \"" + std::string(kNickname) + "\" from " + db.argument() + ": " +
                      first_line(deleted.errors) + "; check that the database is writable by you");
    }
    removed++;
  }
  return removed;
}

void make_private_directories(const fs::path& directory) {
  fs::path so_far;
  for (const auto& part : directory) {
    if (part.empty()) continue;
    so_far /= part;
    if (::mkdir(so_far.c_str(), 0700) != 0 && errno != EEXIST) {
      throw UserError("cannot create " + so_far.string() + ": " + std::strerror(errno) +
                      "; give --nssdb a writable directory");
    }
  }
}

int trust(const CertificateAuthority& ca, const NssDatabase& db, bool default_database) {
  certutil_path();  // fail early, before creating anything, if it is missing
  if (!db.exists()) {
    make_private_directories(db.directory);
    const ProgramResult made = run_certutil({"-N", "--empty-password", "-d", db.argument()});
    if (made.status != 0) {
      throw UserError("certutil could not create the NSS database " + db.argument() + ": " + first_line(made.errors) +
                      "; check that the directory is writable by you, or give another with --nssdb");
    }
    std::cout << "created the NSS database " << db.argument() << "\n";
  }
  const int replaced = remove_from_nss(db);
  const ProgramResult added =
      run_certutil({"-A", "-n", kNickname, "-t", "C,,", "-i", ca.certificate_path().string(), "-d", db.argument()});
  if (added.status != 0) {
    throw UserError("certutil could not import " + ca.certificate_path().string() + " into " + db.argument() + ": " +
                    first_line(added.errors) + "; check that the database is writable by you");
  }
  std::cout << (replaced ? "re-imported" : "imported") << " \"" << kNickname << "\" (" << ca.certificate_path().string()
            << ") into " << db.argument() << ", trusted to identify web sites\n";
  if (default_database)
    std::cout << "Chromium started from now on accepts the certificates mm-record and replay present.\n";
  return 0;
}

int untrust(const NssDatabase& db) {
  if (!db.exists()) {
    std::cout << "nothing to remove: there is no NSS database at " << db.argument() << "\n";
    return 0;
  }
  const int removed = remove_from_nss(db);
  if (removed) {
    std::cout << "removed \"" << kNickname << "\" from " << db.argument() << "\n";
  } else {
    std::cout << "\"" << kNickname << "\" was not in " << db.argument() << "\n";
  }
  return 0;
}

// Whether NSS trusts this CA, for `show`; never fails.
std::string nss_status(const CertificateAuthority& ca) {
  try {
    const NssDatabase db = nss_database(std::nullopt);
    if (!db.exists()) return "no (no NSS database at " + db.argument() + "; run mm-ca trust)";
    if (!find_program("certutil")) return "unknown (certutil is not installed: package libnss3-tools)";
    const std::string held = without_whitespace(nss_certificates(db));
    if (held.empty()) return "no (run mm-ca trust)";
    if (held.find(without_whitespace(ca.certificate_pem())) == std::string::npos) {
      return "no: " + db.argument() + " holds another \"" + kNickname + "\" (run mm-ca trust to replace it)";
    }
    return "yes, in " + db.argument();
  } catch (const std::exception& e) {
    return std::string("unknown (") + e.what() + ")";
  }
}

int show(const CertificateAuthority& ca, bool created) {
  const std::string spki = ca.spki_sha256_base64();
  std::cout << "directory       " << ca.directory().string() << (created ? "  (CA created now)" : "") << "\n"
            << "certificate     " << ca.certificate_path().string() << "\n"
            << "subject         " << ca.subject() << "\n"
            << "valid           " << format_date(ca.not_before()) << " to " << format_date(ca.not_after()) << "\n"
            << "SPKI SHA-256    " << spki << "\n"
            << "trusted by NSS  " << nss_status(ca) << "\n"
            << "\n"
            << "Chromium flag (accepts this CA's certificates without trusting it system-wide):\n"
            << "  --ignore-certificate-errors-spki-list=" << spki << "\n"
            << "curl:\n"
            << "  --cacert " << ca.certificate_path().string() << "\n";
  return 0;
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
  if (command == "untrust") return untrust(nss_database(nssdb));

  bool created = false;
  const auto trust_db = command == "trust" ? std::optional<NssDatabase>(nss_database(nssdb)) : std::nullopt;
  CertificateAuthority ca = CertificateAuthority::load_or_create(directory, &created);
  if (command == "path") {
    std::cout << ca.certificate_path().string() << "\n";
  } else if (command == "spki") {
    std::cout << ca.spki_sha256_base64() << "\n";
  } else if (command == "create") {
    std::cout << (created ? "created a new CA in " : "a CA already exists in ") << directory.string() << "\n";
    if (created) std::cout << "Next: mm-ca trust (for Chromium), or mm-ca show for the flag that accepts it.\n";
  } else if (command == "show") {
    return show(ca, created);
  } else if (command == "trust") {
    return trust(ca, *trust_db, !nssdb);
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
