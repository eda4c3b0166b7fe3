# Target helpers in the spirit of absl_cc_library: a folder declares a library, a test or a
# benchmark in a few lines.
#
#   tpusim_cc_library(NAME tensor SRCS tensor.cc HDRS tensor.h DEPS absl::status)
#     in strategy/runtime/ creates target tpusim_strategy_runtime_tensor with the alias
#     tpusim::strategy::runtime::tensor. Without SRCS the library is header-only (INTERFACE).
#
#   tpusim_cc_test(NAME tensor_test SRCS tensor_test.cc DEPS tpusim::strategy::runtime::tensor
#                  [SYSTEMC] [TIMEOUT seconds])
#     creates the executable tensor_test and registers every TEST with gtest_discover_tests, so
#     each TEST runs in its own process. SYSTEMC links the SystemC test main (which defines
#     sc_main and turns SystemC warnings and errors into failures); otherwise gtest_main.
#
#   tpusim_cc_benchmark(NAME rebatch_benchmark SRCS rebatch_benchmark.cc DEPS ...)
#     creates a Google Benchmark program (not registered with ctest).

# The folder of the current CMakeLists.txt relative to the repository root, with '/'
# replaced by `sep`.
function(_tpusim_folder_id out sep)
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  string(REPLACE "/" "${sep}" id "${rel}")
  set(${out} "${id}" PARENT_SCOPE)
endfunction()

function(tpusim_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;HDRS;DEPS" ${ARGN})
  _tpusim_folder_id(target_prefix "_")
  _tpusim_folder_id(alias_prefix "::")
  set(target tpusim_${target_prefix}_${ARG_NAME})
  if(ARG_SRCS)
    add_library(${target} STATIC ${ARG_SRCS} ${ARG_HDRS})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
    target_link_libraries(${target} PUBLIC ${ARG_DEPS})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
  add_library(tpusim::${alias_prefix}::${ARG_NAME} ALIAS ${target})
endfunction()

function(tpusim_cc_test)
  if(NOT TPUSIM_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "SYSTEMC" "NAME;TIMEOUT" "SRCS;DEPS;ARGS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  # tests/test_temp_dir.cc gives the program its own temporary directory, removed at exit.
  add_executable(${ARG_NAME} ${ARG_SRCS} ${PROJECT_SOURCE_DIR}/tests/test_temp_dir.cc)
  target_include_directories(${ARG_NAME} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  if(ARG_SYSTEMC)
    set(main_lib tpusim::tests::sc_test_main)
  else()
    set(main_lib GTest::gtest_main)
  endif()
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} tpusim::common::status_matchers
                                            GTest::gmock ${main_lib})
  # Tests find checked-in data (scenarios, goldens) through TPUSIM_SOURCE_DIR, a compile
  # definition: an ENVIRONMENT list with two entries would be split by gtest_discover_tests.
  target_compile_definitions(${ARG_NAME} PRIVATE TPUSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  gtest_discover_tests(${ARG_NAME}
    EXTRA_ARGS ${ARG_ARGS}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
    PROPERTIES ENVIRONMENT "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=DISABLE"
               TIMEOUT ${ARG_TIMEOUT}
    DISCOVERY_TIMEOUT 60)
endfunction()

function(tpusim_cc_benchmark)
  if(NOT TPUSIM_BUILD_BENCHMARKS)
    return()
  endif()
  cmake_parse_arguments(ARG "SYSTEMC" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_include_directories(${ARG_NAME} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  if(ARG_SYSTEMC)
    # libsystemc owns main(); the benchmark supplies sc_main (tests/bench/sc_bench_main.cc).
    target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} tpusim::tests::sc_bench_main
                                              benchmark::benchmark)
  else()
    target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} benchmark::benchmark_main)
  endif()
endfunction()

# One static library, tpusim::proto, generated from every .proto under the source folders,
# imported relative to the repository root: `import "strategy/data/example.proto";` and
# `#include "strategy/data/example.pb.h"`.
function(tpusim_proto_library)
  file(GLOB_RECURSE protos CONFIGURE_DEPENDS
       ${PROJECT_SOURCE_DIR}/common/*.proto ${PROJECT_SOURCE_DIR}/strategy/*.proto
       ${PROJECT_SOURCE_DIR}/sim/*.proto ${PROJECT_SOURCE_DIR}/models/*.proto
       ${PROJECT_SOURCE_DIR}/scenarios/*.proto ${PROJECT_SOURCE_DIR}/tools/*.proto)
  if(NOT protos)
    add_library(tpusim_proto INTERFACE)
    add_library(tpusim::proto ALIAS tpusim_proto)
    return()
  endif()
  add_library(tpusim_proto STATIC ${protos})
  target_link_libraries(tpusim_proto PUBLIC protobuf::libprotobuf)
  target_include_directories(tpusim_proto PUBLIC ${PROJECT_BINARY_DIR})
  # Generated code is not ours to lint.
  target_compile_options(tpusim_proto PRIVATE -w)
  protobuf_generate(TARGET tpusim_proto LANGUAGE cpp
                    IMPORT_DIRS ${PROJECT_SOURCE_DIR}
                    PROTOC_OUT_DIR ${PROJECT_BINARY_DIR})
  add_library(tpusim::proto ALIAS tpusim_proto)
endfunction()
