# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
#
# Injected with -DCMAKE_PROJECT_INCLUDE when building interfaces against the
# PyPI ros-* wheels. Their exported *__rosidl_generator_py targets carry the
# include directories of the container they were built in (/opt/python/...),
# which do not exist here, and CMake's generate step rejects them. At the end
# of the top-level directory, replace those entries by this interpreter's
# Python and NumPy include directories.
function(_helixtrack_fix_wheel_includes)
  find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module NumPy)
  get_property(_targets DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY IMPORTED_TARGETS)
  foreach(_target IN LISTS _targets)
    get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
    if(_dirs AND "${_dirs}" MATCHES "/opt/python/")
      list(FILTER _dirs EXCLUDE REGEX "^/opt/python/")
      list(APPEND _dirs ${Python3_INCLUDE_DIRS} ${Python3_NumPy_INCLUDE_DIRS})
      set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_dirs}")
    endif()
  endforeach()
endfunction()
if(CMAKE_CURRENT_SOURCE_DIR STREQUAL CMAKE_SOURCE_DIR)
  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _helixtrack_fix_wheel_includes)
endif()
