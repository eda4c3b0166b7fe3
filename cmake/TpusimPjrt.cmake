# The PJRT backend's dependencies: the PJRT C API header (pjrt_c_api.h) and XLA's CPU PJRT plugin,
# both from the pinned xla-cpu-pjrt wheel in tpusim's Python environment (TpusimPython.cmake;
# tools/setup.sh installs it). Nothing of them is copied into the repository.
#
# TPUSIM_PJRT=AUTO builds the backend when the header is found and says so when it is not;
# ON requires it (CI, tools/test.sh); OFF never builds it (the asan and fuzz presets: the plugin
# is 260 MB of uninstrumented code). Sets TPUSIM_PJRT_ENABLED, TPUSIM_PJRT_INCLUDE_DIR and
# TPUSIM_PJRT_CPU_PLUGIN (the default plugin path compiled into the backend).

set(TPUSIM_PJRT "AUTO" CACHE STRING "Build the PJRT backend: AUTO, ON or OFF")
set_property(CACHE TPUSIM_PJRT PROPERTY STRINGS AUTO ON OFF)
set(TPUSIM_PJRT_ENABLED OFF)
set(TPUSIM_PJRT_INCLUDE_DIR "")
set(TPUSIM_PJRT_CPU_PLUGIN "")
if(NOT TPUSIM_PJRT MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "TPUSIM_PJRT=${TPUSIM_PJRT}: allowed values are AUTO, ON, OFF")
endif()
if(NOT TPUSIM_PJRT STREQUAL "OFF")
  if(TPUSIM_PYENV_SITE)
    set(_pjrt_dir "${TPUSIM_PYENV_SITE}/xla_plugins/xla_cpu_pjrt")
  else()
    set(_pjrt_dir "${TPUSIM_PYENV}/lib/python3*/site-packages/xla_plugins/xla_cpu_pjrt")
  endif()
  if(TPUSIM_PYENV_SITE AND EXISTS "${_pjrt_dir}/include/pjrt_c_api.h")
    set(TPUSIM_PJRT_INCLUDE_DIR "${_pjrt_dir}/include")
    if(EXISTS "${_pjrt_dir}/xla_cpu_pjrt.so")
      set(TPUSIM_PJRT_CPU_PLUGIN "${_pjrt_dir}/xla_cpu_pjrt.so")
    endif()
    file(STRINGS "${TPUSIM_PJRT_INCLUDE_DIR}/pjrt_c_api.h" _pjrt_major
         REGEX "^#define PJRT_API_MAJOR [0-9]+")
    file(STRINGS "${TPUSIM_PJRT_INCLUDE_DIR}/pjrt_c_api.h" _pjrt_minor
         REGEX "^#define PJRT_API_MINOR [0-9]+")
    string(REGEX REPLACE ".* " "" _pjrt_major "${_pjrt_major}")
    string(REGEX REPLACE ".* " "" _pjrt_minor "${_pjrt_minor}")
    set(TPUSIM_PJRT_ENABLED ON)
    message(STATUS "tpusim PJRT backend: ON (PJRT C API ${_pjrt_major}.${_pjrt_minor} header in "
                   "${TPUSIM_PJRT_INCLUDE_DIR}; CPU plugin: "
                   "${TPUSIM_PJRT_CPU_PLUGIN})")
  elseif(TPUSIM_PJRT STREQUAL "ON")
    message(FATAL_ERROR "TPUSIM_PJRT=ON but pjrt_c_api.h was not found at ${_pjrt_dir}/include: "
                        "run tools/setup.sh (it installs the pinned xla-cpu-pjrt wheel)")
  else()
    message(STATUS "tpusim PJRT backend: OFF (TPUSIM_PJRT=AUTO and no pjrt_c_api.h at "
                   "${_pjrt_dir}/include; run tools/setup.sh to install the xla-cpu-pjrt wheel)")
  endif()
else()
  message(STATUS "tpusim PJRT backend: OFF (TPUSIM_PJRT=OFF)")
endif()
