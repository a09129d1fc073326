// SPDX-License-Identifier: GPL-3.0-or-later
// Command-line scanning and strict numbers (see args.hh).
#include "util/args.hh"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "util/exception.hh"
#include "util/text.hh"

namespace {
std::string quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

bool looks_negative_number(std::string_view word) {
  return word.size() >= 2 && word[0] == '-' && (std::isdigit(static_cast<unsigned char>(word[1])) || word[1] == '.');
}
}  // namespace

double parse_nonnegative(std::string_view text, std::string_view what) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    throw UsageError(std::string(what) + " must be a number, not " + quoted(text));
  }
  if (value < 0) throw UsageError(std::string(what) + " must not be negative (got " + std::string(text) + ")");
  return value;
}

double parse_probability(std::string_view text, std::string_view what) {
  double value = parse_nonnegative(text, what);
  if (value > 1) throw UsageError(std::string(what) + " must be between 0 and 1 (got " + std::string(text) + ")");
  return value;
}

uint64_t parse_unsigned(std::string_view text, std::string_view what) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    throw UsageError(std::string(what) + " must be a non-negative integer, not " + quoted(text));
  }
  return value;
}

std::string usage_line(const ProgramInfo& info) { return "Usage: " + info.name + " " + info.synopsis; }

ArgScanner::Option ArgScanner::seed_option(std::optional<uint64_t>& seed) {
  return {"seed", true, [&seed](std::string_view v) { seed = parse_unsigned(v, "--seed"); }};
}

ArgScanner::Option ArgScanner::verbose_option(bool& verbose) {
  return {"verbose", false, [&verbose](std::string_view) { verbose = true; }};
}

ArgScanner::Option ArgScanner::tcp_ecn_option(std::optional<int>& mode) {
  return {"tcp-ecn", true, [&mode](std::string_view v) {
            if (v == "on")
              mode = 1;
            else if (v == "accept")
              mode = 2;
            else if (v == "off")
              mode = 0;
            else
              throw UsageError("--tcp-ecn must be on (TCP asks for ECN and accepts it), accept (only when the peer " +
                               std::string("asks, the kernel's default) or off, not \"") + printable(v, 40) + "\"");
          }};
}

ArgScanner::ArgScanner(const ProgramInfo& info, std::vector<Option> options)
    : info_(info), options_(std::move(options)) {}

std::vector<std::string> ArgScanner::scan(int argc, char** argv,
                                          const std::function<bool(std::string_view)>& positional) {
  for (int i = 1; i < argc; i++) {
    std::string_view word = argv[i];
    if (word == "--") return std::vector<std::string>(argv + i + 1, argv + argc);
    if (answer_help_or_version(word, info_.name, usage_line(info_), info_.help)) std::exit(0);
    if (word.size() > 1 && word[0] == '-' && !looks_negative_number(word)) {
      std::string_view body = word.substr(word.rfind("--", 0) == 0 ? 2 : 1);
      std::string_view name = body.substr(0, body.find('='));
      const Option* found = nullptr;
      for (const auto& o : options_) {
        if (o.name == name) found = &o;
      }
      if (!found) throw UsageError("unknown option " + quoted(word));
      if (!found->takes_value) {
        if (body.find('=') != std::string_view::npos)
          throw UsageError("option --" + std::string(name) + " takes no value");
        found->apply({});
      } else if (body.find('=') != std::string_view::npos) {
        found->apply(body.substr(body.find('=') + 1));
      } else {
        if (i + 1 >= argc) throw UsageError("option --" + std::string(name) + " needs a value");
        found->apply(argv[++i]);
      }
      continue;
    }
    if (!positional(word)) return std::vector<std::string>(argv + i, argv + argc);
  }
  return {};
}

std::string version_text(const std::string& name) {
  return name + " (mahimahi) " PACKAGE_VERSION "\n" + kCopyrightNotice;
}

bool answer_help_or_version(std::string_view word, const std::string& name, const std::string& usage,
                            const std::string& help) {
  if (word == "--help" || word == "-h") {
    std::cout << usage << "\n" << help;
    return true;
  }
  if (word == "--version") {
    std::cout << version_text(name);
    return true;
  }
  return false;
}

std::optional<ToolArgs> scan_tool_args(int argc, char** argv, const std::string& name, const std::string& usage,
                                       const std::string& help, const std::vector<std::string_view>& value_options) {
  ToolArgs args;
  for (int i = 1; i < argc; i++) {
    const std::string word = argv[i];
    if (answer_help_or_version(word, name, usage, help)) return std::nullopt;
    if (word == "-o" || word == "--output") {
      if (i + 1 >= argc) throw UsageError(word + " needs a file name");
      args.output = argv[++i];
      continue;
    }
    if (word.rfind("--output=", 0) == 0) {
      args.output = word.substr(9);
      continue;
    }
    if (word.size() > 1 && word[0] == '-') {
      const size_t equals = word.find('=');
      const std::string_view option = std::string_view(word).substr(0, equals);
      const bool known = equals != std::string::npos && option.rfind("--", 0) == 0 &&
                         std::find(value_options.begin(), value_options.end(), option.substr(2)) != value_options.end();
      if (!known) throw UsageError("unknown option " + quoted(word));
      args.values[std::string(option.substr(2))] = word.substr(equals + 1);
      continue;
    }
    args.operands.push_back(word);
  }
  return args;
}

int run_tool(const std::string& name, const std::string& usage, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::cerr << name << ": " << e.what() << "\n" << usage << "Try '" << name << " --help' for more information.\n";
    return 2;
  } catch (const StatusError& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return e.status();
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return 1;
  }
}
