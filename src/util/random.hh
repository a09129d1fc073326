// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A small, fast, reproducible generator (xoshiro256**, seeded through splitmix64): the same
// seed gives the same drops on every machine and compiler, unlike std:: distributions.
#include <cmath>
#include <cstdint>
#include <random>

class Random {
 public:
  explicit Random(uint64_t seed) {
    for (auto& word : state_) word = splitmix(seed);
  }
  static uint64_t fresh_seed() {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }

  uint64_t next() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool bernoulli(double p) { return uniform() < p; }
  // Exponentially distributed with the given mean.
  double exponential(double mean) { return -mean * std::log1p(-uniform()); }

  static uint64_t splitmix(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4];
};
