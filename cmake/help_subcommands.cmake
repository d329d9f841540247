# coexec_help_subcommands(OUT HELP): the subcommands that `coexec --help`
# (the text HELP) lists under "Subcommands:", as the lines
# "  NAME   description" up to the next blank line; empty when there is no
# such section. Shared by the man page generator and the release checks.
function(coexec_help_subcommands out help)
  set(subs "")
  string(FIND "${help}" "\nSubcommands:\n" at)
  if(at GREATER_EQUAL 0)
    string(SUBSTRING "${help}" ${at} -1 listing)
    string(FIND "${listing}" "\n\n" end)
    if(end GREATER 0)
      string(SUBSTRING "${listing}" 0 ${end} listing)
    endif()
    string(REGEX MATCHALL "\n  [a-z][a-z0-9-]*  " entries "${listing}")
    foreach(entry IN LISTS entries)
      string(STRIP "${entry}" sub)
      list(APPEND subs ${sub})
    endforeach()
  endif()
  set(${out} ${subs} PARENT_SCOPE)
endfunction()
