// mm-recording: list and show the request/response pairs of a recording (mm-record's
// directory, or the original Mahimahi's), and convert recordings to and from HAR 1.2.
// Runs as the user; needs no privileges.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "recording/har.hh"
#include "recording/record_file.hh"
#include "util/args.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {
const char* kUsage =
    "Usage: mm-recording ls [--wide] DIR\n"
    "       mm-recording show [--raw] DIR FILE\n"
    "       mm-recording to-har [--force] DIR OUT.har\n"
    "       mm-recording from-har IN.har DIR\n";
const char* kHelp =
    "Inspects and converts recordings: directories of request/response files made by mm-record\n"
    "(or by the original Mahimahi's mm-webrecord).\n"
    "\n"
    "  ls DIR            one line per pair: method, scheme, host, path, status, body size as\n"
    "                    stored, file name; in order of request time. Unreadable files are\n"
    "                    reported on standard error and skipped.\n"
    "     --wide         do not shorten long paths\n"
    "  show DIR FILE     one pair: server address, scheme, server name, protocol, timestamps,\n"
    "                    the request and the response with their headers and bodies (de-chunked;\n"
    "                    binary bodies summarised as \"<N bytes, binary>\")\n"
    "     --raw          print both messages exactly as stored instead\n"
    "  to-har DIR OUT    a HAR 1.2 file (OUT - writes standard output); the custom \"_mahimahi\"\n"
    "                    fields keep every byte, so from-har gives the recording back exactly\n"
    "     --force        overwrite OUT if it exists\n"
    "  from-har IN DIR   a new recording DIR from a HAR file (IN - reads standard input), e.g.\n"
    "                    one saved by a browser's developer tools: exchanges become HTTP/1.1,\n"
    "                    entries without an IPv4 server address or without a response body\n"
    "                    are skipped with a warning\n"
    "\n"
    "  --help, --version\n";

constexpr size_t kMaxWarningsShown = 20;
constexpr size_t kShortPath = 60;

std::string count(size_t n, const char* singular, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (size_t i = 0; i < warnings.size() && i < kMaxWarningsShown; i++)
    std::cerr << "mm-recording: warning: " << warnings[i] << "\n";
  if (warnings.size() > kMaxWarningsShown)
    std::cerr << "mm-recording: ... and " << warnings.size() - kMaxWarningsShown << " more warnings like these\n";
}

// Width on the terminal, counting UTF-8 sequences as one column each.
size_t columns(std::string_view text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string shortened(const std::string& text, size_t width) {
  if (columns(text) <= width) return text;
  std::string out;
  size_t used = 0;
  for (char c : text) {
    const bool starts_character = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_character && ++used > width - 3) break;
    out += c;
  }
  return out + "...";
}

std::string first_word(std::string_view line, size_t index) {
  size_t start = 0;
  for (size_t i = 0; i < index; i++) {
    start = line.find(' ', start);
    if (start == std::string_view::npos) return "";
    start++;
  }
  return std::string(line.substr(start, line.find(' ', start) - start));
}

// The request target: between the first and the last space of the request line.
std::string request_target(std::string_view line) {
  const size_t first = line.find(' ');
  if (first == std::string_view::npos) return "";
  const size_t last = line.rfind(' ');
  return std::string(last == first ? line.substr(first + 1) : line.substr(first + 1, last - first - 1));
}

std::string host_of(const RecordedPair& p) {
  auto host = p.request.header("Host");
  return host ? std::string(*host) : p.ip + ":" + std::to_string(p.port);
}

LoadedRecording load_nonempty(const std::string& dir, const char* purpose) {
  LoadedRecording loaded = load_recording(dir);
  print_warnings(loaded.warnings);
  if (loaded.entries.empty() && !loaded.warnings.empty()) {
    throw UserError(dir + " holds no valid recorded request/response (" +
                    count(loaded.warnings.size(), "file", "files") + " skipped): is it a recording directory?");
  }
  if (loaded.entries.empty() && purpose) throw UserError(dir + " is an empty recording: " + purpose);
  return loaded;
}

int list(const std::string& dir, bool wide) {
  LoadedRecording loaded = load_nonempty(dir, nullptr);
  if (loaded.entries.empty()) std::cerr << "mm-recording: " << dir << " is an empty recording\n";
  std::stable_sort(loaded.entries.begin(), loaded.entries.end(), [](const RecordingEntry& a, const RecordingEntry& b) {
    return a.pair.request_start_us < b.pair.request_start_us;
  });
  std::vector<std::vector<std::string>> rows = {{"METHOD", "SCHEME", "HOST", "PATH", "STATUS", "BYTES", "FILE"}};
  for (const RecordingEntry& e : loaded.entries) {
    const RecordedPair& p = e.pair;
    const std::string path = printable(request_target(p.request.first_line));
    rows.push_back({printable(first_word(p.request.first_line, 0)), p.https ? "https" : "http", printable(host_of(p)),
                    wide ? path : shortened(path, kShortPath), printable(first_word(p.response.first_line, 1)),
                    std::to_string(p.response.body.size()), printable(e.file.filename().string())});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); i++) width[i] = std::max(width[i], columns(row[i]));
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); i++) {
      out += row[i];
      if (i + 1 < row.size()) out.append(width[i] - columns(row[i]) + 2, ' ');
    }
    out += "\n";
  }
  write_all(1, out);
  return 0;
}

std::string local_time_us(uint64_t us) {
  const time_t seconds = static_cast<time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02d %02d:%02d:%02d.%06u UTC", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<unsigned>(us % 1000000));
  return text;
}

std::string offset_ms(uint64_t from, uint64_t to) {
  if (to == 0) return "unknown";
  if (from == 0 || to < from) return local_time_us(to);
  char text[64];
  std::snprintf(text, sizeof text, "+%.3f ms", static_cast<double>(to - from) / 1000.0);
  return text;
}

bool looks_like_text(std::string_view body) {
  if (!is_valid_utf8(body)) return false;
  return std::none_of(body.begin(), body.end(), [](char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f') || u == 0x7f;
  });
}

std::string describe_message(const char* title, const HttpMessage& m) {
  const std::string content = decoded_body(m);
  std::string out = "---- " + std::string(title);
  if (is_chunked(m)) {
    out += " (body chunked: " + std::to_string(m.body.size()) + " bytes stored, " + std::to_string(content.size()) +
           " bytes of content)";
  } else {
    out += " (body: " + std::to_string(m.body.size()) + " bytes)";
  }
  out += " ----\n" + printable(m.first_line) + "\n";
  for (const HttpHeader& h : m.headers) out += printable(h.key) + ": " + printable(h.value) + "\n";
  if (content.empty()) return out;
  out += "\n";
  auto coding = m.header("Content-Encoding");
  const bool encoded = coding && !equals_ignoring_case(*coding, "identity");
  if (encoded || !looks_like_text(content)) {
    out += "<" + std::to_string(content.size()) + " bytes, binary>\n";
  } else {
    out += content;
    if (content.back() != '\n') out += "\n";
  }
  return out;
}

int show(const std::string& dir, const std::string& file, bool raw) {
  if (file.empty() || file.find('/') != std::string::npos)
    throw UsageError("FILE is a name in DIR as \"mm-recording ls " + dir + "\" lists it, not \"" + file + "\"");
  const fs::path path = fs::path(dir) / file;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw UserError("cannot read recording directory " + dir + ": no such directory");
  if (!fs::exists(path, ec)) throw UserError("no file " + file + " in " + dir + " (see mm-recording ls " + dir + ")");
  std::string bytes = read_recording_file(path);  // no FIFO, device or symbolic link; < 2 GiB
  std::string why;
  auto pair = parse_owned_pair(std::move(bytes), &why);
  if (!pair) throw UserError(path.string() + " is not a recorded request/response: " + why);
  const RecordedPair& p = *pair;

  std::string out;
  out += "file          " + printable(path.string()) + "\n";
  out +=
      "server        " + printable(p.ip) + ":" + std::to_string(p.port) + " (" + (p.https ? "https" : "http") + ")\n";
  out += "server name   " + (p.server_name.empty() ? std::string("unknown") : printable(p.server_name)) + "\n";
  out += "protocol      " + (p.protocol.empty() ? std::string("unknown") : printable(p.protocol)) + "\n";
  if (p.request_start_us || p.request_end_us || p.response_first_byte_us || p.response_last_byte_us) {
    out += "request start " + (p.request_start_us ? local_time_us(p.request_start_us) : std::string("unknown")) + "\n";
    out += "request end   " + offset_ms(p.request_start_us, p.request_end_us) + "\n";
    out += "first byte    " + offset_ms(p.request_start_us, p.response_first_byte_us) + " (of the response)\n";
    out += "last byte     " + offset_ms(p.request_start_us, p.response_last_byte_us) + "\n";
  } else {
    out += "timestamps    unknown (a recording by the original Mahimahi, or converted without times)\n";
  }
  out += "\n";
  if (raw) {
    out += "---- request, as stored ----\n" + p.request.serialize();
    out += "\n---- response, as stored ----\n" + p.response.serialize();
  } else {
    out += describe_message("request", p.request) + "\n" + describe_message("response", p.response);
  }
  write_all(1, out);
  return 0;
}

int to_har_file(const std::string& dir, const std::string& output, bool force) {
  const LoadedRecording loaded = load_nonempty(dir, "nothing to convert");
  const std::string text = to_har(loaded.entries).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (output == "-") {
    write_all(1, text);
    return 0;
  }
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL);
  FileDescriptor fd(::open(output.c_str(), flags, 0644));
  if (!fd.valid()) {
    if (errno == EEXIST)
      throw UserError(output + " already exists: choose another name, or add --force to overwrite it");
    throw UserError("cannot write " + output + ": " + std::strerror(errno));
  }
  try {
    write_all(fd.get(), text);
  } catch (const SystemError& e) {
    throw UserError("cannot write " + output + ": " + std::strerror(e.error()));
  }
  if (::close(fd.release()) != 0) throw UserError("cannot write " + output + ": " + std::strerror(errno));
  std::cerr << "mm-recording: wrote " << count(loaded.entries.size(), "entry", "entries") << " to " << output << "\n";
  return 0;
}

int from_har_file(const std::string& input, const std::string& dir) {
  const std::string source = input == "-" ? std::string("standard input") : input;
  // 1 GiB of JSON (parsed, several times that in memory): larger than any page's HAR.
  const nlohmann::json har = parse_har_text(
      read_user_file(input, "HAR file", 1ULL << 30, "export fewer pages or leave out large response bodies"), source);
  std::vector<std::string> warnings;
  std::vector<RecordedPair> pairs = from_har(har, &warnings, source);
  print_warnings(warnings);
  if (pairs.empty()) {
    throw UserError(source + ": no entry could be converted (" + count(warnings.size(), "entry", "entries") +
                    " skipped, see the warnings above); " + dir + " was not created");
  }
  create_record_directory(dir);
  RecordWriter writer(dir, [](const std::string& message) { std::cerr << "mm-recording: " << message << "\n"; });
  for (RecordedPair& p : pairs) writer.write(std::move(p));
  writer.finish();
  std::cerr << "mm-recording: wrote " << count(writer.written(), "pair", "pairs") << " to " << dir << ", skipped "
            << count(warnings.size(), "entry", "entries") << "\n";
  if (writer.failed() > 0) {
    throw UserError(count(writer.failed(), "pair", "pairs") + " could not be written to " + dir + " (see above)");
  }
  return 0;
}

int run(int argc, char** argv) {
  std::vector<std::string> words;
  bool raw = false, force = false, wide = false, options_done = false;
  for (int i = 1; i < argc; i++) {
    const std::string_view w = argv[i];
    if (options_done || w == "-" || w.empty() || w[0] != '-') {
      words.emplace_back(w);
    } else if (w == "--") {
      options_done = true;
    } else if (answer_help_or_version(w, "mm-recording", kUsage, kHelp)) {
      return 0;
    } else if (w == "--raw") {
      raw = true;
    } else if (w == "--force" || w == "-f") {
      force = true;
    } else if (w == "--wide" || w == "-w") {
      wide = true;
    } else {
      throw UsageError("unknown option \"" + std::string(w) + "\"");
    }
  }
  if (words.empty()) throw UsageError("missing command (ls, show, to-har or from-har)");
  const std::string command = words[0];
  words.erase(words.begin());
  auto only = [&](bool given, const char* option, const char* owner) {
    if (given && command != owner) throw UsageError(std::string(option) + " applies to " + owner + " only");
  };
  only(raw, "--raw", "show");
  only(force, "--force", "to-har");
  only(wide, "--wide", "ls");
  if (command == "ls") {
    if (words.size() != 1) throw UsageError("ls takes one recording DIR");
    return list(words[0], wide);
  }
  if (command == "show") {
    if (words.size() != 2) throw UsageError("show takes a recording DIR and a FILE in it (as ls lists it)");
    return show(words[0], words[1], raw);
  }
  if (command == "to-har") {
    if (words.size() != 2)
      throw UsageError("to-har takes a recording DIR and the OUT.har to write (- for standard output)");
    return to_har_file(words[0], words[1], force);
  }
  if (command == "from-har") {
    if (words.size() != 2) throw UsageError("from-har takes the IN.har to read (- for standard input) and a new DIR");
    return from_har_file(words[0], words[1]);
  }
  throw UsageError("unknown command \"" + command + "\" (ls, show, to-har or from-har)");
}
}  // namespace

int main(int argc, char** argv) {
  return run_tool("mm-recording", kUsage, [&] { return run(argc, argv); });
}
