// Deferred uploads on the Vulkan backend (libs/kernels/vulkan/src/buffer_pool.h): a small
// upload waits in the context for the next submission instead of a queue round trip of its
// own. Through the backend's private headers: small uploads are deferred and a download, a large
// upload or a Flush submits them; uploads into one buffer land in order, before a large upload
// and a download that follow; a pool destroyed with copies deferred submits them first. Through
// the public API: a train-step-like sequence (small CopyIns, Run, CopyOut) gives the
// interpreter's results. Skipped without a Vulkan device.
#include <memory>
#include <vector>

#include "buffer_pool.h"  // libs/kernels/vulkan/src
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/kernels/vulkan_backend.h"
#include "pcp/testing/tensor_testing.h"
#include "vulkan_context.h"  // libs/kernels/vulkan/src

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;

std::vector<float> Iota(size_t n, float from) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from + static_cast<float>(i);
  return v;
}

std::vector<float> Download(vulkan::BufferPool& pool, const vulkan::DeviceBuffer& b, size_t n) {
  std::vector<float> out(n, -1);
  const absl::Status s = vulkan::DownloadFromBuffer(pool, b, n * sizeof(float), out.data());
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(VulkanUploadTest, SmallUploadsWaitForTheNextSubmissionInOrder) {
  absl::StatusOr<std::shared_ptr<vulkan::VulkanContext>> ctx = vulkan::VulkanContext::Create({});
  if (!ctx.ok()) GTEST_SKIP() << "no Vulkan device: " << ctx.status();
  vulkan::BufferPool pool(*ctx);
  constexpr size_t kSmall = 64, kLarge = (vulkan::kDeferredUploadBytes / sizeof(float)) + 5;
  absl::StatusOr<vulkan::DeviceBuffer> a = pool.Acquire(kSmall * sizeof(float), false);
  absl::StatusOr<vulkan::DeviceBuffer> big = pool.Acquire(kLarge * sizeof(float), false);
  ASSERT_TRUE(a.ok() && big.ok());

  // Two uploads into `a`: both deferred, the second lands last; with the download, one
  // submission.
  const std::vector<float> first = Iota(kSmall, 0), second = Iota(kSmall, 1000);
  const uint64_t before = (*ctx)->submissions();
  ASSERT_TRUE(vulkan::UploadToBuffer(pool, first.data(), kSmall * sizeof(float), *a).ok());
  ASSERT_TRUE(vulkan::UploadToBuffer(pool, second.data(), kSmall * sizeof(float), *a).ok());
  EXPECT_EQ((*ctx)->deferred_bytes(), 2 * kSmall * sizeof(float));
  EXPECT_EQ((*ctx)->submissions(), before);
  EXPECT_EQ(Download(pool, *a, kSmall), second);  // the download submitted them first
  EXPECT_EQ((*ctx)->deferred_bytes(), 0u);
  EXPECT_EQ((*ctx)->submissions(), before + 1);

  // A large upload is not deferred, and goes after what was.
  const std::vector<float> third = Iota(kSmall, 2000), large = Iota(kLarge, 7);
  ASSERT_TRUE(vulkan::UploadToBuffer(pool, third.data(), kSmall * sizeof(float), *a).ok());
  ASSERT_TRUE(vulkan::UploadToBuffer(pool, large.data(), kLarge * sizeof(float), *big).ok());
  EXPECT_EQ((*ctx)->deferred_bytes(), 0u);
  EXPECT_EQ(Download(pool, *a, kSmall), third);
  EXPECT_EQ(Download(pool, *big, kLarge), large);

  // Flush submits them alone.
  ASSERT_TRUE(vulkan::UploadToBuffer(pool, first.data(), kSmall * sizeof(float), *a).ok());
  EXPECT_GT((*ctx)->deferred_bytes(), 0u);
  ASSERT_TRUE((*ctx)->Flush().ok());
  EXPECT_EQ((*ctx)->deferred_bytes(), 0u);
  EXPECT_EQ(Download(pool, *a, kSmall), first);

  // Past kMaxDeferredBytes uploads are submitted at once (with what waited).
  const std::vector<float> chunk = Iota(vulkan::kDeferredUploadBytes / sizeof(float), 3);
  std::vector<vulkan::DeviceBuffer> chunks;
  for (VkDeviceSize held = 0; held <= vulkan::kMaxDeferredBytes; held += vulkan::kDeferredUploadBytes) {
    absl::StatusOr<vulkan::DeviceBuffer> c = pool.Acquire(vulkan::kDeferredUploadBytes, false);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(vulkan::UploadToBuffer(pool, chunk.data(), vulkan::kDeferredUploadBytes, *c).ok());
    EXPECT_LE((*ctx)->deferred_bytes(), vulkan::kMaxDeferredBytes);
    chunks.push_back(*c);
  }
  for (const vulkan::DeviceBuffer& c : chunks) {
    EXPECT_EQ(Download(pool, c, chunk.size()), chunk);
    pool.Release(c);
  }

  // The pool goes with a copy deferred: it is submitted first (no use of a freed buffer).
  ASSERT_TRUE(vulkan::UploadToBuffer(pool, second.data(), kSmall * sizeof(float), *a).ok());
  pool.Release(*a);
  pool.Release(*big);
}

// What a train step does (its scalars and batch copied in, a Run, the loss copied out), three
// times with new inputs each time: the interpreter's results each time.
TEST(VulkanUploadTest, SmallCopyInsThenRunMatchTheInterpreter) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = CreateVulkanBackend({});
  if (!backend.ok()) GTEST_SKIP() << "no Vulkan device: " << backend.status();
  FunctionBuilder b("step_like");
  const ValueId w = b.Parameter({DType::kF32, {8, 5}}, "w");
  const ValueId x = b.Parameter({DType::kF32, {3, 8}}, "x");
  const ValueId lr = b.Parameter({DType::kF32, {}}, "lr");
  const ValueId y = b.MatMul(x, w);
  const ValueId loss = b.Mul(b.ReduceSum(b.Mul(y, y), {0, 1}), lr);
  b.Return({loss, y});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<std::unique_ptr<Executable>> exe = (*backend)->Compile(*f);
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> in, out;
  for (ValueId p : f->params) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = (*backend)->Allocate(f->type(p));
    ASSERT_TRUE(buf.ok());
    in.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  for (ValueId r : f->results) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = (*backend)->Allocate(f->type(r));
    ASSERT_TRUE(buf.ok());
    out.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  for (uint64_t step = 0; step < 3; ++step) {
    std::vector<Tensor> args;
    for (size_t i = 0; i < f->params.size(); ++i) {
      args.push_back(RandomTensor(f->type(f->params[i]), 10 * step + i));
      ASSERT_TRUE((*backend)->CopyIn(args.back(), *in[i]).ok());
    }
    ASSERT_TRUE((*exe)->Run(in, out).ok());
    absl::StatusOr<std::vector<Tensor>> want = Interpret(*f, args);
    ASSERT_TRUE(want.ok()) << want.status();
    for (size_t i = 0; i < out.size(); ++i) {
      absl::StatusOr<Tensor> got = (*backend)->CopyOut(*out[i]);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(TensorsNear(*got, (*want)[i], 1e-5, 1e-6)) << "step " << step << " result " << i;
    }
  }
}

}  // namespace
}  // namespace pcp
