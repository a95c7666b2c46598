# cmake -P script behind the `consumer` test; see CMakeLists.txt here.
cmake_minimum_required(VERSION 3.18)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}")
  endif()
  set(LAST_OUTPUT "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

message(STATUS "installing ${BUILD_DIR} into ${prefix}")
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f ${LIBDIR}/libiwarp.a include/iwarp/term.h ${LIBDIR}/pkgconfig/iwarp.pc
          ${LIBDIR}/cmake/iwarp/iwarpConfig.cmake ${LIBDIR}/cmake/iwarp/iwarpConfigVersion.cmake
          ${LIBDIR}/cmake/iwarp/iwarpTargets.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()

# 1. CMake package. No package registries, so only this prefix can match.
message(STATUS "consumer via find_package(iwarp)")
set(bdir ${WORK_DIR}/cmake-build)
run(${CMAKE_COMMAND} -S ${PROJECT_DIR} -B ${bdir} -G ${GENERATOR}
    -DCMAKE_C_COMPILER=${CC} "-DCMAKE_C_FLAGS=${EXTRA_FLAGS}"
    -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
file(STRINGS ${bdir}/CMakeCache.txt found REGEX "^iwarp_DIR:")
if(NOT found MATCHES "${prefix}/")
  message(FATAL_ERROR "find_package(iwarp) did not use the scratch install: ${found}")
endif()
run(${CMAKE_COMMAND} --build ${bdir})
run(${bdir}/iwarp_consumer)
message(STATUS "${LAST_OUTPUT}")

# 2. pkg-config; --static because libiwarp is a static library.
message(STATUS "consumer via pkg-config")
set(ENV{PKG_CONFIG_PATH} ${prefix}/${LIBDIR}/pkgconfig)
run(${PKG_CONFIG} --cflags iwarp)
string(STRIP "${LAST_OUTPUT}" cflags)
run(${PKG_CONFIG} --static --libs iwarp)
string(STRIP "${LAST_OUTPUT}" libs)
if(NOT libs MATCHES "-L${prefix}/")
  message(FATAL_ERROR "pkg-config did not use the scratch install: ${libs}")
endif()
separate_arguments(cflags UNIX_COMMAND "${cflags}")
separate_arguments(libs UNIX_COMMAND "${libs}")
separate_arguments(extra UNIX_COMMAND "${EXTRA_FLAGS}")
run(${CC} -std=c11 -Wall -Wextra -Werror -pedantic ${extra} ${cflags} -o ${WORK_DIR}/iwarp_consumer_pc ${PROJECT_DIR}/main.c ${libs})
run(${WORK_DIR}/iwarp_consumer_pc)
message(STATUS "${LAST_OUTPUT}")
