// Interoperability with PyTorch: files written here are read by torch and vice versa.
// Debian's python3-torch has no safetensors package, so the Python side parses and writes
// the format itself (struct + json + torch.frombuffer). Skipped, with the reason printed,
// when /usr/bin/python3 cannot import torch.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/tensor/convert.h"
#include "pcp/tensor/safetensors.h"

namespace pcp {
namespace {

namespace fs = std::filesystem;

constexpr char kPython[] = "/usr/bin/python3";

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

ProcessResult RunCommand(const std::string& command) {
  ProcessResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Empty if torch is importable, else why not.
std::string WhyNoTorch() {
  static const std::string* why = [] {
    if (!fs::exists(kPython)) return new std::string(std::string(kPython) + " does not exist");
    ProcessResult r = RunCommand(std::string(kPython) + " -c 'import torch, numpy'");
    if (r.exit_code == 0) return new std::string();
    return new std::string(std::string(kPython) + " cannot import torch: " + r.output);
  }();
  return *why;
}

class SafetensorsTorchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = WhyNoTorch(); !why.empty()) {
      std::printf("Skipping: %s\n", why.c_str());
      GTEST_SKIP() << why;
    }
    std::string templ = ::testing::TempDir() + "/pcp_safetensors_torch_XXXXXX";
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Writes `script` to a file and runs it with `arg`; fails the test on a non-zero exit.
  std::string RunScript(const std::string& script, const std::string& arg) {
    std::string script_path = dir_ + "/script.py";
    EXPECT_TRUE(WriteFileAtomic(script_path, script).ok());
    ProcessResult r = RunCommand(std::string(kPython) + " '" + script_path + "' '" + arg + "'");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output;
  }

  std::string dir_;
};

// Shared by both scripts: the format, parsed and written with the standard library.
constexpr char kPythonFormat[] = R"PY(
import json, struct, sys
import torch
DTYPES = {'F32': torch.float32, 'F16': torch.float16, 'BF16': torch.bfloat16,
          'I32': torch.int32, 'I64': torch.int64, 'BOOL': torch.bool}
NAMES = {v: k for k, v in DTYPES.items()}

def read_safetensors(path):
    buf = bytearray(open(path, 'rb').read())
    (n,) = struct.unpack('<Q', bytes(buf[:8]))
    assert n % 8 == 0, 'header length %d is not padded to 8' % n
    text = bytes(buf[8:8 + n]).decode('utf-8')
    assert text.rstrip(' ').endswith('}') and len(text) - len(text.rstrip(' ')) < 8, repr(text)
    header = json.loads(text)
    meta = header.pop('__metadata__', {})
    data = buf[8 + n:]
    spans = sorted(tuple(e['data_offsets']) for e in header.values())
    pos = 0
    for b, e in spans:
        assert b == pos, 'data not contiguous at %d' % b
        pos = e
    assert pos == len(data), 'trailing data'
    tensors = {}
    for name, e in header.items():
        b, end = e['data_offsets']
        dt = DTYPES[e['dtype']]
        if end == b:
            t = torch.empty(e['shape'], dtype=dt)
        else:
            t = torch.frombuffer(data[b:end], dtype=dt).reshape(e['shape'])
        tensors[name] = t
    return tensors, meta

def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()

def write_safetensors(path, tensors, meta, header_order):
    header, data, offset = {}, b'', 0
    for name, t in tensors:
        raw = tensor_bytes(t)
        header[name] = {'dtype': NAMES[t.dtype], 'shape': list(t.shape),
                        'data_offsets': [offset, offset + len(raw)]}
        data += raw
        offset += len(raw)
    ordered = {k: header[k] for k in header_order}
    ordered['__metadata__'] = meta
    text = json.dumps(ordered, separators=(',', ':')).encode('utf-8')
    text += b' ' * ((8 - len(text) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)) + text + data)

def same_bits(a, b, name):
    assert a.dtype == b.dtype, (name, a.dtype, b.dtype)
    assert a.shape == b.shape, (name, a.shape, b.shape)
    view = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
    if a.dtype in view:
        a, b = a.view(view[a.dtype]), b.view(view[b.dtype])
    assert torch.equal(a, b), (name, a, b)
)PY";

constexpr float kSpecialValues[] = {1.0f,     -2.5f,    65504.0f, 6.1e-05f, 1e-07f,
                                    3.14159f, 70000.0f, -0.0f,    1e38f,    65520.0f};

TEST_F(SafetensorsTorchTest, TorchReadsWhatWeWrite) {
  std::vector<float> f32(6), special(std::begin(kSpecialValues), std::end(kSpecialValues));
  for (int i = 0; i < 6; ++i) f32[i] = i * 0.5f - 1.25f;
  Tensor f16(DType::kF16, {10}), bf16(DType::kBF16, {5, 2});
  for (int i = 0; i < 10; ++i) {
    f16.data<uint16_t>()[i] = FloatToHalf(special[i]);
    bf16.data<uint16_t>()[i] = FloatToBFloat16(special[i]);
  }
  std::vector<NamedTensor> tensors = {
      {"f32", Tensor::FromVector<float>({2, 3}, f32)},
      {"f16", f16},
      {"bf16", bf16},
      {"i32", Tensor::FromVector<int32_t>({5}, {INT32_MIN, -1, 0, 1, INT32_MAX})},
      {"i64", Tensor::FromVector<int64_t>({2, 2}, {INT64_MIN, -1, int64_t{1} << 40, INT64_MAX})},
      {"mask", Tensor::FromVector<bool>({3}, {true, false, true})},
      {"scalar", Tensor::Scalar<float>(3.5f)},
      {"empty", Tensor(DType::kF32, {0, 4})},
  };
  std::string path = dir_ + "/from_cpp.safetensors";
  ASSERT_TRUE(WriteSafetensorsFile(path, tensors, {{"format", "pt"}, {"step", "42"}}).ok());

  std::string script = std::string(kPythonFormat) + R"PY(
t, meta = read_safetensors(sys.argv[1])
assert meta == {'format': 'pt', 'step': '42'}, meta
assert list(t) == ['f32', 'f16', 'bf16', 'i32', 'i64', 'mask', 'scalar', 'empty'], list(t)
special = torch.tensor([1.0, -2.5, 65504.0, 6.1e-05, 1e-07, 3.14159, 70000.0, -0.0, 1e38,
                        65520.0], dtype=torch.float32)
same_bits(t['f32'], torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.5 - 1.25, 'f32')
same_bits(t['f16'], special.to(torch.float16), 'f16')
same_bits(t['bf16'], special.to(torch.bfloat16).reshape(5, 2), 'bf16')
same_bits(t['i32'], torch.tensor([-2**31, -1, 0, 1, 2**31 - 1], dtype=torch.int32), 'i32')
same_bits(t['i64'], torch.tensor([[-2**63, -1], [2**40, 2**63 - 1]], dtype=torch.int64), 'i64')
same_bits(t['mask'], torch.tensor([True, False, True]), 'mask')
same_bits(t['scalar'], torch.tensor(3.5), 'scalar')
same_bits(t['empty'], torch.empty((0, 4)), 'empty')
print('verified', len(t), 'tensors')
)PY";
  EXPECT_THAT(RunScript(script, path), ::testing::HasSubstr("verified 8 tensors"));
}

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

TEST_F(SafetensorsTorchTest, WeReadWhatTorchWritesAndRoundLikeTorch) {
  std::string path = dir_ + "/from_torch.safetensors";
  std::string script = std::string(kPythonFormat) + R"PY(
torch.manual_seed(0)
def f(bits):
    return struct.unpack('<f', struct.pack('<I', bits))[0]
special = [f(b) for b in (0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0x7F7FFFFF,
                          0x00018000, 0x33000000, 0x33000001, 0x33C00000, 0x387FC000,
                          0x387FE000, 0x477FF000, 0x477FEFFF, 0x3A001000, 0x3A003000,
                          0x80000000, 0x00000001, 0x7F800000, 0xFF800000, 0x7FC00000)]
special += [65504.0, 65519.0, 65520.0, 1e-8, -3e-8, 2049.0, 1e38, -1e-45, 0.1, -1.0 / 3]
src = torch.cat([torch.tensor(special, dtype=torch.float32),
                 torch.randn(4000) * torch.logspace(-12, 12, 4000)])
ints = torch.randint(-2**24, 2**24, (3000,), dtype=torch.int32)
trunc = torch.tensor([1.9, -2.7, 0.5, -0.5, 100.99, -7.0, 2e9, -2e9])
tensors = [
    ('a_f32', torch.arange(12, dtype=torch.float32).reshape(3, 4) * 0.25 - 1),
    ('src_f32', src), ('src_bf16', src.to(torch.bfloat16)), ('src_f16', src.to(torch.float16)),
    ('bf16_as_f32', src.to(torch.bfloat16).float()), ('f16_as_f32', src.to(torch.float16).float()),
    ('ints', ints), ('ints_bf16', ints.to(torch.bfloat16)), ('ints_f16', ints.to(torch.float16)),
    ('trunc', trunc), ('trunc_i32', trunc.to(torch.int32)), ('trunc_i64', trunc.to(torch.int64)),
    ('i64', torch.tensor([[-2**63, 2**63 - 1], [1 << 40, -5]], dtype=torch.int64)),
    ('mask', torch.tensor([True, False, True, True])),
    ('scalar', torch.tensor(2.5, dtype=torch.bfloat16)),
    ('empty', torch.zeros((0, 3), dtype=torch.float16)),
]
# Header keys in reverse order, metadata last: readers must not rely on key order.
write_safetensors(sys.argv[1], tensors, {'writer': 'torch ' + torch.__version__},
                  [name for name, _ in reversed(tensors)])
print('wrote', len(tensors), 'tensors')
)PY";
  ASSERT_THAT(RunScript(script, path), ::testing::HasSubstr("wrote 16 tensors"));

  absl::StatusOr<SafetensorsContents> c = ReadSafetensorsFile(path);
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<std::string> names;
  for (const NamedTensor& t : c->tensors) names.push_back(t.name);
  EXPECT_THAT(names, ::testing::ElementsAre("a_f32", "src_f32", "src_bf16", "src_f16", "bf16_as_f32", "f16_as_f32",
                                            "ints", "ints_bf16", "ints_f16", "trunc", "trunc_i32", "trunc_i64", "i64",
                                            "mask", "scalar", "empty"));
  ASSERT_EQ(c->metadata.size(), 1u);
  EXPECT_EQ(c->metadata[0].first, "writer");
  EXPECT_THAT(c->metadata[0].second, ::testing::StartsWith("torch "));

  const Tensor& a = *c->Find("a_f32");
  ASSERT_EQ(a.shape(), (Shape{3, 4}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(a.data<float>()[i], i * 0.25f - 1) << i;
  EXPECT_EQ(c->Find("i64")->ToVector<int64_t>(), (std::vector<int64_t>{INT64_MIN, INT64_MAX, int64_t{1} << 40, -5}));
  EXPECT_EQ(c->Find("mask")->ToVector<uint8_t>(), (std::vector<uint8_t>{1, 0, 1, 1}));
  const Tensor& scalar = *c->Find("scalar");
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.dtype(), DType::kBF16);
  EXPECT_EQ(BFloat16ToFloat(scalar.data<uint16_t>()[0]), 2.5f);
  EXPECT_EQ(c->Find("empty")->shape(), (Shape{0, 3}));
  EXPECT_EQ(c->Find("empty")->dtype(), DType::kF16);

  // Our scalar conversions agree with torch's bit for bit (NaN: both NaN).
  const Tensor& src = *c->Find("src_f32");
  const Tensor& src_bf16 = *c->Find("src_bf16");
  const Tensor& src_f16 = *c->Find("src_f16");
  const Tensor& bf16_as_f32 = *c->Find("bf16_as_f32");
  const Tensor& f16_as_f32 = *c->Find("f16_as_f32");
  ASSERT_EQ(src.num_elements(), 4030);
  Tensor our_bf16 = *ConvertTensor(src, DType::kBF16);
  Tensor our_f16 = *ConvertTensor(src, DType::kF16);
  Tensor our_bf16_up = *ConvertTensor(src_bf16, DType::kF32);
  Tensor our_f16_up = *ConvertTensor(src_f16, DType::kF32);
  int nans = 0;
  for (int64_t i = 0; i < src.num_elements(); ++i) {
    float s = src.data<float>()[i];
    uint16_t tb = src_bf16.data<uint16_t>()[i], th = src_f16.data<uint16_t>()[i];
    if (std::isnan(s)) {
      ++nans;
      EXPECT_TRUE(std::isnan(BFloat16ToFloat(our_bf16.data<uint16_t>()[i])));
      EXPECT_TRUE(std::isnan(HalfToFloat(our_f16.data<uint16_t>()[i])));
      EXPECT_TRUE(std::isnan(BFloat16ToFloat(tb)) && std::isnan(HalfToFloat(th)));
      continue;
    }
    ASSERT_EQ(FloatToBFloat16(s), tb) << "element " << i << " bits " << std::hex << Bits(s);
    ASSERT_EQ(FloatToHalf(s), th) << "element " << i << " bits " << std::hex << Bits(s);
    ASSERT_EQ(our_bf16.data<uint16_t>()[i], tb) << i;
    ASSERT_EQ(our_f16.data<uint16_t>()[i], th) << i;
    ASSERT_EQ(Bits(BFloat16ToFloat(tb)), Bits(bf16_as_f32.data<float>()[i])) << i;
    ASSERT_EQ(Bits(HalfToFloat(th)), Bits(f16_as_f32.data<float>()[i])) << i;
    ASSERT_EQ(Bits(our_bf16_up.data<float>()[i]), Bits(bf16_as_f32.data<float>()[i])) << i;
    ASSERT_EQ(Bits(our_f16_up.data<float>()[i]), Bits(f16_as_f32.data<float>()[i])) << i;
  }
  EXPECT_EQ(nans, 1);

  // Integer -> bf16/f16 (|v| < 2^24, where torch's route through f32 is exact) and
  // float -> integer truncation.
  const Tensor& ints = *c->Find("ints");
  EXPECT_TRUE(BitwiseEqual(*ConvertTensor(ints, DType::kBF16), *c->Find("ints_bf16")));
  EXPECT_TRUE(BitwiseEqual(*ConvertTensor(ints, DType::kF16), *c->Find("ints_f16")));
  const Tensor& trunc = *c->Find("trunc");
  EXPECT_TRUE(BitwiseEqual(*ConvertTensor(trunc, DType::kI32), *c->Find("trunc_i32")));
  EXPECT_TRUE(BitwiseEqual(*ConvertTensor(trunc, DType::kI64), *c->Find("trunc_i64")));

  // And the file we would write for the same tensors is byte-identical in its data section.
  std::string ours = SerializeSafetensors(c->tensors, c->metadata);
  absl::StatusOr<std::string> theirs = ReadFile(path);
  ASSERT_TRUE(theirs.ok());
  uint64_t n_ours = 0, n_theirs = 0;
  std::memcpy(&n_ours, ours.data(), 8);
  std::memcpy(&n_theirs, theirs->data(), 8);
  EXPECT_EQ(ours.substr(8 + n_ours), theirs->substr(8 + n_theirs));
}

}  // namespace
}  // namespace pcp
