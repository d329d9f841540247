# Proves that the lock contract is checked at compile time: unlocked_call.cpp
# must fail to compile without the lock, with the diagnostic that names the
# call, and compile with it. Run as a test (cmake -P) with CXX, SOURCE and
# INCLUDE set.
set(flags -std=c++20 -fsyntax-only -Wthread-safety -Werror "-I${INCLUDE}")
execute_process(COMMAND ${CXX} ${flags} ${SOURCE}
                RESULT_VARIABLE unlocked_rc ERROR_VARIABLE unlocked_err OUTPUT_QUIET)
if(unlocked_rc EQUAL 0)
  message(FATAL_ERROR "a locked call without the segment lock compiled: the contract is not checked")
endif()
if(NOT unlocked_err MATCHES "calling function 'release' requires holding segment lock 'segment_lock'")
  message(FATAL_ERROR "the compile failed, but not on the lock contract:\n${unlocked_err}")
endif()
execute_process(COMMAND ${CXX} ${flags} -DTAKE_THE_LOCK ${SOURCE}
                RESULT_VARIABLE locked_rc ERROR_VARIABLE locked_err OUTPUT_QUIET)
if(NOT locked_rc EQUAL 0)
  message(FATAL_ERROR "the same call under a SchedulerLock did not compile:\n${locked_err}")
endif()
message(STATUS "without the lock: rejected as expected; under a SchedulerLock: compiles")
