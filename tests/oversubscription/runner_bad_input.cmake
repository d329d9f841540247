# The scenario runner refuses bad input with a message and a non-zero exit, never a trace.
# Invoked as: cmake -DPYTHON=... -DRUNNER=... -DBUILD=... -P runner_bad_input.cmake
# One case per entry; its arguments are separated by commas.
set(cases
    "--modes,turbo"
    "--repeats,0"
    "--scenarios,no-such-scenario"
    "--build,/nonexistent"
    "--timeout,-1"
    "--cpus,0"
    "--cpus,100000"
    "--bogus")
foreach(case IN LISTS cases)
  string(REPLACE "," ";" args "${case}")
  set(build_args --build ${BUILD})
  if(case MATCHES "^--build")
    set(build_args "")
  endif()
  execute_process(COMMAND ${PYTHON} ${RUNNER} ${build_args} ${args} --no-plots
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  if(rc EQUAL 0)
    message(FATAL_ERROR "run.py ${args}: exit 0, expected an error")
  endif()
  if(err MATCHES "Traceback")
    message(FATAL_ERROR "run.py ${case}: crashed:\n${err}")
  endif()
  if(NOT err MATCHES "run.py")
    message(FATAL_ERROR "run.py ${case}: no message naming run.py:\n${err}")
  endif()
endforeach()
