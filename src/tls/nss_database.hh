// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The local CA in an NSS certificate database (Chromium's ~/.pki/nssdb on Linux, or a Firefox
// profile): adding it as "Mahimahi local CA", trusted to identify web sites; removing it; telling
// whether it is there. NSS is driven through its certutil program, which the caller runs: the
// functions here decide what to ask it and what its answers mean.
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tls/certificate_authority.hh"

// The nickname under which the CA is held.
inline constexpr char kNssNickname[] = "Mahimahi local CA";

// What certutil did: its exit status as a shell reports it, and its standard output and error.
struct CertutilResult {
  int status = 0;
  std::string out, errors;
};
// Runs certutil with the given arguments (standard input empty, so that it never waits for a
// password); throws UserError if certutil cannot be run.
using CertutilRunner = std::function<CertutilResult(const std::vector<std::string>& arguments)>;

// certutil's path on $PATH; throws UserError saying which package installs it when absent.
std::string certutil_path();
// Runs certutil (no shell) with standard input from /dev/null, so that it never waits for a
// password, and collects its output: the CertutilRunner of the programs.
CertutilResult run_certutil(const std::vector<std::string>& arguments);

// An NSS database directory.
struct NssDatabase {
  std::filesystem::path directory;
  std::string argument() const { return "sql:" + directory.string(); }  // certutil's -d
  bool exists() const;                                                  // holds a cert9.db
};

// The database named by --nssdb (DIR or sql:DIR) or, without it, ~/.pki/nssdb, ~ being $HOME if
// absolute, else the passwd entry's. Throws UsageError for dbm: or an empty name, UserError if
// there is no home directory.
NssDatabase nss_database(const std::optional<std::string>& option);

// Creates an empty database (no password) in db.directory, made private (mode 0700) if absent.
// Throws UserError with certutil's complaint and `fix`.
void nss_create(const NssDatabase& db, const CertutilRunner& certutil, const std::string& fix);
// Imports the PEM certificate file as `nickname`, trusted to identify web sites ("C,,").
// Throws UserError naming the file and certutil's first line of complaint.
void nss_add_trusted(const NssDatabase& db, const std::filesystem::path& certificate, const std::string& nickname,
                     const CertutilRunner& certutil);

// Adds the CA to `db` (creating the database, and its directory with mode 0700, if absent),
// replacing any certificate under our nickname, and says so on `out`; `default_database` adds the
// line about Chromium. Throws UserError with certutil's first line of complaint.
void nss_trust(const CertificateAuthority& ca, const NssDatabase& db, bool default_database,
               const CertutilRunner& certutil, std::ostream& out);
// Removes every certificate under our nickname from `db`, if it exists, and says what it did.
void nss_untrust(const NssDatabase& db, const CertutilRunner& certutil, std::ostream& out);
// Whether the default database trusts this CA, as a phrase for mm-ca show; never throws.
// `certutil` is null if certutil is not installed.
std::string nss_status(const CertificateAuthority& ca, const CertutilRunner* certutil);
