# Every third-party dependency is found here, once, from Debian 12's packages.
# Names that work on Debian 12 are recorded in ../shared/ENVIRONMENT.md.
find_package(Threads REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
find_package(yaml-cpp CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(prometheus-cpp CONFIG REQUIRED)
find_package(GTest CONFIG REQUIRED)
find_package(benchmark CONFIG REQUIRED)
find_package(ZLIB REQUIRED)  # libs/plot: PNG compression
include(GoogleTest)
# The Vulkan backend (libs/kernels/vulkan): the loader plus shaderc for run-time GLSL ->
# SPIR-V. Debian's libshaderc.so is under-linked, so the static shaderc_combined plus
# glslang's SPIRV target are linked instead. PCP_VULKAN defaults ON when all are found.
find_package(Vulkan QUIET COMPONENTS shaderc_combined)
find_package(glslang CONFIG QUIET)
if(Vulkan_FOUND AND TARGET Vulkan::shaderc_combined AND TARGET glslang::SPIRV)
  set(PCP_VULKAN_FOUND ON)
else()
  set(PCP_VULKAN_FOUND OFF)
endif()
option(PCP_VULKAN "Build the Vulkan backend (needs libvulkan-dev, libshaderc-dev, glslang-tools)" ${PCP_VULKAN_FOUND})
if(PCP_VULKAN AND NOT PCP_VULKAN_FOUND)
  message(FATAL_ERROR "PCP_VULKAN=ON but Vulkan, shaderc_combined or glslang was not found")
endif()
