# Finds every third-party dependency. The C++ ones come from Debian 12 packages, the rest are
# pinned PyPI packages in tpusim's Python environment (TpusimPython.cmake); tools/setup.sh
# installs both; nothing is vendored.

find_package(PkgConfig REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(Protobuf REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)  # compressed TFRecord files (zlib1g-dev)
if(TPUSIM_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
if(TPUSIM_BUILD_BENCHMARKS)
  find_package(benchmark CONFIG REQUIRED)
endif()

# SystemC + TLM ship pkg-config files only. They are wrapped as one imported target,
# SystemC::systemc, that only sim/ (and the executables and tests that link sim/) use, so the
# build graph itself keeps SystemC out of every other folder.
pkg_check_modules(SystemC REQUIRED IMPORTED_TARGET systemc>=2.3.4)
pkg_check_modules(TLM REQUIRED IMPORTED_TARGET tlm)
add_library(SystemC::systemc INTERFACE IMPORTED)
target_link_libraries(SystemC::systemc INTERFACE PkgConfig::SystemC PkgConfig::TLM)
# sc_spawn needs this before <systemc>; defining it here means no file compiles "by accident".
target_compile_definitions(SystemC::systemc INTERFACE SC_INCLUDE_DYNAMIC_PROCESSES)

include(TpusimPython)
