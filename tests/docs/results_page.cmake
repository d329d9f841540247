# Writes the results page to OUT with SCRIPT and fails when PAGE (the committed
# docs/results.md) differs from it. Usage: cmake -DPYTHON= -DSCRIPT= -DPAGE= -DOUT= -P this
execute_process(COMMAND ${PYTHON} ${SCRIPT} -o ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SCRIPT} failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${PAGE} ${OUT} RESULT_VARIABLE differ)
if(differ)
  find_program(DIFF diff)
  if(DIFF)
    execute_process(COMMAND ${DIFF} -u ${PAGE} ${OUT})
  endif()
  message(FATAL_ERROR "docs/results.md is not what scripts/results-page.py writes from "
                      "benchmarks/oversubscription/results/; regenerate it with: "
                      "python3 scripts/results-page.py")
endif()
