#include "lab/synthetic_presets.h"

#include <array>

namespace strata {

std::span<const SyntheticShape> synthetic_shapes() {
  // The byte-level vocabulary has 259 tokens; presets with a real model's vocabulary size keep
  // its embedding and output sizes (a large share of the bytes a token reads).
  static constexpr std::array kShapes = {
      SyntheticShape{"qwen3moe", "tiny", "", 4, 128, 4, 2, 32, 16, 4, 64, 0, 512, 4096, 1e6f},
      SyntheticShape{"qwen3moe", "small", "", 8, 512, 8, 2, 64, 64, 8, 256, 0, 16384, 32768, 1e6f},
      SyntheticShape{"qwen3moe", "30b-a3b", "Qwen3-30B-A3B", 48, 2048, 32, 4, 128, 128, 8, 768, 0,
                     151936, 40960, 1e6f},
      SyntheticShape{"qwen3moe", "deep", "", 48, 256, 8, 4, 64, 128, 8, 64, 0, 4096, 40960, 1e6f},
      SyntheticShape{"qwen2moe", "tiny", "", 4, 128, 4, 2, 32, 16, 4, 64, 256, 512, 4096, 1e6f},
      SyntheticShape{"qwen2moe", "small", "", 8, 512, 8, 8, 64, 32, 4, 256, 1024, 16384, 32768,
                     1e6f},
      SyntheticShape{"qwen2moe", "a2.7b", "Qwen1.5-MoE-A2.7B", 24, 2048, 16, 16, 128, 60, 4, 1408,
                     5632, 151936, 8192, 1e6f},
  };
  return kShapes;
}

}  // namespace strata
