#pragma once
// Command-line scanning shared by every program: strict numbers, --help/--version, and the
// user's command after the program's own arguments ("--" optional before it).
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

// Strict decimal parsing; throw UsageError naming `what` and the text typed.
double parse_nonnegative(std::string_view text, std::string_view what);
double parse_probability(std::string_view text, std::string_view what);
uint64_t parse_unsigned(std::string_view text, std::string_view what);

struct ProgramInfo {
  std::string name;      // e.g. mm-delay
  std::string synopsis;  // e.g. "DELAY-MS [--] [COMMAND...]"
  std::string help;      // full --help text after the usage line
};

std::string usage_line(const ProgramInfo& info);

// Walks argv. Options (--name or --name=value or --name value) may appear anywhere before the
// command; positional words are handed to `positional` until it returns false ("I am
// complete"), after which the rest is the command. Returns the command (possibly empty).
// --help and --version print and exit 0.
class ArgScanner {
 public:
  struct Option {
    std::string name;  // without the leading dashes
    bool takes_value;
    std::function<void(std::string_view value)> apply;
  };

  ArgScanner(const ProgramInfo& info, std::vector<Option> options);
  // positional(word) returns true if it consumed the word, false if its arguments are complete
  // (the word then starts the command).
  std::vector<std::string> scan(int argc, char** argv, const std::function<bool(std::string_view)>& positional);

 private:
  const ProgramInfo& info_;
  std::vector<Option> options_;
};
