// core/: dtypes, 16-bit floats, shapes, the caching allocator.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "rill/core/allocator.h"
#include "rill/core/dtype.h"
#include "rill/core/shape.h"
#include "rill/core/tensor.h"
#include "rill/util/error.h"

namespace rill {
namespace {

TEST(DType, PromotionFollowsPyTorch) {
  EXPECT_EQ(promote_types(DType::kUInt8, DType::kInt8), DType::kInt16);
  EXPECT_EQ(promote_types(DType::kBool, DType::kInt32), DType::kInt32);
  EXPECT_EQ(promote_types(DType::kInt64, DType::kFloat16), DType::kFloat16);
  EXPECT_EQ(promote_types(DType::kFloat16, DType::kBFloat16), DType::kFloat32);
  EXPECT_EQ(promote_types(DType::kFloat32, DType::kFloat64), DType::kFloat64);
  for (int a = 0; a < kNumDTypes; ++a)
    for (int b = 0; b < kNumDTypes; ++b)
      EXPECT_EQ(promote_types(DType(a), DType(b)), promote_types(DType(b), DType(a)));
}

TEST(DType, SixteenBitFloatsRoundToNearestEven) {
  EXPECT_EQ(static_cast<float>(Half(1.0f)), 1.0f);
  EXPECT_EQ(static_cast<float>(Half(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(1e6f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(NAN))));
  EXPECT_EQ(static_cast<float>(Half(1.0f + 1.0f / 4096)), 1.0f);  // tie -> even
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f + 1.0f / 256)), 1.0f);  // tie -> even
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(NAN))));
  EXPECT_EQ(static_cast<float>(BFloat16(3.0f)), 3.0f);
}

TEST(Shape, StridesAndBroadcast) {
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (Strides{12, 4, 1}));
  EXPECT_TRUE(strides_are_contiguous({2, 1, 4}, {4, 99, 1}));
  EXPECT_FALSE(strides_are_contiguous({2, 3}, {1, 2}));
  EXPECT_EQ(broadcast_shapes({3, 1}, {4}, "t"), (Shape{3, 4}));
  EXPECT_EQ(broadcast_shapes({}, {2, 2}, "t"), (Shape{2, 2}));
  EXPECT_THROW(broadcast_shapes({3}, {4}, "t"), Error);
  EXPECT_EQ(normalize_dim(-1, 3, "t"), 2);
  EXPECT_EQ(normalize_dim(0, 0, "t"), 0);
  EXPECT_THROW(normalize_dim(3, 3, "t"), Error);
}

TEST(Allocator, ReusesReleasedBlocksAndCountsThem) {
  AllocatorStats before = cpu_allocator::stats();
  void* p = cpu_allocator::allocate(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % cpu_allocator::kAlignment, 0u);
  cpu_allocator::release(p);
  void* q = cpu_allocator::allocate(1000);
  EXPECT_EQ(p, q);  // served from the cache
  cpu_allocator::release(q);
  AllocatorStats after = cpu_allocator::stats();
  EXPECT_EQ(after.num_allocs - before.num_allocs, 2);
  EXPECT_GE(after.num_cache_hits - before.num_cache_hits, 1);
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  cpu_allocator::empty_cache();
  EXPECT_LE(cpu_allocator::stats().reserved_bytes, after.reserved_bytes);
}

TEST(Tensor, StorageIsAllocatedLazilyAndFreedWithTheLastView) {
  int64_t base = cpu_allocator::stats().allocated_bytes;
  {
    Tensor t = Tensor::empty(make_contiguous_meta({256}, DType::kFloat32));
    EXPECT_FALSE(t.storage()->allocated());
    Tensor v = t.view_as_meta(make_contiguous_meta({128}, DType::kFloat32), 128);
    EXPECT_NE(v.data_ptr(), nullptr);
    EXPECT_TRUE(t.storage()->allocated());
    EXPECT_EQ(static_cast<char*>(v.data_ptr()) - static_cast<char*>(t.data_ptr()), 128 * 4);
    EXPECT_GT(cpu_allocator::stats().allocated_bytes, base);
  }
  EXPECT_EQ(cpu_allocator::stats().allocated_bytes, base);
}

}  // namespace
}  // namespace rill
