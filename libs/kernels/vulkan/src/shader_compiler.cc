#include "shader_compiler.h"

#include <shaderc/shaderc.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pcp/base/sha256.h"

namespace pcp::vulkan {
namespace {

// Part of every cache key: a different compiler or settings must not hit old entries.
constexpr absl::string_view kCompilerTag = "shaderc/vulkan1.2/spv1.3/O/v1\n";

std::string NumberedSource(const std::string& glsl) {
  std::string out;
  int line = 1;
  for (absl::string_view l : absl::StrSplit(glsl, '\n')) absl::StrAppend(&out, line++, ": ", l, "\n");
  return out;
}

}  // namespace

struct ShaderCompiler::Shaderc {
  shaderc::Compiler compiler;
  shaderc::CompileOptions options;
};

ShaderCompiler::ShaderCompiler(std::string cache_dir)
    : cache_dir_(std::move(cache_dir)), shaderc_(std::make_unique<Shaderc>()) {
  shaderc_->options.SetTargetEnvironment(shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
  shaderc_->options.SetTargetSpirv(shaderc_spirv_version_1_3);
  shaderc_->options.SetOptimizationLevel(shaderc_optimization_level_performance);
}

ShaderCompiler::~ShaderCompiler() = default;

std::string ShaderCompiler::DefaultCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return absl::StrCat(xdg, "/pcp/spirv");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return absl::StrCat(home, "/.cache/pcp/spirv");
  }
  return "";
}

absl::StatusOr<std::vector<uint32_t>> ShaderCompiler::Compile(const std::string& glsl, absl::string_view name) {
  if (const char* dump = std::getenv("PCP_VULKAN_DUMP_GLSL"); dump != nullptr && *dump != '\0') {
    std::error_code ec;
    std::filesystem::create_directories(dump, ec);
    std::ofstream(absl::StrCat(dump, "/", name, ".comp")) << glsl;
  }
  const std::string key = Sha256Hex(absl::StrCat(kCompilerTag, glsl));
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = memory_.find(key);
    if (it != memory_.end()) return it->second;
  }
  const std::string path = cache_dir_.empty() ? "" : absl::StrCat(cache_dir_, "/", key, ".spv");
  if (!path.empty()) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string bytes = ss.str();
      if (!bytes.empty() && bytes.size() % 4 == 0) {
        std::vector<uint32_t> words(bytes.size() / 4);
        std::memcpy(words.data(), bytes.data(), bytes.size());
        if (words[0] == 0x07230203u) {  // the SPIR-V magic number: not a truncated file
          std::lock_guard<std::mutex> lock(mu_);
          ++disk_hits_;
          memory_[key] = words;
          return words;
        }
      }
    }
  }
  const std::string file = absl::StrCat(name, ".comp");
  const auto start = std::chrono::steady_clock::now();
  shaderc::SpvCompilationResult result =
      shaderc_->compiler.CompileGlslToSpv(glsl, shaderc_glsl_compute_shader, file.c_str(), shaderc_->options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result.GetCompilationStatus() != shaderc_compilation_status_success) {
    return absl::InvalidArgumentError(
        absl::StrCat("shaderc could not compile ", file, ": ", result.GetErrorMessage(), "\n", NumberedSource(glsl)));
  }
  std::vector<uint32_t> words(result.cbegin(), result.cend());
  if (!path.empty()) {
    // Write to a temporary name and rename, so a concurrent reader never sees half a file.
    std::error_code ec;
    std::filesystem::create_directories(cache_dir_, ec);
    const std::string tmp = absl::StrCat(path, ".tmp", reinterpret_cast<uintptr_t>(this));
    std::ofstream out(tmp, std::ios::binary);
    if (out) {
      out.write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(words.size() * 4));
      out.close();
      std::filesystem::rename(tmp, path, ec);
      if (ec) std::filesystem::remove(tmp, ec);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++compiled_;
  compile_seconds_ += seconds;
  memory_[key] = words;
  return words;
}

}  // namespace pcp::vulkan
