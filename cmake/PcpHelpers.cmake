# One helper per kind of target, so every library, binary and test is declared alike.
#
#   pcp_cc_library(NAME tensor SRCS src/a.cc DEPS pcp::base absl::status)
#     -> target pcp_tensor, alias pcp::tensor; public headers in include/ (as pcp/<lib>/x.h),
#        private ones in src/.
#   pcp_cc_binary(NAME pcp-train SRCS main.cc DEPS pcp::training)
#   pcp_cc_test(NAME tensor_test SRCS tensor_test.cc DEPS pcp::tensor [LABELS slow] [TIMEOUT s])
#     -> a GoogleTest binary registered with ctest as one test, compiled with tests/pch's
#        precompiled header (pcp_reuse_pch).

function(pcp_cc_library)
  cmake_parse_arguments(A "" "NAME" "SRCS;DEPS;PRIVATE_DEPS" ${ARGN})
  set(target pcp_${A_NAME})
  if(A_SRCS)
    add_library(${target} STATIC ${A_SRCS})
    target_include_directories(${target}
      PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
      PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
    target_link_libraries(${target} PUBLIC ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>)
    target_link_libraries(${target} INTERFACE ${A_DEPS})
  endif()
  add_library(pcp::${A_NAME} ALIAS ${target})
endfunction()

function(pcp_cc_binary)
  cmake_parse_arguments(A "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS})
  install(TARGETS ${A_NAME} RUNTIME DESTINATION bin)
endfunction()

# pcp_reuse_pch(target pch_target): compiles target's sources with pch_target's precompiled
# header (tests/pch, services/pch) when PCP_USE_PCH is set (top-level CMakeLists.txt). GCC
# reports a header it cannot use (-Winvalid-pch) and parses the headers as usual.
function(pcp_reuse_pch target pch_target)
  if(PCP_USE_PCH)
    target_precompile_headers(${target} REUSE_FROM ${pch_target})
    target_compile_options(${target} PRIVATE -Winvalid-pch)
  endif()
endfunction()

# The definitions every test is compiled with (also tests/pch's, so its header fits them).
function(pcp_test_definitions target)
  target_compile_definitions(${target} PRIVATE
    PCP_SOURCE_DIR="${PROJECT_SOURCE_DIR}" PCP_DATA_DIR="${PCP_DATA_DIR}"
    PCP_BINARY_DIR="${PROJECT_BINARY_DIR}")
endfunction()

function(pcp_cc_test)
  cmake_parse_arguments(A "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} GTest::gmock GTest::gtest GTest::gtest_main)
  pcp_test_definitions(${A_NAME})
  pcp_reuse_pch(${A_NAME} pcp_test_pch)
  add_test(NAME ${A_NAME} COMMAND ${A_NAME})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  set_tests_properties(${A_NAME} PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS "${A_LABELS}")
endfunction()
