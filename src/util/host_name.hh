// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a host name is, one rule for all: the names certificates (tls/), dnsmasq's hosts file
// (replay/) and SNI (record/) carry, and IP literals, which are not names.
#include <string_view>

// A DNS host name: dot-separated labels of 1 to 63 letters (either case), digits, '-' or '_';
// 253 characters at most; no empty label (so no leading, trailing or double dot).
bool is_host_name(std::string_view name);

// An IPv4 address in dotted-quad form, an IPv6 address, or an IPv6 address in brackets
// ("[::1]", as in URLs and Host headers).
bool is_ip_literal(std::string_view name);
