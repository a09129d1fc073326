#pragma once
// A minimal test harness: TEST(name) { CHECK(...); }. Each test prints "ok NAME" or
// "FAIL NAME: why"; the run ends with "N passed, N failed".
#include <cmath>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

struct TestCase {
  std::string name;
  std::function<void()> body;
};
std::vector<TestCase>& test_registry();

struct TestRegistrar {
  TestRegistrar(const char* name, std::function<void()> body) { test_registry().push_back({name, std::move(body)}); }
};

struct CheckFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

#define TEST(name)                                          \
  static void test_##name();                                \
  static TestRegistrar registrar_##name(#name, test_##name); \
  static void test_##name()

#define CHECK(cond)                                                                                   \
  do {                                                                                                \
    if (!(cond)) throw CheckFailure(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " #cond); \
  } while (0)

#define CHECK_EQ(a, b)                                                                             \
  do {                                                                                             \
    const auto va_ = (a);                                                                            \
    const auto vb_ = (b);                                                                            \
    if (!(va_ == vb_)) {                                                                           \
      std::ostringstream m_;                                                                       \
      m_ << __FILE__ << ":" << __LINE__ << ": " #a " == " #b " (" << va_ << " vs " << vb_ << ")"; \
      throw CheckFailure(m_.str());                                                                \
    }                                                                                              \
  } while (0)

// Checks that `expr` throws an exception of type E whose message contains `fragment`.
#define CHECK_THROWS(E, expr, fragment)                                                             \
  do {                                                                                              \
    bool thrown_ = false;                                                                           \
    try {                                                                                           \
      (void)(expr);                                                                                 \
    } catch (const E& e_) {                                                                         \
      thrown_ = std::string(e_.what()).find(fragment) != std::string::npos;                         \
      if (!thrown_) throw CheckFailure(std::string(__FILE__) + ":" + std::to_string(__LINE__) +     \
                                       ": wrong message: " + e_.what());                            \
    }                                                                                               \
    if (!thrown_) throw CheckFailure(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " #expr " did not throw"); \
  } while (0)
