// The GPU's matrix products, conversions and row dequantizer against quant/'s scalar references
// on random data, every format: mat-vec (up to 8 tokens) and tiled GEMM (more), tails of rows
// and tiles, two tasks in one launch, the epilogues. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cuda_backend.h"
#include "base/cpu_features.h"
#include "cpu/kernels/q4_0_groups.h"
#include "cpu/kernels/simd_kernels.h"
#include "cuda/convert_rows.h"
#include "cuda/cuda_memory.h"
#include "cuda/cuda_test_support.h"
#include "cuda/matmul.h"

namespace strata::cuda {
namespace {

using testing::kDotTolerance;
using testing::random_floats;
using testing::random_rows;
using testing::reference_activations;
using testing::row_dot;
using testing::weight_formats;
using testing::with_host_format;

#define SKIP_WITHOUT_GPU() \
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"

template <class T>
DeviceBuffer to_device(const std::vector<T>& values) {
  Result<DeviceBuffer> buffer = DeviceBuffer::allocate(values.size() * sizeof(T) + 16, "a test");
  EXPECT_TRUE(buffer.ok()) << buffer.status().message();
  EXPECT_EQ(
      cudaMemcpy(buffer->data(), values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice),
      cudaSuccess);
  return std::move(buffer).value();
}

template <class T>
std::vector<T> to_host(const DeviceBuffer& buffer, size_t count) {
  std::vector<T> values(count);
  EXPECT_EQ(cudaMemcpy(values.data(), buffer.data(), count * sizeof(T), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return values;
}

// Device copies of converted activation rows.
struct DeviceActivations {
  DeviceBuffer values, d, s, bsums;
  ActivationRows rows;
};

// x (n_rows x n floats) converted on the GPU to `type`; checked against the reference's bytes.
DeviceActivations convert_on_device(QuantType type, const std::vector<float>& x, int64_t n_rows,
                                    int64_t n, DeviceBuffer& x_device) {
  DeviceActivations a;
  x_device = to_device(x);
  a.rows.format = Format(uint32_t(type));
  a.rows.n_in = n;
  if (type == QuantType::kF32) {
    a.rows.values = x_device.data();
    return a;
  }
  const size_t values = size_t(n_rows * n);
  a.values = to_device(std::vector<int16_t>(values, 0x5555));  // poisoned: every byte is written
  a.d = to_device(std::vector<float>(values / 32, NAN));
  a.s = to_device(std::vector<float>(values / 32, NAN));
  a.bsums = to_device(std::vector<int16_t>(values / 16, 0x5555));
  a.rows.values = a.values.data();
  a.rows.d = a.d.as<float>();
  a.rows.s = a.s.as<float>();
  a.rows.bsums = a.bsums.as<int16_t>();
  const RowRange all{0, n_rows};
  EXPECT_EQ(launch_convert_rows({x_device.as<float>(), n, a.rows, {&all, 1}}, nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const testing::HostActivations reference = reference_activations(type, x.data(), n_rows, n);
  const bool halves = type == QuantType::kF16 || type == QuantType::kBF16;
  const auto bytes = to_host<uint8_t>(a.values, halves ? 2 * values : values);
  EXPECT_EQ(std::memcmp(bytes.data(), reference.values.data(), bytes.size()), 0)
      << quant_traits(type).name << " quants";
  if (!halves) {
    EXPECT_EQ(to_host<float>(a.d, values / 32), reference.d) << quant_traits(type).name;
  }
  if (type == QuantType::kQ8_1) {
    EXPECT_EQ(to_host<float>(a.s, values / 32), reference.s);
  }
  if (type == QuantType::kQ8_K) {
    EXPECT_EQ(to_host<int16_t>(a.bsums, values / 16), reference.bsums);
  }
  return a;
}

class GpuMatmul : public ::testing::TestWithParam<QuantType> {};

TEST_P(GpuMatmul, ProductsAreTheReferenceDotProducts) {
  SKIP_WITHOUT_GPU();
  const QuantType type = GetParam();
  const QuantTraits& traits = quant_traits(type);
  constexpr int64_t kOut = 37;  // not a whole number of warps' rows or tiles
  for (const int64_t n : {int64_t(256), int64_t(2304)}) {
    for (const int64_t cols : {int64_t(1), int64_t(3), int64_t(8), int64_t(9), int64_t(70)}) {
      SCOPED_TRACE(std::string(traits.name) + " n " + std::to_string(n) + " tokens " +
                   std::to_string(cols));
      const size_t row_bytes = traits.row_bytes(n);
      const auto first = random_rows(type, kOut, n, 51), second = random_rows(type, kOut, n, 52);
      const auto x = random_floats(size_t(2 * cols * n), 53, 2.0f);
      DeviceBuffer x_device;
      const DeviceActivations a = convert_on_device(traits.vec_dot_type, x, 2 * cols, n, x_device);
      const DeviceBuffer w1 = to_device(first), w2 = to_device(second);
      DeviceBuffer y1 = to_device(std::vector<float>(size_t(cols * kOut), NAN));
      DeviceBuffer y2 = to_device(std::vector<float>(size_t(cols * kOut), NAN));
      MatmulTask tasks[2];
      tasks[0] = {w1.data(), kOut, 0, cols, y1.as<float>(), kOut};
      tasks[1] = {w2.data(), kOut, cols, cols, y2.as<float>(), kOut};
      const MatmulRequest request{Format(uint32_t(type)), false, n, row_bytes, a.rows, tasks};
      ASSERT_EQ(launch_matmul(request, nullptr), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      auto reference = reference_activations(traits.vec_dot_type, x.data(), 2 * cols, n);
      std::vector<uint8_t> x_bytes(quant_traits(traits.vec_dot_type).row_bytes(n) *
                                   size_t(2 * cols));
      const size_t x_stride = x_bytes.size() / size_t(2 * cols);
      for (int64_t c = 0; c < 2 * cols; ++c)
        quant_traits(traits.vec_dot_type)
            .quantize_row(x.data() + c * n, x_bytes.data() + size_t(c) * x_stride, n);
      const std::vector<float> outputs[2] = {to_host<float>(y1, size_t(cols * kOut)),
                                             to_host<float>(y2, size_t(cols * kOut))};
      with_host_format(type, false, [&](auto format) {
        using F = decltype(format);
        for (int t = 0; t < 2; ++t)
          for (int64_t r = 0; r < kOut; ++r)
            for (int64_t c = 0; c < cols; ++c) {
              const auto& w = t == 0 ? first : second;
              float expected;
              traits.vec_dot_reference(n, w.data() + size_t(r) * row_bytes,
                                       x_bytes.data() + size_t(t * cols + c) * x_stride, x_stride,
                                       1, &expected);
              double magnitude;
              row_dot<F>(w.data(), r, row_bytes, n, reference.view(), t * cols + c, &magnitude);
              ASSERT_NEAR(outputs[t][size_t(c * kOut + r)], expected,
                          kDotTolerance * magnitude + 1e-30)
                  << "task " << t << " row " << r << " token " << c;
            }
      });
    }
  }
}

TEST_P(GpuMatmul, RowsDequantizeAsTheReference) {
  SKIP_WITHOUT_GPU();
  const QuantType type = GetParam();
  const QuantTraits& traits = quant_traits(type);
  constexpr int64_t kRows = 20, kN = 512;
  const auto rows = random_rows(type, kRows, kN, 61);
  const std::vector<int32_t> picked = {7, 0, 19, 7};
  const DeviceBuffer w = to_device(rows), ids = to_device(picked);
  DeviceBuffer out = to_device(std::vector<float>(picked.size() * kN, NAN));
  ASSERT_EQ(
      launch_dequantize_rows(Format(uint32_t(type)), w.data(), traits.row_bytes(kN), kN,
                             ids.as<int32_t>(), int64_t(picked.size()), out.as<float>(), nullptr),
      cudaSuccess);
  const auto ours = to_host<float>(out, picked.size() * kN);
  std::vector<float> expected(kN);
  for (size_t t = 0; t < picked.size(); ++t) {
    traits.dequantize_row(rows.data() + size_t(picked[t]) * traits.row_bytes(kN), expected.data(),
                          kN);
    EXPECT_EQ(std::memcmp(ours.data() + t * kN, expected.data(), kN * sizeof(float)), 0)
        << traits.name << " row " << picked[t];
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, GpuMatmul, ::testing::ValuesIn(weight_formats()),
                         [](const auto& info) {
                           return std::string(quant_traits(info.param).name);
                         });

// The formats whose kernels repeat the CPU's float operations (matmul.cu) give the CPU kernels'
// bits: the AVX2 ones (to which the AVX-512 ones are bit-identical), and for Q4_0 in row groups
// the grouped AVX-512 VNNI kernel.
class GpuMatmulCpuOrder : public ::testing::TestWithParam<QuantType> {};

TEST_P(GpuMatmulCpuOrder, RepeatsTheCpuKernelsBitForBit) {
  SKIP_WITHOUT_GPU();
  const QuantType type = GetParam();
  if (simd_level() != SimdLevel::kAvx2) GTEST_SKIP() << "the CPU's AVX2 kernels are not in use";
  const QuantTraits& traits = quant_traits(type);
  constexpr int64_t kOut = 24, kN = 2304;
  const size_t row_bytes = traits.row_bytes(kN);
  const QuantTraits& activation = quant_traits(traits.vec_dot_type);
  for (const bool grouped : {false, true}) {
    if (grouped && !(type == QuantType::kQ4_0 && avx512_vnni())) continue;
    const auto plain = random_rows(type, kOut, kN, 91);
    auto rows = plain;
    if (grouped) group_q4_0_rows(rows.data(), kN, kOut);
    for (const int64_t cols : {int64_t(1), int64_t(11)}) {
      SCOPED_TRACE(std::string(traits.name) + (grouped ? " grouped" : "") + ", tokens " +
                   std::to_string(cols));
      const auto x = random_floats(size_t(cols * kN), 92, 2.0f);
      DeviceBuffer x_device;
      const DeviceActivations a = convert_on_device(traits.vec_dot_type, x, cols, kN, x_device);
      const DeviceBuffer w = to_device(rows);
      DeviceBuffer y = to_device(std::vector<float>(size_t(cols * kOut), NAN));
      const MatmulTask task{w.data(), kOut, 0, cols, y.as<float>(), kOut};
      const MatmulRequest request{
          Format(uint32_t(type)), grouped, kN, row_bytes, a.rows, {&task, 1}};
      ASSERT_EQ(launch_matmul(request, nullptr), cudaSuccess);
      const auto ours = to_host<float>(y, size_t(cols * kOut));
      const size_t x_stride = activation.row_bytes(kN);
      std::vector<uint8_t> x_bytes(x_stride * size_t(cols));
      for (int64_t c = 0; c < cols; ++c)
        activation.quantize_row(x.data() + c * kN, x_bytes.data() + size_t(c) * x_stride, kN);
      std::vector<float> expected(size_t(cols * kOut));
      if (grouped) {
        vec_dot_q4_0_groups_avx512(kN, rows.data(), int(kOut / kQ4_0GroupRows), x_bytes.data(),
                                   x_stride, int(cols), expected.data(), kOut);
      } else {
        std::vector<float> column(static_cast<size_t>(cols));
        for (int64_t r = 0; r < kOut; ++r) {
          find_simd_kernels(type)->dot_avx2(kN, rows.data() + size_t(r) * row_bytes, x_bytes.data(),
                                            x_stride, int(cols), column.data());
          for (int64_t c = 0; c < cols; ++c) expected[size_t(c * kOut + r)] = column[size_t(c)];
        }
      }
      EXPECT_EQ(std::memcmp(ours.data(), expected.data(), ours.size() * sizeof(float)), 0);
      for (size_t i = 0; i < ours.size() && i < 3; ++i)
        if (ours[i] != expected[i])
          ADD_FAILURE() << "output " << i << ": " << ours[i] << " vs " << expected[i];
    }
  }
}

// Every format but the k-quants (Q8_K activations), which keep their own order.
INSTANTIATE_TEST_SUITE_P(CpuOrderedFormats, GpuMatmulCpuOrder,
                         ::testing::Values(QuantType::kF32, QuantType::kF16, QuantType::kBF16,
                                           QuantType::kQ8_0, QuantType::kQ4_0, QuantType::kQ4_1,
                                           QuantType::kQ5_0, QuantType::kQ5_1, QuantType::kIQ4_NL,
                                           QuantType::kQ2_0),
                         [](const auto& info) {
                           return std::string(quant_traits(info.param).name);
                         });

// Bias, accumulation and SiLU(gate) * up, on a mat-vec and a GEMM task.
TEST(GpuMatmulEpilogues, AddBiasAccumulateAndGate) {
  SKIP_WITHOUT_GPU();
  constexpr int64_t kOut = 50, kN = 128;
  const auto rows = random_rows(QuantType::kF32, kOut, kN, 81);
  const auto bias = random_floats(kOut, 82), gate = random_floats(size_t(70 * kOut), 83);
  const auto start = random_floats(size_t(70 * kOut), 84);
  for (const int64_t cols : {int64_t(2), int64_t(70)}) {
    const auto x = random_floats(size_t(cols * kN), 85);
    DeviceBuffer x_device;
    const DeviceActivations a = convert_on_device(QuantType::kF32, x, cols, kN, x_device);
    const DeviceBuffer w = to_device(rows), b = to_device(bias), g = to_device(gate);
    DeviceBuffer plain = to_device(std::vector<float>(size_t(cols * kOut), NAN));
    DeviceBuffer biased = to_device(std::vector<float>(size_t(cols * kOut), NAN));
    DeviceBuffer accumulated = to_device(start),
                 gated = to_device(std::vector<float>(size_t(cols * kOut), NAN));
    MatmulTask tasks[4];
    tasks[0] = {w.data(), kOut, 0, cols, plain.as<float>(), kOut};
    tasks[1] = tasks[0];
    tasks[1].y = biased.as<float>();
    tasks[1].bias = b.as<float>();
    tasks[2] = tasks[0];
    tasks[2].y = accumulated.as<float>();
    tasks[2].epilogue = Epilogue::kAccumulate;
    tasks[3] = tasks[0];
    tasks[3].y = gated.as<float>();
    tasks[3].gate = g.as<float>();
    tasks[3].epilogue = Epilogue::kSiluTimes;
    const MatmulRequest request{Format::kF32, false, kN, kN * 4, a.rows, tasks};
    ASSERT_EQ(launch_matmul(request, nullptr), cudaSuccess);
    const size_t count = size_t(cols * kOut);
    const auto p = to_host<float>(plain, count), pb = to_host<float>(biased, count);
    const auto pa = to_host<float>(accumulated, count), pg = to_host<float>(gated, count);
    for (size_t i = 0; i < count; ++i) {
      const size_t r = i % kOut;
      EXPECT_EQ(pb[i], p[i] + bias[r]) << i;
      EXPECT_EQ(pa[i], start[i] + p[i]) << i;
      EXPECT_FLOAT_EQ(pg[i], gate[i] / (1.0f + std::exp(-gate[i])) * p[i]) << i;
    }
  }
}

}  // namespace
}  // namespace strata::cuda
