# What the core needs when it is compiled to WebAssembly by Debian's
# emscripten (the `web` preset). Included by the top-level CMakeLists.txt
# before impl/ and model/ are added.
#
# fmt and nlohmann/json have no WebAssembly packages, but both work from
# their headers alone: fmt with FMT_HEADER_ONLY, nlohmann/json always. Only
# their own folders of the host's /usr/include are put on the include path
# (through links in the build folder): the host's C library headers must
# never mix with emscripten's.

find_path(LOCKSTEP_HOST_FMT_INCLUDE fmt/format-inl.h PATHS /usr/include NO_CMAKE_FIND_ROOT_PATH)
find_path(LOCKSTEP_HOST_JSON_INCLUDE nlohmann/json.hpp PATHS /usr/include NO_CMAKE_FIND_ROOT_PATH)
if(NOT LOCKSTEP_HOST_FMT_INCLUDE OR NOT LOCKSTEP_HOST_JSON_INCLUDE)
  message(FATAL_ERROR "the web preset needs the headers of libfmt-dev and nlohmann-json3-dev (scripts/setup.sh)")
endif()

set(lockstep_header_links ${CMAKE_BINARY_DIR}/host_headers)
file(MAKE_DIRECTORY ${lockstep_header_links})
file(CREATE_LINK ${LOCKSTEP_HOST_FMT_INCLUDE}/fmt ${lockstep_header_links}/fmt SYMBOLIC)
file(CREATE_LINK ${LOCKSTEP_HOST_JSON_INCLUDE}/nlohmann ${lockstep_header_links}/nlohmann SYMBOLIC)

add_library(fmt::fmt INTERFACE IMPORTED)
target_include_directories(fmt::fmt SYSTEM INTERFACE ${lockstep_header_links})
target_compile_definitions(fmt::fmt INTERFACE FMT_HEADER_ONLY)
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE ${lockstep_header_links})

# The core reports bad input and broken invariants by throwing; emscripten
# turns exceptions off unless asked.
add_compile_options(-fexceptions)
add_link_options(-fexceptions)

# emscripten's JavaScript optimizer needs node's `acorn`, which Debian keeps
# in /usr/share/nodejs: Debian's node finds it there, a node from elsewhere
# only through NODE_PATH.
if(EXISTS /usr/share/nodejs/acorn)
  set(CMAKE_CXX_LINKER_LAUNCHER ${CMAKE_COMMAND} -E env NODE_PATH=/usr/share/nodejs)
endif()
