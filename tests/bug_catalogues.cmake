# The bug catalogues read at configure time, so that every layer's bug tests
# are made from them: a bug added to a catalogue gets its tests at the next
# configure, with no test list to edit. Each entry of a catalogue is one
# brace-delimited description whose first string literal is the bug's name
# (impl/bugs.cpp, impl/cluster/bugs.cpp, impl/raft/bugs.cpp, and the
# simulator's server faults in sim/simple/params.cpp).
#
# lockstep_bug_names(<out-var> <source> <description-type> [<must-contain>])
#   the names of the entries of <description-type>{...} in <source>, in
#   catalogue order; with <must-contain>, only the entries whose text holds
#   it (e.g. BugReach::real_time).
function(lockstep_bug_names out source type)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${source})
  file(READ ${source} text)
  string(REGEX MATCHALL "${type}{[^}]*}" entries "${text}")
  set(names "")
  foreach(entry ${entries})
    if(ARGC GREATER 3)
      string(FIND "${entry}" "${ARGV3}" found)
      if(found EQUAL -1)
        continue()
      endif()
    endif()
    string(REGEX MATCH "\"([a-z0-9-]+)\"" ignored "${entry}")
    list(APPEND names ${CMAKE_MATCH_1})
  endforeach()
  if(NOT names AND ARGC LESS 4)
    message(FATAL_ERROR "no ${type} entries found in ${source}")
  endif()
  set(${out} ${names} PARENT_SCOPE)
endfunction()

set(lockstep_simple_bugs_source ${PROJECT_SOURCE_DIR}/impl/bugs.cpp)
set(lockstep_cluster_bugs_source ${PROJECT_SOURCE_DIR}/impl/cluster/bugs.cpp)
set(lockstep_raft_bugs_source ${PROJECT_SOURCE_DIR}/impl/raft/bugs.cpp)
set(lockstep_server_faults_source ${PROJECT_SOURCE_DIR}/sim/simple/params.cpp)
