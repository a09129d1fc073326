// SPDX-License-Identifier: GPL-3.0-or-later
// nss_database, nss_trust, nss_untrust, nss_status against a fake certutil that keeps its
// "database" in memory: which commands are asked for, in which order, and what is printed.
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "expect.hh"
#include "temp_files.hh"
#include "tls/nss_database.hh"
#include "util/exception.hh"

namespace fs = std::filesystem;

namespace {
// certutil's -N, -L, -D and -A on a list of PEM texts; every call is logged by its option.
struct FakeCertutil {
  std::vector<std::string> held;
  std::string calls;  // e.g. "N L A"
  bool refuse_import = false;

  CertutilRunner runner() {
    return [this](const std::vector<std::string>& arguments) {
      const std::string& option = arguments.at(0);
      const fs::path directory = arguments.back().substr(4);  // -d sql:DIR
      calls += (calls.empty() ? "" : " ") + option.substr(1);
      CertutilResult result;
      if (option == "-N") {
        std::ofstream(directory / "cert9.db") << "db";
      } else if (option == "-L") {
        result.status = held.empty() ? 255 : 0;
        if (!held.empty()) result.out = held.front();
      } else if (option == "-D") {
        held.erase(held.begin());
      } else if (option == "-A" && refuse_import) {
        result.status = 255;
        result.errors = "certutil: could not add certificate: SEC_ERROR_READ_ONLY\nmore\n";
      } else if (option == "-A") {
        std::ifstream file(arguments.at(6));  // -A -n NICK -t C,, -i FILE
        std::stringstream text;
        text << file.rdbuf();
        held.push_back(text.str());
      }
      return result;
    };
  }
};

// Sets HOME for the life of the object.
class ScopedHome {
 public:
  explicit ScopedHome(const fs::path& home) {
    const char* old = std::getenv("HOME");
    if (old) old_ = old;
    ::setenv("HOME", home.c_str(), 1);
  }
  ~ScopedHome() {
    if (old_) {
      ::setenv("HOME", old_->c_str(), 1);
    } else {
      ::unsetenv("HOME");
    }
  }

 private:
  std::optional<std::string> old_;
};
}  // namespace

TEST(NssDatabase, named_with_or_without_sql_prefix_defaulting_to_pki_nssdb) {
  EXPECT_EQ(nss_database(std::string("sql:/x/db")).directory, fs::path("/x/db"));
  EXPECT_EQ(nss_database(std::string("/x/db")).argument(), "sql:/x/db");
  EXPECT_THROW_WITH(UsageError, nss_database(std::string("dbm:/x/db")), "old dbm: databases are not supported");
  EXPECT_THROW_WITH(UsageError, nss_database(std::string("sql:")), "--nssdb needs a directory");
  const ScopedHome home("/home/ann");
  EXPECT_EQ(nss_database(std::nullopt).directory, fs::path("/home/ann/.pki/nssdb"));
}

TEST(NssDatabase, trust_creates_the_database_then_imports_and_a_second_time_replaces) {
  TempDir tmp;
  const CertificateAuthority ca = CertificateAuthority::load_or_create(tmp.path / "ca");
  const NssDatabase db{tmp.path / "profile" / "nssdb"};
  FakeCertutil certutil;
  std::ostringstream out;
  nss_trust(ca, db, true, certutil.runner(), out);
  EXPECT_EQ(certutil.calls, "N L A");
  struct stat st {};
  ASSERT_EQ(::stat(db.directory.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(out.str(), "created the NSS database " + db.argument() + "\nimported \"Mahimahi local CA\" (" +
                           ca.certificate_path().string() + ") into " + db.argument() +
                           ", trusted to identify web sites\n"
                           "Chromium started from now on accepts the certificates mm-record and replay present.\n");
  ASSERT_EQ(certutil.held.size(), 1u);
  EXPECT_EQ(certutil.held[0], ca.certificate_pem());

  certutil.calls.clear();
  std::ostringstream again;
  nss_trust(ca, db, false, certutil.runner(), again);
  EXPECT_EQ(certutil.calls, "L D L A");
  EXPECT_EQ(again.str().rfind("re-imported \"Mahimahi local CA\"", 0), 0u) << again.str();
  EXPECT_EQ(again.str().find("Chromium"), std::string::npos);
}

TEST(NssDatabase, trust_reports_certutils_first_line) {
  TempDir tmp;
  const CertificateAuthority ca = CertificateAuthority::load_or_create(tmp.path / "ca");
  const NssDatabase db{tmp.path / "nssdb"};
  FakeCertutil certutil;
  certutil.refuse_import = true;
  std::ostringstream out;
  EXPECT_THROW_WITH(UserError, nss_trust(ca, db, false, certutil.runner(), out),
                    "into " + db.argument() +
                        ": certutil: could not add certificate: SEC_ERROR_READ_ONLY; check that the database is "
                        "writable by you");
}

TEST(NssDatabase, untrust_removes_every_copy_and_says_what_it_did) {
  TempDir tmp;
  const NssDatabase db{tmp.path};
  FakeCertutil certutil;
  std::ostringstream absent;
  nss_untrust(db, certutil.runner(), absent);
  EXPECT_EQ(absent.str(), "nothing to remove: there is no NSS database at " + db.argument() + "\n");
  EXPECT_EQ(certutil.calls, "");

  std::ofstream(tmp.path / "cert9.db") << "db";
  certutil.held = {"one", "two"};
  std::ostringstream removed;
  nss_untrust(db, certutil.runner(), removed);
  EXPECT_EQ(certutil.calls, "L D L D L");
  EXPECT_EQ(removed.str(), "removed \"Mahimahi local CA\" from " + db.argument() + "\n");
  std::ostringstream none;
  nss_untrust(db, certutil.runner(), none);
  EXPECT_EQ(none.str(), "\"Mahimahi local CA\" was not in " + db.argument() + "\n");
}

TEST(NssDatabase, status_tells_ours_from_another_and_absent) {
  TempDir tmp;
  const CertificateAuthority ca = CertificateAuthority::load_or_create(tmp.path / "ca");
  const ScopedHome home(tmp.path);
  FakeCertutil certutil;
  const CertutilRunner runner = certutil.runner();
  const std::string db = "sql:" + (tmp.path / ".pki" / "nssdb").string();
  EXPECT_EQ(nss_status(ca, &runner), "no (no NSS database at " + db + "; run mm-ca trust)");
  fs::create_directories(tmp.path / ".pki" / "nssdb");
  std::ofstream(tmp.path / ".pki" / "nssdb" / "cert9.db") << "db";
  EXPECT_EQ(nss_status(ca, nullptr), "unknown (certutil is not installed: package libnss3-tools)");
  EXPECT_EQ(nss_status(ca, &runner), "no (run mm-ca trust)");
  certutil.held = {"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"};
  EXPECT_EQ(nss_status(ca, &runner),
            "no: " + db + " holds another \"Mahimahi local CA\" (run mm-ca trust to replace it)");
  certutil.held = {ca.certificate_pem()};
  EXPECT_EQ(nss_status(ca, &runner), "yes, in " + db);
}
