// GLSL compute shaders -> SPIR-V with shaderc at run time, cached in memory and on disk
// (one <sha256 of compiler tag + source>.spv file per shader), so a second process that
// compiles the same program skips shaderc entirely.
//
// With PCP_VULKAN_DUMP_GLSL=DIR every source compiled is also written to DIR/<name>.comp.
//
//   ShaderCompiler compiler(ShaderCompiler::DefaultCacheDir());
//   PCP_ASSIGN_OR_RETURN(std::vector<uint32_t> spirv, compiler.Compile(glsl, "fused_add_3"));
#ifndef PCP_KERNELS_VULKAN_SRC_SHADER_COMPILER_H_
#define PCP_KERNELS_VULKAN_SRC_SHADER_COMPILER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp::vulkan {

class ShaderCompiler {
 public:
  // `cache_dir` empty: no disk cache.
  explicit ShaderCompiler(std::string cache_dir);
  ~ShaderCompiler();
  // $XDG_CACHE_HOME/pcp/spirv, else $HOME/.cache/pcp/spirv, else "" (no disk cache).
  static std::string DefaultCacheDir();

  // InvalidArgument with shaderc's messages and the numbered source when GLSL does not compile.
  absl::StatusOr<std::vector<uint32_t>> Compile(const std::string& glsl, absl::string_view name);

  int compiled() const { return compiled_; }  // shaderc invocations
  int disk_hits() const { return disk_hits_; }
  double compile_seconds() const { return compile_seconds_; }  // inside shaderc

 private:
  struct Shaderc;  // shaderc::Compiler, created once (its setup is not free)
  std::string cache_dir_;
  std::unique_ptr<Shaderc> shaderc_;
  double compile_seconds_ = 0;
  std::mutex mu_;
  absl::flat_hash_map<std::string, std::vector<uint32_t>> memory_;
  int compiled_ = 0, disk_hits_ = 0;
};

}  // namespace pcp::vulkan

#endif  // PCP_KERNELS_VULKAN_SRC_SHADER_COMPILER_H_
