// SPDX-License-Identifier: GPL-3.0-or-later
// mm-pageload's loads, files and summary (see pageload_tool.hh).
#include "pageload/pageload_tool.hh"

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "pageload/load_report.hh"
#include "pageload/page_load.hh"
#include "tls/certificate_authority.hh"
#include "tls/nss_database.hh"
#include "util/args.hh"
#include "util/child_process.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/signals.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {
constexpr uint64_t kMaxCertificateBytes = 1024 * 1024;

// Writes `text` to `path` whole: a temporary file beside it, then a rename, so that a reader
// (mm-sweep) never sees half a file.
void write_whole_file(const std::string& path, const std::string& text, const std::string& option) {
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      throw UserError("cannot write " + option + " " + path + ": " + std::strerror(errno) +
                      "; give a file in a writable directory");
    }
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw UserError("cannot write " + option + " " + path + ": " + std::strerror(error) +
                    "; give a file in a writable directory");
  }
}

void write_outputs(const PageloadOptions& options, const std::vector<LoadResult>& loads) {
  if (options.csv) {
    std::string text = load_csv_header();
    for (const LoadResult& load : loads) text += load_csv_row(load);
    write_whole_file(*options.csv, text, "--csv");
  }
  if (options.json) {
    std::ostringstream text;
    write_load_json(loads, text);
    write_whole_file(*options.json, text.str(), "--json");
  }
}

std::string ms_text(const std::optional<double>& ms) {
  if (!ms) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f ms", *ms);
  return text;
}

// One line per finished load, for the terminal.
std::string progress_line(const LoadResult& load, size_t done, size_t total) {
  std::ostringstream line;
  line << "mm-pageload: [" << done << "/" << total << "] " << printable(load.url, 200) << " run " << load.run << ": "
       << status_name(load.status);
  if (load.status != LoadResult::Status::Ok) line << " (" << load.reason << ")";
  if (load.plt_ms) line << "  PLT " << ms_text(load.plt_ms);
  if (load.fcp_ms) line << "  FCP " << ms_text(load.fcp_ms);
  if (load.speed_index_ms) line << "  SI " << ms_text(load.speed_index_ms);
  if (load.requests) line << "  " << count_of(static_cast<size_t>(*load.requests), "request");
  if (load.origins) line << ", " << count_of(static_cast<size_t>(*load.origins), "origin");
  if (load.bytes) line << ", " << format_size(static_cast<uint64_t>(*load.bytes));
  return line.str();
}

// The Chromium binary: a path as given, or a name looked up in PATH.
std::string browser_program(const std::string& given) {
  if (given.find('/') != std::string::npos) {
    if (::access(given.c_str(), X_OK) != 0) {
      throw UserError("--browser " + given + ": " + std::strerror(errno) + "; give the path of a Chromium binary");
    }
    return given;
  }
  if (const auto found = find_program(given)) return *found;
  throw UserError(given +
                  " is not in PATH; install Chromium (Debian: sudo apt install chromium) or give its binary with "
                  "--browser PATH");
}

// The certificates every load's browser trusts: the user's mahimahi CA (if there is one yet:
// mm-record and mm-replay make it on first use) and the --ca files.
std::vector<fs::path> trusted_certificates(const PageloadOptions& options) {
  std::vector<fs::path> certificates;
  for (const fs::path& ca : options.cas) {
    const std::string text = read_user_file(ca.string(), "--ca", kMaxCertificateBytes, "give a CA certificate (PEM)");
    if (text.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      throw UserError("--ca " + ca.string() +
                      " holds no PEM certificate (-----BEGIN CERTIFICATE-----); give a CA "
                      "certificate in PEM form");
    }
    certificates.push_back(fs::absolute(ca));
  }
  if (!certificates.empty()) certutil_path();  // --ca needs certutil: say so before any load
  try {
    const fs::path mahimahi_ca = CertificateAuthority::certificate_file(CertificateAuthority::default_directory());
    if (fs::exists(mahimahi_ca)) {
      if (find_program("certutil")) {
        certificates.insert(certificates.begin(), mahimahi_ca);
      } else {
        std::cerr << "mm-pageload: certutil is not installed (Debian: sudo apt install libnss3-tools), so the browser "
                     "will not trust the mahimahi CA and HTTPS pages in mm-replay fail\n";
      }
    }
  } catch (const UserError&) {
    // No home directory to find a CA in: nothing of ours to trust.
  }
  return certificates;
}
}  // namespace

std::pair<int, int> parse_window(const std::string& text) {
  const size_t x = text.find('x');
  const auto side = [&](std::string_view part) {
    const uint64_t value = parse_unsigned(part, "--window");
    if (value < 1 || value > static_cast<uint64_t>(kMaxWindowSide)) {
      throw UsageError("--window " + text + ": each side must be 1 to " + std::to_string(kMaxWindowSide) + " pixels");
    }
    return static_cast<int>(value);
  };
  if (x == std::string::npos) throw UsageError("--window " + text + ": give WIDTHxHEIGHT, e.g. 1366x768");
  return {side(std::string_view(text).substr(0, x)), side(std::string_view(text).substr(x + 1))};
}

void check_url(const std::string& url) {
  if (url.size() > kMaxUrlBytes) {
    throw UsageError("URL " + printable(url, 80) + " is longer than " + std::to_string(kMaxUrlBytes) + " bytes");
  }
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      throw UsageError("URL " + printable(url, 200) + " holds a space or control byte; percent-encode it");
    }
  }
  const std::string lower = ascii_lowercase(url);
  const size_t scheme_end = lower.starts_with("http://") ? 7 : lower.starts_with("https://") ? 8 : 0;
  if (scheme_end == 0) throw UsageError("URL " + printable(url, 200) + " is not http:// or https://");
  if (scheme_end >= url.size() || url[scheme_end] == '/' || url[scheme_end] == '?' || url[scheme_end] == '#') {
    throw UsageError("URL " + printable(url, 200) + " has no host");
  }
}

int run_pageload(const PageloadOptions& options) {
  // Signals become events of the load loop, so that an interrupted load closes its browser.
  const SignalSet interrupts{SIGINT, SIGTERM, SIGHUP};
  interrupts.block();
  const SignalFd interrupt_fd(interrupts);

  LoadOptions load;
  load.browser = options.browser;
  load.browser.program = browser_program(options.browser.program);
  load.timeout = seconds_to_nanos(options.timeout_seconds);
  load.http3_discovery = options.http3_discovery;
  load.wait_for_url = options.wait_for_url;
  load.screencast = options.speed_index;
  std::vector<LoadResult> loads;
  write_outputs(options, loads);  // an unwritable file fails now, not after the loads
  BrowserProfileTemplate profiles(trusted_certificates(options));

  // --wait-for-url: one load, of the URL that standard input brings.
  const std::vector<std::string> urls = options.wait_for_url ? std::vector<std::string>{""} : options.urls;
  const size_t total = urls.size() * static_cast<size_t>(options.runs);
  try {
    for (const std::string& url : urls) {
      for (int run = 1; run <= options.runs; run++) {
        load.url = url;
        load.run = run;
        loads.push_back(load_page(load, profiles, interrupt_fd.fd()));
        std::cerr << progress_line(loads.back(), loads.size(), total) << std::endl;
        write_outputs(options, loads);
      }
    }
  } catch (const Interrupted& e) {
    write_outputs(options, loads);
    std::cerr << "mm-pageload: " << e.what() << " after " << count_of(loads.size(), "finished load")
              << "; the browser is closed" << std::endl;
    return 128 + e.signal();
  }
  write_load_summary(loads, std::cout);
  for (const LoadResult& finished : loads) {
    if (finished.status != LoadResult::Status::Ok) return 1;
  }
  return 0;
}
