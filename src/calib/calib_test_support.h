// What the calibration layer's tests share: seeded random text in the golden synthetic models'
// vocabulary, and a calibration made on it.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "calib/expert_calibration.h"

namespace strata::testing {

// `n_tokens` seeded token ids below 500 (inside every golden synthetic vocabulary), dealt in
// turn to `n_sequences` sequences.
inline std::vector<std::vector<int32_t>> random_text(int64_t n_tokens, uint32_t seed,
                                                     int n_sequences = 1) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int32_t>> sequences(static_cast<size_t>(n_sequences));
  for (int64_t t = 0; t < n_tokens; ++t)
    sequences[size_t(t % n_sequences)].push_back(int32_t(rng() % 500));
  return sequences;
}

// A calibration of `model` on random_text(n_tokens, seed), in windows of 200 tokens on 2
// threads; the test fails where it cannot be made.
inline ExpertCalibration calibrate_on_random_text(const std::string& model, int64_t n_tokens,
                                                  uint32_t seed, int64_t n_samples) {
  CalibrationOptions options;
  options.n_threads = 2;
  options.window = 200;
  options.n_samples = n_samples;
  auto result = calibrate_experts(model, random_text(n_tokens, seed), {"test"}, options);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? std::move(result.value()) : ExpertCalibration{};
}

}  // namespace strata::testing
