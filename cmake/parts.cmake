# The parts of the build that need something from outside the project: a
# Debian package, a source package fetched with `apt-get source`, mpirun.
#
# Each part has an option, on by default. A part that is on but cannot be
# built stops the configure with one line per part naming what is missing and
# the command that installs it, so that no adapter and no test disappears
# without anyone noticing. A user who wants less turns the part off
# (-DCOEXEC_WITH_OPENMP=OFF, ...); coexec-parts.txt in the build tree then
# lists it as left out, and `make test` prints that list at its end.
#
#   coexec_part(<option> <description> [<option it needs>...])
#       declares a part; it is left out when its option or one it needs is off;
#   coexec_part_missing(<option> <what is missing> <command that installs it>)
#       records that a part which is on cannot be built;
#   coexec_part_absent(<option> <why>)
#       records that a part whose option is AUTO is left out, and why;
#   coexec_parts_report()
#       at the end of the top-level CMakeLists: fails, or writes the list.

function(coexec_part option description)
  set_property(GLOBAL APPEND PROPERTY COEXEC_PARTS "${option}")
  set_property(GLOBAL PROPERTY COEXEC_PART_${option} "${description}")
  set_property(GLOBAL PROPERTY COEXEC_PART_NEEDS_${option} "${ARGN}")
endfunction()

function(coexec_part_missing option what install)
  set_property(GLOBAL APPEND PROPERTY COEXEC_PARTS_MISSING "${option}")
  set_property(GLOBAL PROPERTY COEXEC_PART_MISSING_${option} "${what}; install: ${install}")
endfunction()

function(coexec_part_absent option why)
  set_property(GLOBAL PROPERTY COEXEC_PART_ABSENT_${option} "${why}")
endfunction()

function(coexec_parts_report)
  get_property(parts GLOBAL PROPERTY COEXEC_PARTS)
  get_property(missing GLOBAL PROPERTY COEXEC_PARTS_MISSING)
  if(missing)
    list(REMOVE_DUPLICATES missing)
    set(lines "")
    foreach(option IN LISTS missing)
      get_property(description GLOBAL PROPERTY COEXEC_PART_${option})
      get_property(why GLOBAL PROPERTY COEXEC_PART_MISSING_${option})
      string(APPEND lines "\n  ${description}: ${why} (or configure with -D${option}=OFF)")
    endforeach()
    message(FATAL_ERROR "coexec: these parts cannot be built:${lines}\n")
  endif()
  set(report "")
  foreach(option IN LISTS parts)
    get_property(description GLOBAL PROPERTY COEXEC_PART_${option})
    get_property(needs GLOBAL PROPERTY COEXEC_PART_NEEDS_${option})
    get_property(absent GLOBAL PROPERTY COEXEC_PART_ABSENT_${option})
    if(absent)
      string(APPEND report "left out    ${description} (${absent})\n")
      continue()
    endif()
    set(turned_off "")
    foreach(o IN ITEMS ${option} ${needs})
      if("${${o}}" STREQUAL "AUTO")
        continue()
      endif()
      if(NOT ${o})
        list(APPEND turned_off "-D${o}=OFF")
      endif()
    endforeach()
    if(turned_off)
      list(JOIN turned_off " " turned_off)
      string(APPEND report "left out    ${description} (${turned_off})\n")
    else()
      string(APPEND report "built       ${description}\n")
    endif()
  endforeach()
  file(WRITE ${PROJECT_BINARY_DIR}/coexec-parts.txt "${report}")
endfunction()
