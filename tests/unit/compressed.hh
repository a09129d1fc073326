// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Compressed samples for the tests of decoders: gzip, zlib, raw deflate and brotli.
#include <brotli/encode.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

// `text` compressed with zlib: window_bits 15 + 16 gzip, 15 zlib ("deflate"), -15 raw deflate.
inline std::string zlib_compressed(const std::string& text, int window_bits) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

inline std::string gzipped(const std::string& text) { return zlib_compressed(text, 15 + 16); }

inline std::string brotli_compressed(const std::string& text) {
  std::string out(BrotliEncoderMaxCompressedSize(text.size()), '\0');
  size_t size = out.size();
  EXPECT_TRUE(BrotliEncoderCompress(BROTLI_DEFAULT_QUALITY, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, text.size(),
                                    reinterpret_cast<const uint8_t*>(text.data()), &size,
                                    reinterpret_cast<uint8_t*>(out.data())));
  out.resize(size);
  return out;
}
