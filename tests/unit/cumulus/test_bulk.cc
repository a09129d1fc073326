// SPDX-License-Identifier: GPL-3.0-or-later
// The bulk protocol: requests both ways, frames in any pieces, and what is refused.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "cumulus/bulk.hh"
#include "expect.hh"
#include "temp_files.hh"
#include "util/exception.hh"

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
  BulkRequest request{"https://www.example.test/a?b=c&d=e#f", "Mozilla/5.0 (X11) Chrome/1", "fr-CH, fr;q=0.9",
                      "0123456789abcdef0123456789abcdef"};
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
  EXPECT_EQ(parsed->token, request.token);
  EXPECT_NE(bytes.find("\r\nAuthorization: Bearer 0123456789abcdef0123456789abcdef\r\n"), std::string::npos);
}

TEST(Bulk, header_values_lose_control_bytes_and_are_bounded) {
  BulkRequest request{"http://a.test/", "evil\r\nX-Injected: 1", std::string(5000, 'l'), "t\r\nX-Injected: 2"};
  const std::string bytes = encode_bulk_request(request, "1.2.3.4:5");
  EXPECT_EQ(bytes.find("\r\nX-Injected"), std::string::npos);
  const std::optional<BulkRequest> parsed = parse_bulk_request(bytes, nullptr);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->user_agent, "evilX-Injected: 1");
  EXPECT_EQ(parsed->accept_language.size(), kMaxBulkHeaderValue);
}

// A bare line feed ends no header line: it is dropped with the other control bytes, and the
// blanks before it trimmed, so that the request sent again is the request read (fuzz-bulk-request).
TEST(Bulk, a_value_with_a_bare_line_feed_reads_the_same_once_sent_again) {
  const std::string head =
      "GET /cumulus/1/load?url=http%3A%2F%2Fa.test%2F HTTP/1.1\r\nUser-Agent: Mozilla/5.0*\nAccept: x \n\r\n\r\n";
  const std::optional<BulkRequest> parsed = parse_bulk_request(head, nullptr);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->user_agent, "Mozilla/5.0*Accept: x");
  const std::optional<BulkRequest> again = parse_bulk_request(encode_bulk_request(*parsed, "h:1"), nullptr);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->user_agent, parsed->user_agent);
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

TEST(Bulk, tokens_are_random_hex_and_compared_whole) {
  const std::string a = new_bulk_token(), b = new_bulk_token();
  EXPECT_EQ(a.size(), 2 * kBulkTokenBytes);
  EXPECT_NE(a, b);
  EXPECT_TRUE(valid_bulk_token(a));
  EXPECT_TRUE(same_bulk_token(a, a));
  EXPECT_FALSE(same_bulk_token(a, b));
  EXPECT_FALSE(same_bulk_token(a, a.substr(0, a.size() - 1)));
  EXPECT_FALSE(same_bulk_token(a + "0", a));
  EXPECT_FALSE(same_bulk_token("", ""));
  EXPECT_FALSE(valid_bulk_token("short"));
  EXPECT_FALSE(valid_bulk_token(std::string(kMaxBulkToken + 1, 'a')));
  EXPECT_FALSE(valid_bulk_token("0123456789abcdef0123456789abcde\n"));
}

TEST(Bulk, the_remote_is_token_at_address_or_address) {
  const auto with = parse_bulk_remote("0123456789abcdef0123456789abcdef@10.0.0.1:8463");
  ASSERT_TRUE(with);
  EXPECT_EQ(with->token, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(with->address, "10.0.0.1:8463");
  const auto without = parse_bulk_remote("10.0.0.1:8463");
  ASSERT_TRUE(without);
  EXPECT_TRUE(without->token.empty());
  EXPECT_FALSE(parse_bulk_remote("bad@10.0.0.1:8463"));
  EXPECT_FALSE(parse_bulk_remote("0123456789abcdef0123456789abcdef@10.0.0.1"));
  EXPECT_FALSE(parse_bulk_remote("@10.0.0.1:1"));
}

TEST(Bulk, a_token_file_is_made_private_and_read_back_and_a_shared_one_refused) {
  TempDir tmp;
  const std::string file = (tmp.path / "token").string();
  const std::string made = read_bulk_token_file(file, true);
  EXPECT_TRUE(valid_bulk_token(made));
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read_bulk_token_file(file, false), made);
  EXPECT_EQ(read_bulk_token_file(file, true), made);
  ::chmod(file.c_str(), 0644);
  EXPECT_THROW_WITH(UserError, read_bulk_token_file(file, false), "chmod 600");
  EXPECT_THROW_WITH(UserError, read_bulk_token_file((tmp.path / "none").string(), false), "cannot read the token file");
  std::ofstream(tmp.path / "junk") << "not a token\n";
  ::chmod((tmp.path / "junk").c_str(), 0600);
  EXPECT_THROW_WITH(UserError, read_bulk_token_file((tmp.path / "junk").string(), false), "does not hold a token");
  std::filesystem::create_symlink(file, tmp.path / "link");
  EXPECT_THROW_WITH(UserError, read_bulk_token_file((tmp.path / "link").string(), false), "symbolic link");
}
