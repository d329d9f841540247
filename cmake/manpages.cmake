# Man pages of the `coexec` command: coexec.1, and coexec-<subcommand>.1 for
# each subcommand that `coexec --help` lists, written from the --help texts
# of the program just built (cmake/manpage-generate.cmake: no tool beyond
# CMake). They land in <build>/man/man1 and are installed into
# ${CMAKE_INSTALL_MANDIR}/man1 (install component `man`).
# -DCOEXEC_MANPAGES=OFF leaves them out.
if(NOT COEXEC_MANPAGES OR NOT TARGET coexec_cli)
  return()
endif()
if(CMAKE_CROSSCOMPILING AND NOT CMAKE_CROSSCOMPILING_EMULATOR)
  coexec_part_missing(COEXEC_MANPAGES "a way to run the target's coexec (they are made from its --help)"
                      "-DCMAKE_CROSSCOMPILING_EMULATOR=<emulator>")
  return()
endif()

set(COEXEC_MAN_DIR ${PROJECT_BINARY_DIR}/man/man1)
set(coexec_man_stamp ${PROJECT_BINARY_DIR}/man/pages.stamp)
set(coexec_man_emulator "")
if(CMAKE_CROSSCOMPILING)
  list(JOIN CMAKE_CROSSCOMPILING_EMULATOR " " coexec_man_emulator)
endif()
add_custom_command(OUTPUT ${coexec_man_stamp}
  COMMAND ${CMAKE_COMMAND} -DCOEXEC=$<TARGET_FILE:coexec_cli> "-DEMULATOR=${coexec_man_emulator}"
          -DOUT_DIR=${COEXEC_MAN_DIR} -DVERSION=${PROJECT_VERSION} -DDATE=${COEXEC_RELEASE_DATE}
          -DSTAMP=${coexec_man_stamp} -P ${PROJECT_SOURCE_DIR}/cmake/manpage-generate.cmake
  DEPENDS coexec_cli ${PROJECT_SOURCE_DIR}/cmake/manpage-generate.cmake
          ${PROJECT_SOURCE_DIR}/cmake/help_subcommands.cmake
  COMMENT "Writing the man pages of coexec from its --help"
  VERBATIM)
add_custom_target(coexec_manpages ALL DEPENDS ${coexec_man_stamp})
install(DIRECTORY ${COEXEC_MAN_DIR}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT man
        FILES_MATCHING PATTERN "*.1")
