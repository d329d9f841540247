# The version a user sees, and the man pages (run with cmake -P).
#   -DMODE=version -DCOEXEC=<coexec> -DVERSION=<x.y.z> -DDATE=<yyyy-mm-dd>
#       -DCHANGELOG=<CHANGELOG.md> -DPC_DIR=<dir with coexec.pc and nos-v.pc>
#     `coexec --version` prints "coexec VERSION"; CHANGELOG.md has the heading
#     "## [VERSION] - DATE" and it is the newest version heading; coexec.pc
#     carries VERSION and nos-v.pc names it.
#   -DMODE=man -DCOEXEC=<coexec> -DVERSION=<x.y.z> -DBUILD_DIR=<build tree>
#       -DMANDIR=<CMAKE_INSTALL_MANDIR> -DWORK=<scratch dir>
#     `cmake --install --component man` installs coexec.1 and
#     coexec-<sub>.1 for every subcommand `coexec --help` lists, each a page
#     of this version with its subcommand's help; groff, where installed,
#     formats each without a warning.
#   -DMODE=cli-doc -DCOEXEC=<coexec> -DDOC=<docs/cli.md>
#     docs/cli.md quotes `coexec --help` whole, and `coexec <sub> --help`
#     (but its first line, the summary) for every subcommand, verbatim.
cmake_minimum_required(VERSION 3.25)

function(fail message)
  message(FATAL_ERROR "${message}")
endfunction()

function(run_coexec out)
  execute_process(COMMAND ${COEXEC} ${ARGN} OUTPUT_VARIABLE text ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    fail("`coexec ${ARGN}` failed (${rc}): ${err}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/help_subcommands.cmake)

# The subcommands `coexec --help` lists under "Subcommands:".
function(subcommands out main)
  coexec_help_subcommands(subs "${main}")
  list(LENGTH subs count)
  if(count LESS 5)
    fail("found only '${subs}' in `coexec --help`: this check no longer reads it right")
  endif()
  set(${out} ${subs} PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "version")
  run_coexec(printed --version)
  if(NOT printed STREQUAL "coexec ${VERSION}\n")
    fail("`coexec --version` printed '${printed}', not 'coexec ${VERSION}'")
  endif()

  file(READ ${CHANGELOG} changelog)
  string(FIND "${changelog}" "\n## [${VERSION}] - ${DATE}\n" at)
  if(at LESS 0)
    fail("${CHANGELOG} has no heading '## [${VERSION}] - ${DATE}'")
  endif()
  # The newest version heading (an [Unreleased] section may come before it).
  string(REGEX MATCH "\n## \\[[0-9]+\\.[0-9]+\\.[0-9]+\\]" newest "${changelog}")
  if(NOT newest STREQUAL "\n## [${VERSION}]")
    string(STRIP "${newest}" newest)
    fail("the newest version in ${CHANGELOG} is '${newest}', not ${VERSION}")
  endif()

  string(REPLACE "." "\\." version_re "${VERSION}")
  file(READ ${PC_DIR}/coexec.pc pc)
  if(NOT pc MATCHES "\nVersion: ${version_re}\n")
    fail("${PC_DIR}/coexec.pc does not carry 'Version: ${VERSION}'")
  endif()
  file(READ ${PC_DIR}/nos-v.pc pc)
  if(NOT pc MATCHES "\nDescription: [^\n]*coexec ${version_re}\n")
    fail("${PC_DIR}/nos-v.pc does not name coexec ${VERSION} in its Description")
  endif()
  message(STATUS "coexec ${VERSION} (${DATE}): --version, CHANGELOG.md and the .pc files agree")

elseif(MODE STREQUAL "man")
  file(REMOVE_RECURSE ${WORK})
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --component man --prefix ${WORK}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    fail("installing the man pages failed (${rc}): ${out}${err}")
  endif()
  set(man1 ${WORK}/${MANDIR}/man1)

  run_coexec(main --help)
  subcommands(subs "${main}")
  set(pages coexec)
  foreach(sub IN LISTS subs)
    list(APPEND pages coexec-${sub})
  endforeach()
  list(LENGTH pages count)

  find_program(GROFF groff)
  foreach(page IN LISTS pages)
    set(file ${man1}/${page}.1)
    if(NOT EXISTS ${file})
      fail("${page}.1 is not installed into ${man1}")
    endif()
    file(READ ${file} roff)
    string(TOUPPER "${page}" title)
    string(REPLACE "-" "\\-" title "${title}")
    if(NOT roff MATCHES "^\\.TH ([^ ]+) 1 [^\n]*\"coexec ${VERSION}\"")
      fail("${file} is not a section 1 page of coexec ${VERSION}")
    endif()
    if(NOT CMAKE_MATCH_1 STREQUAL title)
      fail("${file} is titled ${CMAKE_MATCH_1}, not ${title}")
    endif()
    # Its help's usage line, as the page writes it.
    string(REGEX REPLACE "^coexec-?" "" sub "${page}")
    if(sub STREQUAL "")
      set(usage "Usage: coexec [OPTIONS] SUBCOMMAND")
    else()
      set(usage "Usage: coexec ${sub} [OPTIONS]")
    endif()
    string(FIND "${roff}" "${usage}" at)
    if(at LESS 0)
      fail("${file} does not hold the help of `coexec ${sub}` ('${usage}')")
    endif()
    if(GROFF)
      execute_process(COMMAND ${GROFF} -man -Tutf8 -ww -z ${file}
                      OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
      if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
        fail("groff formats ${file} with complaints (${rc}): ${err}")
      endif()
    endif()
  endforeach()
  file(GLOB installed RELATIVE ${man1} ${man1}/*)
  list(LENGTH installed installed_count)
  if(NOT installed_count EQUAL count)
    fail("installed ${installed}, expected one page each for ${pages}")
  endif()
  file(REMOVE_RECURSE ${WORK})
  message(STATUS "installed and checked: ${pages}")

elseif(MODE STREQUAL "cli-doc")
  file(READ ${DOC} doc)
  run_coexec(main --help)
  string(REGEX REPLACE "\n+$" "" main "${main}")
  string(FIND "${doc}" "${main}" at)
  if(at LESS 0)
    fail("${DOC} does not quote `coexec --help` as it prints now")
  endif()
  subcommands(subs "${main}")
  foreach(sub IN LISTS subs)
    run_coexec(help ${sub} --help)
    string(FIND "${help}" "\n" first_end) # without the summary line
    math(EXPR first_end "${first_end} + 1")
    string(SUBSTRING "${help}" ${first_end} -1 help)
    string(REGEX REPLACE "\n+$" "" help "${help}")
    string(FIND "${doc}" "${help}" at)
    if(help STREQUAL "" OR at LESS 0)
      fail("${DOC} does not quote `coexec ${sub} --help` as it prints now")
    endif()
  endforeach()
  message(STATUS "${DOC} quotes the help of coexec and of: ${subs}")

else()
  fail("release_check: -DMODE=version, man or cli-doc")
endif()
