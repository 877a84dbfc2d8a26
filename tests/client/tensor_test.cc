#include "normserve/client/tensor.h"

#include "gtest/gtest.h"
#include "normserve/client/half.h"

namespace normserve::client {
namespace {

TEST(TensorTest, MakeTensorStoresShapeDtypeAndConvertedBytes) {
  const std::vector<float> values = {1.0f, -2.0f, 0.5f, 3.0f, 1.0f / 3, 100.0f};
  for (v1::DType dtype : {v1::DTYPE_FP32, v1::DTYPE_FP16, v1::DTYPE_BF16}) {
    absl::StatusOr<v1::Tensor> t = MakeTensor(values, {2, 3}, dtype);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->dtype(), dtype);
    ASSERT_EQ(t->shape_size(), 2);
    EXPECT_EQ(t->data().size(), 6 * *DTypeSize(dtype));
    absl::StatusOr<std::vector<float>> back = ToFloats(*t);
    ASSERT_TRUE(back.ok());
    for (size_t i = 0; i < values.size(); ++i) {
      const float expected = dtype == v1::DTYPE_FP32 ? values[i]
                             : dtype == v1::DTYPE_FP16
                                 ? HalfBitsToFloat(FloatToHalfBits(values[i]))
                                 : Bf16BitsToFloat(FloatToBf16Bits(values[i]));
      EXPECT_EQ((*back)[i], expected);
    }
  }
}

TEST(TensorTest, MismatchedShapesAndSizesAreRejected) {
  const std::vector<float> values(5, 1.0f);
  EXPECT_EQ(MakeTensor(values, {2, 3}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeTensor(values, {5, 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(MakeTensor(values, {5}, v1::DTYPE_UNSPECIFIED).ok());
  v1::Tensor t = *MakeTensor(values, {5});
  t.mutable_data()->pop_back();
  absl::Status s = ValidateTensor(t);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("needs 20 bytes but holds 19"), absl::string_view::npos) << s;
}

TEST(TensorTest, ViewsReadTheMessageBytesWithoutCopying) {
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  v1::Tensor t = *MakeTensor(values, {3, 2});
  absl::StatusOr<TensorView> view = View(t);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->rows(), 3);
  EXPECT_EQ(view->hidden(), 2);
  EXPECT_EQ(static_cast<const void*>(view->bytes.data()), t.data().data());
  absl::StatusOr<std::span<const float>> floats = Float32Span(t);
  ASSERT_TRUE(floats.ok());
  EXPECT_EQ(static_cast<const void*>(floats->data()), t.data().data());
  EXPECT_EQ((*floats)[4], 5.0f);
  EXPECT_FALSE(Bits16Span(t).ok());

  v1::Tensor h = *MakeTensor(values, {6}, v1::DTYPE_BF16);
  absl::StatusOr<std::span<const uint16_t>> bits = Bits16Span(h);
  ASSERT_TRUE(bits.ok());
  EXPECT_EQ(Bf16BitsToFloat((*bits)[2]), 3.0f);
  EXPECT_FALSE(Float32Span(h).ok());
}

TEST(TensorTest, BitsTensorsKeepTheirPatterns) {
  const std::vector<uint16_t> bits = {0x3c00, 0xc000};
  const std::vector<int64_t> shape = {2};
  v1::Tensor t = *MakeTensorFromBits(bits, shape, v1::DTYPE_FP16);
  EXPECT_EQ(*ToFloats(t), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_FALSE(MakeTensorFromBits(bits, shape, v1::DTYPE_FP32).ok());
}

TEST(TensorTest, DTypeNamesParseBothWays) {
  for (v1::DType d : {v1::DTYPE_FP32, v1::DTYPE_FP16, v1::DTYPE_BF16}) {
    EXPECT_EQ(*ParseDType(DTypeName(d)), d);
  }
  EXPECT_EQ(*ParseDType("BFloat16"), v1::DTYPE_BF16);
  EXPECT_FALSE(ParseDType("fp8").ok());
}

}  // namespace
}  // namespace normserve::client
