# Writes the results page to OUT and the README to README_OUT with SCRIPT, and
# fails when PAGE (the committed docs/results.md) or README (its results table)
# differs from what the script writes.
# Usage: cmake -DPYTHON= -DSCRIPT= -DPAGE= -DOUT= -DREADME= -DREADME_OUT= -P this
execute_process(COMMAND ${PYTHON} ${SCRIPT} -o ${OUT} --readme ${README} --readme-out ${README_OUT}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SCRIPT} failed (${rc})")
endif()
find_program(DIFF diff)
foreach(pair "${PAGE}|${OUT}" "${README}|${README_OUT}")
  string(REPLACE "|" ";" files "${pair}")
  list(GET files 0 committed)
  list(GET files 1 written)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${committed} ${written}
                  RESULT_VARIABLE differ)
  if(differ)
    if(DIFF)
      execute_process(COMMAND ${DIFF} -u ${committed} ${written})
    endif()
    message(FATAL_ERROR "${committed} is not what scripts/results-page.py writes from "
                        "benchmarks/oversubscription/results/; regenerate it with: "
                        "python3 scripts/results-page.py")
  endif()
endforeach()
