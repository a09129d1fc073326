// SPDX-License-Identifier: GPL-3.0-or-later
// The local CA in an NSS database, through certutil (see nss_database.hh).
#include "tls/nss_database.hh"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>

#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/private_directory.hh"

namespace fs = std::filesystem;

namespace {
std::string home_directory() {
  const char* home = std::getenv("HOME");
  if (home && home[0] == '/') return home;
  const struct passwd* entry = ::getpwuid(::getuid());
  if (entry && entry->pw_dir && entry->pw_dir[0] == '/') return entry->pw_dir;
  throw UserError("cannot find your home directory; set HOME or give --nssdb DIR");
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line.empty() ? "no message" : line;
}

std::string without_whitespace(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  }
  return out;
}

// The PEM text NSS holds under our nickname ("" if none).
std::string held_certificates(const NssDatabase& db, const CertutilRunner& certutil) {
  const CertutilResult listed = certutil({"-L", "-n", kNssNickname, "-a", "-d", db.argument()});
  return listed.status == 0 ? listed.out : "";
}

// Deletes every certificate with our nickname; returns how many.
int remove_all(const NssDatabase& db, const CertutilRunner& certutil) {
  int removed = 0;
  while (removed < 100 && !held_certificates(db, certutil).empty()) {
    const CertutilResult deleted = certutil({"-D", "-n", kNssNickname, "-d", db.argument()});
    if (deleted.status != 0) {
      throw UserError("certutil could not remove \"" + std::string(kNssNickname) + "\" from " + db.argument() + ": " +
                      first_line(deleted.errors) + "; check that the database is writable by you");
    }
    removed++;
  }
  return removed;
}
}  // namespace

std::string certutil_path() {
  static const std::optional<std::string> found = find_program("certutil");
  if (!found) {
    throw UserError(
        "certutil is not installed; install it (Debian/Ubuntu: sudo apt install libnss3-tools; "
        "Fedora: sudo dnf install nss-tools) and run this again");
  }
  return *found;
}

CertutilResult run_certutil(const std::vector<std::string>& arguments) {
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
  options.default_signals = true;  // mm-pageload blocks SIGINT and SIGTERM for its signalfd
  pid_t pid = -1;
  try {
    pid = spawn_program(program, arguments, options);
  } catch (const SystemError& e) {
    return CertutilResult{127, "", std::string(e.what()) + "\n"};  // "cannot run PATH: reason", as a shell says
  }
  out_write.close();
  error_write.close();
  null_fd.close();

  CertutilResult result;
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

bool NssDatabase::exists() const { return fs::exists(directory / "cert9.db"); }

NssDatabase nss_database(const std::optional<std::string>& option) {
  std::string directory = option ? *option : home_directory() + "/.pki/nssdb";
  if (directory.rfind("sql:", 0) == 0) directory = directory.substr(4);
  if (directory.rfind("dbm:", 0) == 0) {
    throw UsageError("--nssdb " + *option + ": old dbm: databases are not supported; give the directory of a cert9.db");
  }
  if (directory.empty()) throw UsageError("--nssdb needs a directory");
  return {fs::absolute(directory)};
}

void nss_create(const NssDatabase& db, const CertutilRunner& certutil, const std::string& fix) {
  make_private_directory(db.directory, {.fix = fix});
  const CertutilResult made = certutil({"-N", "--empty-password", "-d", db.argument()});
  if (made.status != 0) {
    throw UserError("certutil could not create the NSS database " + db.argument() + ": " + first_line(made.errors) +
                    "; " + fix);
  }
}

void nss_add_trusted(const NssDatabase& db, const fs::path& certificate, const std::string& nickname,
                     const CertutilRunner& certutil) {
  const CertutilResult added =
      certutil({"-A", "-n", nickname, "-t", "C,,", "-i", certificate.string(), "-d", db.argument()});
  if (added.status != 0) {
    throw UserError("certutil could not import " + certificate.string() + " into " + db.argument() + ": " +
                    first_line(added.errors) + "; check that the database is writable by you");
  }
}

void nss_trust(const CertificateAuthority& ca, const NssDatabase& db, bool default_database,
               const CertutilRunner& certutil, std::ostream& out) {
  if (!db.exists()) {
    nss_create(db, certutil, "give --nssdb a writable directory");
    out << "created the NSS database " << db.argument() << "\n";
  }
  const int replaced = remove_all(db, certutil);
  nss_add_trusted(db, ca.certificate_path(), kNssNickname, certutil);
  out << (replaced ? "re-imported" : "imported") << " \"" << kNssNickname << "\" (" << ca.certificate_path().string()
      << ") into " << db.argument() << ", trusted to identify web sites\n";
  if (default_database) out << "Chromium started from now on accepts the certificates mm-record and replay present.\n";
}

void nss_untrust(const NssDatabase& db, const CertutilRunner& certutil, std::ostream& out) {
  if (!db.exists()) {
    out << "nothing to remove: there is no NSS database at " << db.argument() << "\n";
    return;
  }
  if (remove_all(db, certutil)) {
    out << "removed \"" << kNssNickname << "\" from " << db.argument() << "\n";
  } else {
    out << "\"" << kNssNickname << "\" was not in " << db.argument() << "\n";
  }
}

std::string nss_status(const CertificateAuthority& ca, const CertutilRunner* certutil) {
  try {
    const NssDatabase db = nss_database(std::nullopt);
    if (!db.exists()) return "no (no NSS database at " + db.argument() + "; run mm-ca trust)";
    if (!certutil) return "unknown (certutil is not installed: package libnss3-tools)";
    const std::string held = without_whitespace(held_certificates(db, *certutil));
    if (held.empty()) return "no (run mm-ca trust)";
    if (held.find(without_whitespace(ca.certificate_pem())) == std::string::npos) {
      return "no: " + db.argument() + " holds another \"" + kNssNickname + "\" (run mm-ca trust to replace it)";
    }
    return "yes, in " + db.argument();
  } catch (const std::exception& e) {
    return std::string("unknown (") + e.what() + ")";
  }
}
