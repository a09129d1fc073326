// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Owners of OpenSSL objects: std::unique_ptr<X509, OpenSslFree<X509_free>> frees with the
// object's own free function.
#include <memory>

template <auto free_function>
struct OpenSslFree {
  template <typename T>
  void operator()(T* p) const {
    free_function(p);
  }
};
