// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include "http/alt_svc.hh"

TEST(AltSvc, AdvertisesH3FindsH3AndDraftsAmongOthers) {
  EXPECT_TRUE(alt_svc_advertises_h3("h3=\":443\"; ma=2592000"));
  EXPECT_TRUE(alt_svc_advertises_h3("h2=\"alt.test:443\", h3-29=\":443\""));
  EXPECT_TRUE(alt_svc_advertises_h3("  H3=\":8443\""));
  EXPECT_FALSE(alt_svc_advertises_h3("clear"));
  EXPECT_FALSE(alt_svc_advertises_h3("h2=\":443\"; ma=60"));
  EXPECT_FALSE(alt_svc_advertises_h3("quic=\":443\"; h3x=1"));
  EXPECT_FALSE(alt_svc_advertises_h3(""));
}

TEST(AltSvc, AnyFieldAmongTheHeadersCounts) {
  EXPECT_TRUE(advertises_h3({{"Content-Type", "text/html"}, {"ALT-SVC", "h3=\":443\""}}));
  EXPECT_FALSE(advertises_h3({{"Alt-Svc", "h2=\":443\""}, {"X-Alt-Svc", "h3=\":443\""}}));
  EXPECT_FALSE(advertises_h3({}));
}
