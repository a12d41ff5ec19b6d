#include "gguf/tensor_types.h"

#include <array>

namespace strata::gguf {
namespace {

// ggml.h's enum ggml_type and ggml.c's type_traits (block sizes and bytes). Ids 4, 5 and 31-33
// were retired upstream and are absent on purpose.
constexpr std::array kTensorTypes = {
    TensorTypeInfo{0, "F32", 1, 4},
    TensorTypeInfo{1, "F16", 1, 2},
    TensorTypeInfo{2, "Q4_0", 32, 18},
    TensorTypeInfo{3, "Q4_1", 32, 20},
    TensorTypeInfo{6, "Q5_0", 32, 22},
    TensorTypeInfo{7, "Q5_1", 32, 24},
    TensorTypeInfo{8, "Q8_0", 32, 34},
    TensorTypeInfo{9, "Q8_1", 32, 36},
    TensorTypeInfo{10, "Q2_K", 256, 84},
    TensorTypeInfo{11, "Q3_K", 256, 110},
    TensorTypeInfo{12, "Q4_K", 256, 144},
    TensorTypeInfo{13, "Q5_K", 256, 176},
    TensorTypeInfo{14, "Q6_K", 256, 210},
    TensorTypeInfo{15, "Q8_K", 256, 292},
    TensorTypeInfo{16, "IQ2_XXS", 256, 66},
    TensorTypeInfo{17, "IQ2_XS", 256, 74},
    TensorTypeInfo{18, "IQ3_XXS", 256, 98},
    TensorTypeInfo{19, "IQ1_S", 256, 50},
    TensorTypeInfo{20, "IQ4_NL", 32, 18},
    TensorTypeInfo{21, "IQ3_S", 256, 110},
    TensorTypeInfo{22, "IQ2_S", 256, 82},
    TensorTypeInfo{23, "IQ4_XS", 256, 136},
    TensorTypeInfo{24, "I8", 1, 1},
    TensorTypeInfo{25, "I16", 1, 2},
    TensorTypeInfo{26, "I32", 1, 4},
    TensorTypeInfo{27, "I64", 1, 8},
    TensorTypeInfo{28, "F64", 1, 8},
    TensorTypeInfo{29, "IQ1_M", 256, 56},
    TensorTypeInfo{30, "BF16", 1, 2},
    TensorTypeInfo{34, "TQ1_0", 256, 54},
    TensorTypeInfo{35, "TQ2_0", 256, 66},
    TensorTypeInfo{39, "MXFP4", 32, 17},
    // Strata's own (quant/q2_0.h): no ggml build reads it.
    TensorTypeInfo{1000, "Q2_0", 64, 18},
};

}  // namespace

const TensorTypeInfo* find_tensor_type(uint32_t id) {
  for (const auto& info : kTensorTypes)
    if (info.id == id) return &info;
  return nullptr;
}

}  // namespace strata::gguf
