# The XLA:TPU compiler: libtpu.so from the pinned libtpu wheel in tpusim's Python environment
# (TpusimPython.cmake; tools/setup.sh installs it). It is a PJRT plugin, so it needs the PJRT
# header (TpusimPjrt.cmake). Nothing of it is copied into the repository.
#
# TPUSIM_LIBTPU=AUTO uses libtpu when it is found and says why when it is not; ON requires it
# (CI, tools/test.sh: a failed install fails the run); OFF never uses it and says so. Sets
# TPUSIM_LIBTPU_ENABLED and TPUSIM_LIBTPU_PATH (the default libtpu.so compiled into tpusim;
# $TPUSIM_LIBTPU_PATH overrides it at run time).

set(TPUSIM_LIBTPU "AUTO" CACHE STRING "Use libtpu (the XLA:TPU compiler): AUTO, ON or OFF")
set_property(CACHE TPUSIM_LIBTPU PROPERTY STRINGS AUTO ON OFF)
set(TPUSIM_LIBTPU_ENABLED OFF)
set(TPUSIM_LIBTPU_PATH "")
if(NOT TPUSIM_LIBTPU MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "TPUSIM_LIBTPU=${TPUSIM_LIBTPU}: allowed values are AUTO, ON, OFF")
endif()
if(TPUSIM_LIBTPU STREQUAL "OFF")
  message(STATUS "tpusim xla-tpu compiler: OFF (TPUSIM_LIBTPU=OFF): the libtpu probe and the "
                 "--compiler xla-tpu tests are skipped")
else()
  set(_libtpu_so "${TPUSIM_PYENV_SITE}/libtpu/libtpu.so")
  if(TPUSIM_PJRT_ENABLED AND TPUSIM_PYENV_SITE AND EXISTS "${_libtpu_so}")
    set(TPUSIM_LIBTPU_ENABLED ON)
    set(TPUSIM_LIBTPU_PATH "${_libtpu_so}")
    message(STATUS "tpusim xla-tpu compiler: ON (${TPUSIM_LIBTPU_PATH})")
  else()
    if(NOT TPUSIM_PJRT_ENABLED)
      set(_why "the PJRT backend is OFF (libtpu is a PJRT plugin and needs its header)")
    else()
      set(_why "no libtpu.so in ${TPUSIM_PYENV}: run tools/setup.sh (it installs the pinned "
               "libtpu wheel of tools/requirements.txt)")
    endif()
    if(TPUSIM_LIBTPU STREQUAL "ON")
      message(FATAL_ERROR "TPUSIM_LIBTPU=ON but ${_why}")
    endif()
    message(STATUS "tpusim xla-tpu compiler: OFF (TPUSIM_LIBTPU=AUTO and ${_why})")
  endif()
endif()
