// SPDX-License-Identifier: GPL-3.0-or-later
// The bulk protocol: requests both ways, frames in any pieces, and what is refused.
#include <gtest/gtest.h>

#include "cumulus/bulk.hh"

TEST(Bulk, percent_encoding_round_trips_every_byte) {
  std::string all;
  for (int c = 0; c < 256; c++) all += static_cast<char>(c);
  const std::string encoded = percent_encode(all);
  EXPECT_TRUE(encoded.starts_with("%00%01"));
  EXPECT_EQ(encoded.find_first_of(" /?&=#\r\n"), std::string::npos);
  EXPECT_EQ(percent_decode(encoded), all);
  EXPECT_EQ(percent_encode("a-b_c.d~e"), "a-b_c.d~e");
  EXPECT_FALSE(percent_decode("%4"));
  EXPECT_FALSE(percent_decode("%zz"));
  EXPECT_FALSE(percent_decode("abc%"));
}

TEST(Bulk, request_round_trips_url_and_headers) {
  BulkRequest request{"https://www.example.test/a?b=c&d=e#f", "Mozilla/5.0 (X11) Chrome/1", "fr-CH, fr;q=0.9"};
  const std::string bytes = encode_bulk_request(request, "10.0.0.1:8463");
  EXPECT_TRUE(
      bytes.starts_with("GET /cumulus/1/load?url=https%3A%2F%2Fwww.example.test%2Fa%3Fb%3Dc%26d%3De%23f HTTP/1.1\r\n"));
  EXPECT_NE(bytes.find("\r\nHost: 10.0.0.1:8463\r\n"), std::string::npos);
  std::string why;
  const std::optional<BulkRequest> parsed = parse_bulk_request(bytes, &why);
  ASSERT_TRUE(parsed) << why;
  EXPECT_EQ(parsed->url, request.url);
  EXPECT_EQ(parsed->user_agent, request.user_agent);
  EXPECT_EQ(parsed->accept_language, request.accept_language);
}

TEST(Bulk, header_values_lose_control_bytes_and_are_bounded) {
  BulkRequest request{"http://a.test/", "evil\r\nX-Injected: 1", std::string(5000, 'l')};
  const std::string bytes = encode_bulk_request(request, "1.2.3.4:5");
  EXPECT_EQ(bytes.find("\r\nX-Injected"), std::string::npos);
  const std::optional<BulkRequest> parsed = parse_bulk_request(bytes, nullptr);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->user_agent, "evilX-Injected: 1");
  EXPECT_EQ(parsed->accept_language.size(), kMaxBulkHeaderValue);
}

TEST(Bulk, requests_that_are_not_loads_are_refused_with_a_reason) {
  const auto refused = [](const std::string& head) {
    std::string why;
    EXPECT_FALSE(parse_bulk_request(head, &why)) << head;
    return why;
  };
  EXPECT_EQ(refused("POST /cumulus/1/load?url=http%3A%2F%2Fa HTTP/1.1\r\n\r\n"), "not a GET request line");
  EXPECT_NE(refused("GET /other HTTP/1.1\r\n\r\n").find("not /cumulus/1/load"), std::string::npos);
  EXPECT_EQ(refused("GET /cumulus/1/load?url=ftp%3A%2F%2Fa.test%2F HTTP/1.1\r\n\r\n"),
            "the URL is not http:// or https://");
  EXPECT_EQ(refused("GET /cumulus/1/load?url=http%3A%2F%2Fa.test%2F%20x HTTP/1.1\r\n\r\n"),
            "the URL holds spaces or control bytes");
  EXPECT_EQ(refused("GET /cumulus/1/load?url=http%3A%2F%2Fa%2 HTTP/1.1\r\n\r\n"), "a malformed %-escape in the URL");
  EXPECT_NE(
      refused("GET /cumulus/1/load?url=http%3A%2F%2Fa.test%2F" + std::string(kMaxBulkUrl, 'a') + " HTTP/1.1\r\n\r\n")
          .find("longer than"),
      std::string::npos);
  EXPECT_EQ(refused("GET /cumulus/1/load?url=http%3A%2F%2Fa.test%2F HTTP/1.1\r\nno colon\r\n\r\n"),
            "a header line without a colon");
}

TEST(Bulk, decoder_takes_frames_fed_a_byte_at_a_time) {
  const std::string stream = bulk_response_head() + encode_bulk_frame(BulkFrameKind::Pair, "first") +
                             encode_bulk_frame(BulkFrameKind::Pair, std::string(70000, 'x')) +
                             encode_bulk_frame(BulkFrameKind::End, encode_bulk_end({{"status", "ok"}, {"pairs", "2"}}));
  BulkDecoder decoder;
  std::vector<BulkDecoder::Frame> frames;
  for (const char c : stream) {
    ASSERT_TRUE(decoder.feed(std::string_view(&c, 1))) << decoder.error();
    while (auto frame = decoder.next()) frames.push_back(std::move(*frame));
  }
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].kind, BulkFrameKind::Pair);
  EXPECT_EQ(frames[0].payload, "first");
  EXPECT_EQ(frames[1].payload.size(), 70000u);
  EXPECT_EQ(frames[2].kind, BulkFrameKind::End);
  const auto end = parse_bulk_end(frames[2].payload);
  EXPECT_EQ(end.at("status"), "ok");
  EXPECT_EQ(end.at("pairs"), "2");
  EXPECT_TRUE(decoder.ended());
  EXPECT_EQ(decoder.bytes(), stream.size());
  EXPECT_FALSE(decoder.feed("more"));
  EXPECT_EQ(decoder.error(), "bytes after the end frame");
}

TEST(Bulk, decoder_refuses_what_is_not_the_protocol) {
  {
    BulkDecoder d;
    EXPECT_FALSE(d.feed(bulk_error_response(503, "Service Unavailable", "16 loads are waiting already")));
    EXPECT_NE(d.error().find("answered \"HTTP/1.1 503 Service Unavailable\": 16 loads are waiting already"),
              std::string::npos)
        << d.error();
  }
  {
    BulkDecoder d;
    EXPECT_FALSE(d.feed("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"));
    EXPECT_NE(d.error().find("not application/x-mahimahi-cumulus"), std::string::npos);
  }
  {
    BulkDecoder d;
    EXPECT_FALSE(d.feed(bulk_response_head() + std::string("Z\0\0\0\0", 5)));
    EXPECT_NE(d.error().find("unknown kind"), std::string::npos);
  }
  {
    BulkDecoder d;
    EXPECT_FALSE(d.feed(bulk_response_head() + std::string("P\x7f\xff\xff\xff", 5)));
    EXPECT_NE(d.error().find("at most"), std::string::npos);
  }
  {
    BulkDecoder d;
    EXPECT_FALSE(d.feed(std::string(20000, 'a')));
    EXPECT_NE(d.error().find("no header section"), std::string::npos);
  }
}

TEST(Bulk, end_fields_stay_on_their_lines) {
  const auto fields = parse_bulk_end(encode_bulk_end({{"reason", "two\nlines\r"}, {"status", "error"}}));
  EXPECT_EQ(fields.at("reason"), "two lines ");
  EXPECT_EQ(fields.at("status"), "error");
  EXPECT_TRUE(parse_bulk_end("no equals sign\n=empty key\n").empty());
}
