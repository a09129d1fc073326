// SPDX-License-Identifier: GPL-3.0-or-later
#include "tls/client_hello.hh"

#include <openssl/ssl.h>

#include "util/text.hh"

std::string server_name_from_extension(const uint8_t* data, size_t length) {
  if (length < 2) return "";
  const size_t list_length = (static_cast<size_t>(data[0]) << 8) | data[1];
  if (list_length != length - 2) return "";
  size_t pos = 2;
  while (pos + 3 <= length) {
    const uint8_t type = data[pos];
    const size_t name_length = (static_cast<size_t>(data[pos + 1]) << 8) | data[pos + 2];
    pos += 3;
    if (name_length > length - pos) return "";
    if (type == 0 && name_length > 0)  // host_name
      return ascii_lowercase(std::string(reinterpret_cast<const char*>(data + pos), name_length));
    pos += name_length;
  }
  return "";
}

std::string client_hello_server_name(ssl_st* ssl) {
  const unsigned char* data;
  size_t length;
  if (!SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &data, &length)) return "";
  return server_name_from_extension(data, length);
}
