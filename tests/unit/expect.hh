// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// GoogleTest assertions the project's tests share.
#include <gtest/gtest.h>

#include <string>

// Expects `expr` to throw an exception of type E whose message contains `fragment`.
#define EXPECT_THROW_WITH(E, expr, fragment)                                                                           \
  do {                                                                                                                 \
    try {                                                                                                              \
      (void)(expr);                                                                                                    \
      ADD_FAILURE() << #expr " did not throw";                                                                         \
    } catch (const E& thrown_) {                                                                                       \
      EXPECT_NE(std::string(thrown_.what()).find(fragment), std::string::npos) << "wrong message: " << thrown_.what(); \
    }                                                                                                                  \
  } while (0)
