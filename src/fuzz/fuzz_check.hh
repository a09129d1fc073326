// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a fuzz target asserts: a property that must hold for every input. A failure aborts,
// which libFuzzer reports as a crash and saves the input as a reproducer.
#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition)                                                               \
  do {                                                                                      \
    if (!(condition)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)
