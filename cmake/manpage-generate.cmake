# Writes the man pages of `coexec` from its --help texts (run with cmake -P;
# see cmake/manpages.cmake):
#   -DCOEXEC=<program> [-DEMULATOR="<command> <args>"] -DOUT_DIR=<dir>
#   -DVERSION=<x.y.z> -DDATE=<yyyy-mm-dd> [-DSTAMP=<file>]
# coexec.1 holds `coexec --help`; coexec-<sub>.1 holds `coexec <sub> --help`
# for each subcommand listed under "Subcommands:" in `coexec --help`. The
# texts go in verbatim (no-fill), so a page reads as the help does.
cmake_minimum_required(VERSION 3.25)
foreach(var COEXEC OUT_DIR VERSION DATE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "manpage-generate: -D${var}=... is required")
  endif()
endforeach()
separate_arguments(emulator UNIX_COMMAND "${EMULATOR}")
include(${CMAKE_CURRENT_LIST_DIR}/help_subcommands.cmake)

# The output of `coexec ARGS... --help`, or a fatal error.
function(help_text out)
  execute_process(COMMAND ${emulator} ${COEXEC} ${ARGN} --help
    OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR text STREQUAL "")
    message(FATAL_ERROR "manpage-generate: `coexec ${ARGN} --help` failed (${rc}): ${err}")
  endif()
  string(REGEX REPLACE "\n+$" "" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# `text` made safe for roff: backslashes and hyphens escaped, and no line
# that starts with a control character.
function(roff_escape out text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  string(REGEX REPLACE "\n([.'])" "\n@COEXEC_ZW@\\1" text "\n${text}")
  string(REPLACE "@COEXEC_ZW@" "\\&" text "${text}")
  string(SUBSTRING "${text}" 1 -1 text)
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Writes <OUT_DIR>/<name>.1: NAME line, the help text, SEE ALSO.
function(write_page name summary help see_also)
  string(TOUPPER "${name}" title)
  roff_escape(title "${title}")
  roff_escape(name_e "${name}")
  roff_escape(summary "${summary}")
  roff_escape(help "${help}")
  set(page ".TH ${title} 1 \"${DATE}\" \"coexec ${VERSION}\" \"User Commands\"\n")
  string(APPEND page ".nh\n.ad l\n") # no hyphenation, ragged right
  string(APPEND page ".SH NAME\n${name_e} \\- ${summary}\n")
  string(APPEND page ".SH DESCRIPTION\n.nf\n${help}\n.fi\n")
  string(APPEND page ".SH SEE ALSO\n${see_also}\n")
  file(WRITE ${OUT_DIR}/${name}.1 "${page}")
endfunction()

# The first line of a help text, as a man page's summary ("Live view" ->
# "live view").
function(summary_of out help)
  string(REGEX REPLACE "\n.*" "" line "${help}")
  string(SUBSTRING "${line}" 0 1 first)
  string(SUBSTRING "${line}" 1 -1 rest)
  string(TOLOWER "${first}" first)
  set(${out} "${first}${rest}" PARENT_SCOPE)
endfunction()

help_text(main)
coexec_help_subcommands(subs "${main}")
if(NOT subs)
  message(FATAL_ERROR "manpage-generate: no subcommand found in `coexec --help`")
endif()

file(MAKE_DIRECTORY ${OUT_DIR})
file(GLOB old ${OUT_DIR}/*.1)
if(old)
  file(REMOVE ${old})
endif()
set(pages "")
foreach(sub IN LISTS subs)
  list(APPEND pages "\\fBcoexec\\-${sub}\\fR(1)")
endforeach()
list(JOIN pages ",\n" pages)
summary_of(summary "${main}")
string(REGEX REPLACE "^coexec: " "" summary "${summary}")
write_page(coexec "${summary}" "${main}"
  "${pages}.\nThe configuration keys and environment variables are described in\ndocs/configuration.md of the coexec sources.")
foreach(sub IN LISTS subs)
  help_text(help ${sub})
  summary_of(summary "${help}")
  write_page(coexec-${sub} "${summary}" "${help}"
    "\\fBcoexec\\fR(1), for the options every subcommand accepts (\\-\\-name, \\-\\-isolation).")
endforeach()
if(DEFINED STAMP)
  file(WRITE ${STAMP} "${subs}\n")
endif()
