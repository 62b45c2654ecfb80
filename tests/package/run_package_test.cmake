# Run by ctest (see tests/CMakeLists.txt): install the built library into a fresh prefix, then
# configure, build and test tests/package against that prefix alone.
cmake_minimum_required(VERSION 3.22)

foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER VERSION)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_package_test.cmake: -D${var}=... is required")
  endif()
endforeach()

set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")  # a stale prefix could hide a broken install

set(config_args)
if(NOT "${CONFIG}" STREQUAL "")
  set(config_args --config "${CONFIG}")
endif()

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package test: ${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "package test: ${what}: ok")
endfunction()

step("install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}" ${config_args})
step("configure consumer" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
  "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}" "-DCMAKE_BUILD_TYPE=${CONFIG}"
  "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  "-DGRIDSAMPLE_EXPECTED_PREFIX=${prefix}" "-DGRIDSAMPLE_EXPECTED_VERSION=${VERSION}")
step("build consumer" "${CMAKE_COMMAND}" --build "${build}" ${config_args} -j 2)
step("run consumer" "${CMAKE_CTEST_COMMAND}" --test-dir "${build}" ${config_args}
  --output-on-failure --no-tests=error)
