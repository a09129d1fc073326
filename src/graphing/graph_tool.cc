#include "graphing/graph_tool.hh"

#include <iostream>

#include "graphing/chart.hh"
#include "util/exception.hh"

int run_graph_tool(int argc, char** argv, const std::string& name, const std::string& usage, const std::string& help,
                   const std::function<void(const GraphCommand&)>& body) {
  try {
    GraphCommand command;
    for (int i = 1; i < argc; i++) {
      const std::string word = argv[i];
      if (word == "--help" || word == "-h") {
        std::cout << usage << "\n" << help;
        return 0;
      }
      if (word == "--version") {
        std::cout << name << " (mahimahi) " << PACKAGE_VERSION << "\n";
        return 0;
      }
      if (word == "-o" || word == "--output") {
        if (i + 1 >= argc) throw UsageError(word + " needs a file name");
        command.output = argv[++i];
      } else if (word.rfind("--output=", 0) == 0) {
        command.output = word.substr(9);
      } else if (word.size() > 1 && word[0] == '-') {
        throw UsageError("unknown option \"" + word + "\"");
      } else {
        command.operands.push_back(word);
      }
    }
    check_chart_output(command.output);
    body(command);
    return 0;
  } catch (const UsageError& e) {
    std::cerr << name << ": " << e.what() << "\n" << usage << "\nTry '" << name << " --help' for more information.\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return 1;
  }
}
