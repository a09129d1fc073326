#include <iostream>

#include "harness.hh"

std::vector<TestCase>& test_registry() {
  static std::vector<TestCase> registry;
  return registry;
}

int main(int argc, char** argv) {
  int passed = 0, failed = 0;
  for (const auto& test : test_registry()) {
    if (argc > 1 && test.name.find(argv[1]) == std::string::npos) continue;
    try {
      test.body();
      std::cout << "ok " << test.name << "\n";
      passed++;
    } catch (const std::exception& e) {
      std::cout << "FAIL " << test.name << ": " << e.what() << "\n";
      failed++;
    }
  }
  std::cout << passed << " passed, " << failed << " failed" << std::endl;
  return failed == 0 ? 0 : 1;
}
