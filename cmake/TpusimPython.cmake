# tpusim's Python environment: the pinned PyPI packages of tools/requirements.txt, installed by
# tools/setup.sh outside the work tree. The path is derived from the requirements file exactly as
# tools/pyenv.sh derives it, so a fresh clone finds the environment the setup script made.
#
# Sets TPUSIM_PYENV (the environment's root), TPUSIM_PYTHON (its interpreter, empty when the
# environment is missing or incomplete) and TPUSIM_PYENV_SITE (its site-packages directory).

file(SHA256 "${PROJECT_SOURCE_DIR}/tools/requirements.txt" _tpusim_req_sha)
string(SUBSTRING "${_tpusim_req_sha}" 0 12 _tpusim_req_hash)
if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(_tpusim_cache "$ENV{XDG_CACHE_HOME}")
else()
  set(_tpusim_cache "$ENV{HOME}/.cache")
endif()
# Not a cache entry: the path follows the requirements file at every configure, so a build
# directory configured before a pin changed finds the new environment (tools/setup.sh makes it;
# tools/pyenv.sh prints its path).
set(TPUSIM_PYENV "${_tpusim_cache}/tpusim/venv-${_tpusim_req_hash}")

set(TPUSIM_PYTHON "")
set(TPUSIM_PYENV_SITE "")
set(_tpusim_marker "${TPUSIM_PYENV}/.tpusim-requirements-sha256")
if(EXISTS "${_tpusim_marker}")
  file(STRINGS "${_tpusim_marker}" _tpusim_marker_sha LIMIT_COUNT 1)
  if(_tpusim_marker_sha STREQUAL _tpusim_req_sha)
    set(TPUSIM_PYTHON "${TPUSIM_PYENV}/bin/python")
    file(GLOB _tpusim_site LIST_DIRECTORIES true "${TPUSIM_PYENV}/lib/python3*/site-packages")
    list(GET _tpusim_site 0 TPUSIM_PYENV_SITE)
  endif()
endif()
if(TPUSIM_PYTHON)
  message(STATUS "tpusim Python environment: ${TPUSIM_PYENV}")
else()
  message(STATUS "tpusim Python environment: not found at ${TPUSIM_PYENV} (run tools/setup.sh)")
endif()
