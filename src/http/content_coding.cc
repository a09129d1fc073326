// SPDX-License-Identifier: GPL-3.0-or-later
// Content codings of stored bodies with zlib (gzip, deflate) and brotli (br): undone, and
// applied again to content replay changes (mm-replay --deterministic).
#include "http/content_coding.hh"

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <zlib.h>

#include <memory>

#include "http/chunked.hh"
#include "util/text.hh"

namespace {
constexpr size_t kStep = 64 * 1024;

// False (and *why) once the output has reached `limit`.
bool room_left(const std::string& out, size_t limit, std::string* why) {
  if (out.size() < limit) return true;
  if (why) *why = "the decoded content exceeds " + std::to_string(limit) + " bytes";
  return false;
}

void set_why(std::string* why, const std::string& text) {
  if (why) *why = text;
}

enum class InflateResult { ok, corrupt, truncated, too_large };

// One zlib stream (window_bits as inflateInit2 takes them) from `in`; gzip members that follow
// the first are decoded too.
InflateResult inflate_all(std::string_view in, int window_bits, size_t limit, std::string& out, std::string* why) {
  z_stream z{};
  if (inflateInit2(&z, window_bits) != Z_OK) return InflateResult::corrupt;
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, inflateEnd);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  char buffer[kStep];
  for (;;) {
    if (!room_left(out, limit, why)) return InflateResult::too_large;
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    const int status = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
    if (status == Z_STREAM_END) {
      // Another gzip member may follow (RFC 1952 allows several); anything else after the end is ignored.
      if (window_bits > 15 && z.avail_in >= 2 && z.next_in[0] == 0x1f && z.next_in[1] == 0x8b) {
        inflateReset(&z);
        continue;
      }
      return InflateResult::ok;
    }
    if (status == Z_BUF_ERROR || (status == Z_OK && z.avail_in == 0 && z.avail_out != 0))
      return InflateResult::truncated;
    if (status != Z_OK) return InflateResult::corrupt;
  }
}

std::optional<std::string> undo_zlib(std::string_view in, const std::string& coding, size_t limit, std::string* why) {
  std::string out;
  InflateResult result;
  if (coding == "deflate") {
    // RFC 9110 says zlib format; some servers send raw deflate: try that when the header is wrong.
    result = inflate_all(in, 15, limit, out, why);
    if (result == InflateResult::corrupt) {
      out.clear();
      result = inflate_all(in, -15, limit, out, why);
    }
  } else {
    result = inflate_all(in, 15 + 16, limit, out, why);  // gzip header and trailer
  }
  switch (result) {
    case InflateResult::ok:
      return out;
    case InflateResult::truncated:
      set_why(why, "the " + coding + " data is truncated");
      return std::nullopt;
    case InflateResult::corrupt:
      set_why(why, "the " + coding + " data is corrupt");
      return std::nullopt;
    case InflateResult::too_large:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::string> undo_brotli(std::string_view in, size_t limit, std::string* why) {
  std::unique_ptr<BrotliDecoderState, void (*)(BrotliDecoderState*)> state(
      BrotliDecoderCreateInstance(nullptr, nullptr, nullptr), BrotliDecoderDestroyInstance);
  if (!state) {
    set_why(why, "out of memory for the br decoder");
    return std::nullopt;
  }
  std::string out;
  const uint8_t* next_in = reinterpret_cast<const uint8_t*>(in.data());
  size_t avail_in = in.size();
  uint8_t buffer[kStep];
  for (;;) {
    if (!room_left(out, limit, why)) return std::nullopt;
    uint8_t* next_out = buffer;
    size_t avail_out = sizeof buffer;
    const BrotliDecoderResult result =
        BrotliDecoderDecompressStream(state.get(), &avail_in, &next_in, &avail_out, &next_out, nullptr);
    out.append(reinterpret_cast<const char*>(buffer), sizeof buffer - avail_out);
    if (result == BROTLI_DECODER_RESULT_SUCCESS) return out;
    if (result == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT) {
      set_why(why, "the br data is truncated");
      return std::nullopt;
    }
    if (result == BROTLI_DECODER_RESULT_ERROR) {
      set_why(why, "the br data is corrupt");
      return std::nullopt;
    }
  }
}

// `in` as one zlib stream (window_bits as deflateInit2 takes them: 15 zlib, 31 gzip).
std::optional<std::string> apply_zlib(std::string_view in, int window_bits) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return std::nullopt;
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, deflateEnd);
  std::string out(deflateBound(&z, static_cast<uLong>(in.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) return std::nullopt;
  out.resize(out.size() - z.avail_out);
  return out;
}

std::optional<std::string> apply_brotli(std::string_view in) {
  size_t size = BrotliEncoderMaxCompressedSize(in.size());
  if (size == 0) return std::nullopt;
  std::string out(size, '\0');
  // Quality 5: what servers that compress on the fly typically use (11 is for static files).
  if (!BrotliEncoderCompress(5, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, in.size(),
                             reinterpret_cast<const uint8_t*>(in.data()), &size,
                             reinterpret_cast<uint8_t*>(out.data())))
    return std::nullopt;
  out.resize(size);
  return out;
}
}  // namespace

std::optional<std::string> encode_content(std::string_view content, const std::vector<std::string>& codings,
                                          std::string* why) {
  if (content.size() > kMaxDecodedContent) {
    set_why(why, "the content exceeds " + std::to_string(kMaxDecodedContent) + " bytes");
    return std::nullopt;
  }
  std::string body(content);
  for (const std::string& coding : codings) {
    std::optional<std::string> done;
    if (coding == "gzip" || coding == "x-gzip") {
      done = apply_zlib(body, 15 + 16);
    } else if (coding == "deflate") {
      done = apply_zlib(body, 15);
    } else if (coding == "br") {
      done = apply_brotli(body);
    } else {
      set_why(why,
              "the content coding \"" + printable(coding, 40) + "\" is not one mahimahi encodes (gzip, deflate, br)");
      return std::nullopt;
    }
    if (!done) {
      set_why(why, "the " + coding + " encoder failed");
      return std::nullopt;
    }
    body = std::move(*done);
  }
  return body;
}

std::vector<std::string> content_codings(const HttpMessage& message) {
  std::vector<std::string> codings;
  for (const HttpHeader& h : message.headers) {
    if (!equals_ignoring_case(h.key, "Content-Encoding")) continue;
    std::string_view rest = h.value;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string coding = ascii_lowercase(trim_blanks(rest.substr(0, comma)));
      if (!coding.empty() && coding != "identity") codings.push_back(coding);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return codings;
}

bool is_known_coding(std::string_view coding) {
  return coding == "gzip" || coding == "x-gzip" || coding == "deflate" || coding == "br";
}

std::optional<std::string> decode_content(std::string_view body, const std::vector<std::string>& codings,
                                          std::string* why, size_t limit) {
  std::string content(body);
  for (auto coding = codings.rbegin(); coding != codings.rend(); ++coding) {
    std::optional<std::string> undone;
    if (*coding == "gzip" || *coding == "x-gzip" || *coding == "deflate") {
      undone = undo_zlib(content, *coding == "deflate" ? "deflate" : "gzip", limit, why);
    } else if (*coding == "br") {
      undone = undo_brotli(content, limit, why);
    } else {
      set_why(why,
              "the content coding \"" + printable(*coding, 40) + "\" is not one mahimahi decodes (gzip, deflate, br)");
      return std::nullopt;
    }
    if (!undone) return std::nullopt;
    content = std::move(*undone);
  }
  return content;
}

std::optional<std::string> message_content(const HttpMessage& message, std::string* why) {
  return decode_content(decoded_body(message), content_codings(message), why);
}

std::string coding_list_text(const std::vector<std::string>& codings) {
  std::string text;
  for (const std::string& coding : codings) text += (text.empty() ? "" : ", ") + coding;
  return text;
}
