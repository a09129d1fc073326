// SPDX-License-Identifier: GPL-3.0-or-later
// CSV fields of --csv: quoting (RFC 4180) and missing values.
#include <cmath>

#include "expect.hh"
#include "util/csv.hh"

TEST(Csv, fields_are_quoted_only_when_needed) {
  EXPECT_EQ(csv_field("up.log"), "up.log");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
}

TEST(Csv, numbers_have_fixed_decimals_and_nan_is_an_empty_field) {
  EXPECT_EQ(csv_number(12, 3), "12.000");
  EXPECT_EQ(csv_number(0.0005, 3), "0.001");
  EXPECT_EQ(csv_number(7, 0), "7");
  EXPECT_EQ(csv_number(NAN, 3), "");
}
