# Run by `cmake --install` (and so by CPack): writes a man page for each
# binary and each subcommand of `lockstep` from its own --help with
# Debian's help2man, gzipped, and installs them in MAN_DIR (under
# DESTDIR). Without help2man it says so and installs none.
# Inputs: LOCKSTEP, ADAPTERS (a list of binaries), VERSION, WORK_DIR (a
# folder of its own is made in it for each install, so that two installs at
# once do not share files), MAN_DIR.
find_program(HELP2MAN help2man)
find_program(GZIP gzip)
if(NOT HELP2MAN OR NOT GZIP)
  message(WARNING "help2man or gzip not found (Debian's help2man; scripts/setup.sh installs it): no man pages installed")
  return()
endif()
string(RANDOM LENGTH 12 unique)
set(WORK_DIR ${WORK_DIR}/${unique})
file(MAKE_DIRECTORY ${WORK_DIR})

# What each adapter's page says it is.
set(summary_lockstep-etcd-lock "etcd's own lock behind lockstep's line protocol, for lockstep fuzz")
set(summary_lockstep-redis-lock "the single-instance Redis lock behind lockstep's line protocol, for lockstep fuzz")

# One page: `name` from `command --help`, `summary` its NAME line. A
# subcommand's page is titled by its own name (lockstep-sim), where
# help2man would write the binary's.
function(man_page name command help_option summary)
  set(page ${WORK_DIR}/${name}.1)
  execute_process(COMMAND ${HELP2MAN} --no-info --no-discard-stderr --version-string=${VERSION}
                          --name=${summary} --help-option=${help_option} --output=${page} ${command}
                  RESULT_VARIABLE failed ERROR_VARIABLE error)
  if(failed)
    message(FATAL_ERROR "help2man could not write the man page of ${name}: ${error}")
  endif()
  get_filename_component(binary ${command} NAME)
  if(NOT binary STREQUAL name)
    file(READ ${page} text)
    string(TOUPPER "${binary}" binary_title)
    string(TOUPPER "${name}" title)
    string(REPLACE "-" "\\-" escaped "${name}")
    string(REPLACE ".TH ${binary_title} " ".TH ${title} " text "${text}")
    string(REPLACE ".SH NAME\n${binary} \\- " ".SH NAME\n${escaped} \\- " text "${text}")
    file(WRITE ${page} "${text}")
  endif()
  execute_process(COMMAND ${GZIP} -9nf ${page} RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "gzip could not compress ${page}")
  endif()
  file(INSTALL ${page}.gz DESTINATION ${MAN_DIR})
endfunction()

man_page(lockstep ${LOCKSTEP} --help "a reference lease-based lock service and the tools to check others against it")
# The subcommands, as `lockstep --help` lists them.
execute_process(COMMAND ${LOCKSTEP} --help OUTPUT_VARIABLE help)
string(REGEX MATCH "Subcommands:.*" listed "${help}")
string(REGEX MATCHALL "\n  ([a-z][a-z-]*)" lines "${listed}")
foreach(line IN LISTS lines)
  string(STRIP "${line}" sub)
  man_page(lockstep-${sub} ${LOCKSTEP} "${sub} --help" "lockstep ${sub}, one command of lockstep (see lockstep(1))")
endforeach()
foreach(adapter IN LISTS ADAPTERS)
  get_filename_component(name ${adapter} NAME)
  set(summary "${summary_${name}}")
  if(summary STREQUAL "")
    set(summary "another lock service behind lockstep's line protocol (see lockstep(1))")
  endif()
  man_page(${name} ${adapter} --help "${summary}")
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
