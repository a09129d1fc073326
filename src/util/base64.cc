// SPDX-License-Identifier: GPL-3.0-or-later
// Base64 on OpenSSL's EVP_EncodeBlock/EVP_DecodeBlock. They take an int length and
// EVP_DecodeBlock accepts whitespace at the ends only and turns padding into zero bytes, so the
// input is fed in chunks and checked and normalised here first.
#include "util/base64.hh"

#include <openssl/evp.h>

#include <algorithm>

namespace {
constexpr size_t kBase64Chunk = 3 << 20;  // input bytes per EVP_EncodeBlock call (a multiple of 3; fits an int)

bool is_base64_letter(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}
}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::string block;
  for (size_t pos = 0; pos < bytes.size(); pos += kBase64Chunk) {
    const size_t n = std::min(kBase64Chunk, bytes.size() - pos);
    block.resize((n + 2) / 3 * 4 + 1);  // EVP_EncodeBlock adds a NUL
    const int written =
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(block.data()),
                        reinterpret_cast<const unsigned char*>(bytes.data() + pos), static_cast<int>(n));
    out.append(block.data(), static_cast<size_t>(written));
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::string clean;
  clean.reserve(text.size() + 3);
  size_t padding = 0;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      padding++;
      continue;
    }
    if (!is_base64_letter(c) || padding > 0) return std::nullopt;  // a stray character, or data after the padding
    clean += c;
  }
  if (padding > 2 || clean.size() % 4 == 1) return std::nullopt;
  // EVP_DecodeBlock wants whole quads and turns padding into zero bytes: pad, then trim.
  const size_t missing = (4 - clean.size() % 4) % 4;
  clean.append(missing, '=');
  std::string out;
  out.reserve(clean.size() / 4 * 3);
  std::string block;
  const size_t chunk = kBase64Chunk / 3 * 4;
  for (size_t pos = 0; pos < clean.size(); pos += chunk) {
    const size_t n = std::min(chunk, clean.size() - pos);
    block.resize(n / 4 * 3);
    const int decoded =
        EVP_DecodeBlock(reinterpret_cast<unsigned char*>(block.data()),
                        reinterpret_cast<const unsigned char*>(clean.data() + pos), static_cast<int>(n));
    if (decoded < 0) return std::nullopt;
    out.append(block.data(), static_cast<size_t>(decoded));
  }
  out.resize(out.size() - missing);
  return out;
}
