// SPDX-License-Identifier: GPL-3.0-or-later
// mm-recording: list and show the request/response pairs of a recording (mm-record's
// directory, or the original Mahimahi's), and convert recordings to and from HAR 1.2.
// Runs as the user; needs no privileges.
#include <fcntl.h>
#include <unistd.h>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "recording/har.hh"
#include "recording/inspect.hh"
#include "recording/record_file.hh"
#include "util/args.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"
#include "util/text.hh"

namespace fs = std::filesystem;

namespace {
const char* kUsage =
    "Usage: mm-recording ls [--wide] DIR\n"
    "       mm-recording show [--raw | --decode] DIR FILE | DIR/FILE\n"
    "       mm-recording to-har [--force] DIR OUT.har\n"
    "       mm-recording from-har IN.har DIR\n"
    "       mm-recording timings [--destinations] DIR\n";
const char* kHelp =
    "Inspects and converts recordings: directories of request/response files made by mm-record\n"
    "(or by the original Mahimahi's mm-webrecord).\n"
    "\n"
    "  ls DIR            one line per pair: method, scheme, host, path, status, body size as\n"
    "                    stored, file name; in order of request time. Unreadable files are\n"
    "                    reported on standard error and skipped.\n"
    "     --wide, -w     do not shorten long paths\n"
    "  show DIR FILE     one pair: server address, scheme, server name, protocol, timestamps,\n"
    "  show DIR/FILE     the request and the response with their headers and bodies (de-chunked;\n"
    "                    binary or compressed bodies summarised as \"<N bytes, binary>\"). FILE is\n"
    "                    a name as ls lists it, or the file's path as tab completion gives it\n"
    "     --decode, -d   show compressed bodies (gzip, deflate, br) decompressed\n"
    "     --raw          print both messages exactly as stored instead\n"
    "  to-har DIR OUT    a HAR 1.2 file (OUT - writes standard output): content decoded as the\n"
    "                    spec says (de-chunked, decompressed); the custom \"_mahimahi\" fields keep\n"
    "                    every byte, so from-har gives the recording back exactly\n"
    "     --force, -f    overwrite OUT if it exists\n"
    "  from-har IN DIR   a new recording DIR from a HAR file (IN - reads standard input), e.g.\n"
    "                    one saved by Chromium's or Firefox's developer tools: exchanges become\n"
    "                    HTTP/1.1 serving the decoded content; entries that cannot be replayed\n"
    "                    (failed, canceled, WebSocket, body not in the HAR) are skipped with a\n"
    "                    warning; hosts without an IPv4 address get a stand-in (198.18.0.0/15)\n"
    "  timings DIR       the servers' timing as mm-record measured it: per origin (IP:port) its\n"
    "                    names, responses, bytes, smallest round trip, think time (first byte -\n"
    "                    request end - round trip: median, p90); then the longest chain of\n"
    "                    responses, each request starting after the one before ended\n"
    "     --destinations  print instead mm-delay's --destinations file that puts each\n"
    "                    recorded address at its measured distance (half its RTT each way)\n"
    "\n"
    "  --help, --version\n";

constexpr size_t kMaxWarningsShown = 20;

void print_warnings(const std::vector<std::string>& warnings) {
  for (size_t i = 0; i < warnings.size() && i < kMaxWarningsShown; i++)
    std::cerr << "mm-recording: warning: " << warnings[i] << "\n";
  if (warnings.size() > kMaxWarningsShown)
    std::cerr << "mm-recording: ... and " << count_of(warnings.size() - kMaxWarningsShown, "more warning")
              << " like these\n";
}

LoadedRecording load_nonempty(const std::string& dir, const char* purpose) {
  LoadedRecording loaded = load_recording(dir);
  print_warnings(loaded.warnings);
  if (loaded.entries.empty() && !loaded.warnings.empty()) {
    throw UserError(dir + " holds no valid recorded request/response (" + count_of(loaded.warnings.size(), "file") +
                    " skipped): is it a recording directory?");
  }
  if (loaded.entries.empty() && purpose) throw UserError(dir + " is an empty recording: " + purpose);
  return loaded;
}

int list(const std::string& dir, bool wide) {
  LoadedRecording loaded = load_nonempty(dir, nullptr);
  if (loaded.entries.empty()) std::cerr << "mm-recording: " << dir << " is an empty recording\n";
  write_all(1, recording_table(std::move(loaded.entries), wide));
  return 0;
}

// The record file `show` names: "DIR/FILE" (one word), or DIR and FILE, where FILE is a name in
// DIR as ls lists it or its path as tab completion gives it after DIR ("rec rec/save.x").
fs::path record_file_to_show(const std::vector<std::string>& words) {
  std::error_code ec;
  auto listing = [](const fs::path& dir) {
    return " (mm-recording ls " + (dir.empty() ? std::string(".") : dir.string()) + " lists the files)";
  };
  if (words.size() == 1) {
    const fs::path path = words[0];
    if (fs::is_directory(path, ec))
      throw UsageError("show takes one record file: mm-recording show " + words[0] + " FILE, or " + words[0] + "/FILE" +
                       listing(path));
    if (!fs::exists(fs::symlink_status(path, ec))) throw UserError("no file " + words[0] + listing(path.parent_path()));
    return path;
  }
  const std::string& dir = words[0];
  const std::string& file = words[1];
  if (!fs::is_directory(dir, ec)) throw UserError("cannot read recording directory " + dir + ": no such directory");
  if (file.empty() || file.find('/') == std::string::npos) {
    const fs::path in_dir = fs::path(dir) / file;
    if (file.empty() || !fs::exists(fs::symlink_status(in_dir, ec)))
      throw UserError("no file \"" + file + "\" in " + dir + listing(dir));
    return in_dir;
  }
  const fs::path as_given = file;  // a path, as tab completion gives it after DIR
  if (!fs::exists(fs::symlink_status(as_given, ec))) throw UserError("no file " + file + listing(dir));
  const fs::path parent = as_given.parent_path().empty() ? fs::path("/") : as_given.parent_path();
  if (!fs::equivalent(parent, dir, ec))
    throw UsageError(file + " is not in " + dir + ": give its name in " + dir + ", or its path alone");
  return as_given;
}

int show(const std::vector<std::string>& words, BodyView view) {
  const fs::path path = record_file_to_show(words);
  std::string bytes = read_recording_file(path);  // no FIFO, device or symbolic link; < 2 GiB
  std::string why;
  auto pair = parse_owned_pair(std::move(bytes), &why);
  if (!pair) throw UserError(path.string() + " is not a recorded request/response: " + why);
  write_all(1, describe_pair(path, *pair, view));
  return 0;
}

int to_har_file(const std::string& dir, const std::string& output, bool force) {
  const LoadedRecording loaded = load_nonempty(dir, "nothing to convert");
  const std::string text = to_har(loaded.entries).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (output == "-") {
    write_all(1, text);
    return 0;
  }
  FileDescriptor fd = create_output_file(output, force);
  try {
    write_all(fd.get(), text);
  } catch (const SystemError& e) {
    throw UserError("cannot write " + output + ": " + std::strerror(e.error()));
  }
  if (::close(fd.release()) != 0) throw UserError("cannot write " + output + ": " + std::strerror(errno));
  std::cerr << "mm-recording: wrote " << count_of(loaded.entries.size(), "entry", "entries") << " to " << output
            << "\n";
  return 0;
}

int from_har_file(const std::string& input, const std::string& dir) {
  const std::string source = input == "-" ? std::string("standard input") : input;
  // 1 GiB of JSON (parsed, several times that in memory): larger than any page's HAR.
  const nlohmann::json har = parse_har_text(
      read_user_file(input, "HAR file", 1ULL << 30, "export fewer pages or leave out large response bodies"), source);
  std::vector<std::string> warnings, notes;
  std::vector<RecordedPair> pairs = from_har(har, &warnings, source, &notes);
  print_warnings(warnings);
  for (const std::string& note : notes) std::cerr << "mm-recording: note: " << note << "\n";
  if (pairs.empty()) {
    throw UserError(source + ": no entry could be converted (" + count_of(warnings.size(), "entry", "entries") +
                    " skipped, see the warnings above); " + dir + " was not created");
  }
  create_record_directory(dir);
  RecordWriter writer(dir, [](const std::string& message) { std::cerr << "mm-recording: " << message << "\n"; });
  for (RecordedPair& p : pairs) writer.write(std::move(p));
  writer.finish();
  std::cerr << "mm-recording: wrote " << count_of(writer.written(), "pair") << " to " << dir;
  if (!warnings.empty()) std::cerr << ", skipped " << count_of(warnings.size(), "entry", "entries");
  std::cerr << "\n";
  if (writer.failed() > 0) {
    throw UserError(count_of(writer.failed(), "pair") + " could not be written to " + dir + " (see above)");
  }
  return 0;
}

int run(int argc, char** argv) {
  std::vector<std::string> words;
  bool raw = false, decode = false, force = false, wide = false, destinations = false, options_done = false;
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
    } else if (w == "--decode" || w == "-d") {
      decode = true;
    } else if (w == "--force" || w == "-f") {
      force = true;
    } else if (w == "--wide" || w == "-w") {
      wide = true;
    } else if (w == "--destinations") {
      destinations = true;
    } else {
      throw UsageError("unknown option \"" + std::string(w) + "\"");
    }
  }
  if (words.empty()) throw UsageError("missing command (ls, show, to-har, from-har or timings)");
  const std::string command = words[0];
  words.erase(words.begin());
  auto only = [&](bool given, const char* option, const char* owner) {
    if (given && command != owner) throw UsageError(std::string(option) + " applies to " + owner + " only");
  };
  only(raw, "--raw", "show");
  only(decode, "--decode", "show");
  if (raw && decode) throw UsageError("--raw and --decode exclude each other: --raw prints the bytes as stored");
  only(force, "--force", "to-har");
  only(wide, "--wide", "ls");
  only(destinations, "--destinations", "timings");
  if (command == "ls") {
    if (words.size() != 1) throw UsageError("ls takes one recording DIR");
    return list(words[0], wide);
  }
  if (command == "show") {
    if (words.empty() || words.size() > 2)
      throw UsageError("show takes a record file: DIR FILE (as ls lists it) or its path DIR/FILE");
    return show(words, raw ? BodyView::raw : decode ? BodyView::decoded : BodyView::summary);
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
  if (command == "timings") {
    if (words.size() != 1) throw UsageError("timings takes one recording DIR");
    const LoadedRecording loaded = load_nonempty(words[0], "nothing to report");
    write_all(1, destinations ? destinations_map(origin_timings(loaded.entries)) : timings_report(loaded.entries));
    return 0;
  }
  throw UsageError("unknown command \"" + command + "\" (ls, show, to-har, from-har or timings)");
}
}  // namespace

int main(int argc, char** argv) {
  return run_tool("mm-recording", kUsage, [&] { return run(argc, argv); });
}
