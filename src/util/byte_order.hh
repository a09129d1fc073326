// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Big-endian (network byte order) fields of packets and file formats, read and written at any
// alignment.
#include <cstdint>

inline uint16_t load_be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t load_be32(const uint8_t* p) { return static_cast<uint32_t>(load_be16(p)) << 16 | load_be16(p + 2); }
inline void store_be16(uint8_t* p, uint32_t value) {
  p[0] = static_cast<uint8_t>(value >> 8);
  p[1] = static_cast<uint8_t>(value);
}
inline void store_be32(uint8_t* p, uint32_t value) {
  store_be16(p, value >> 16);
  store_be16(p + 2, value);
}
