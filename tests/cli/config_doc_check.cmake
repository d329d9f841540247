# Every configuration key the parser knows and every environment variable
# coexec reads is in docs/configuration.md (run with cmake -P).
#   -DSOURCE_DIR=<the coexec sources>
# Keys: each `key == "section.name"` of apply_setting() and each entry of
# kIgnoredNosvKeys in config/config.cpp. Variables: each getenv("NAME") and
# each "COEXEC_*" / "NOSV_*" string literal in the sources of the library,
# the CLI and the adapters. Each must appear in the document as `NAME`.
cmake_minimum_required(VERSION 3.25)
set(doc_file ${SOURCE_DIR}/docs/configuration.md)
file(READ ${doc_file} doc)
file(READ ${SOURCE_DIR}/config/config.cpp config)

set(keys "")
string(REGEX MATCHALL "key == \"[a-z_]+\\.[a-z_]+\"" matches "${config}")
foreach(m IN LISTS matches)
  string(REGEX REPLACE "^key == \"(.*)\"$" "\\1" key "${m}")
  list(APPEND keys ${key})
endforeach()
list(LENGTH keys accepted)
string(REGEX MATCH "kIgnoredNosvKeys\\[\\] = {[^}]*}" ignored_block "${config}")
string(REGEX MATCHALL "\"[a-z_]+\\.[a-z_]+\"" matches "${ignored_block}")
foreach(m IN LISTS matches)
  string(REPLACE "\"" "" key "${m}")
  list(APPEND keys ${key})
endforeach()
list(LENGTH matches ignored)
# Too few found means the parser changed shape, not that the doc is right.
if(accepted LESS 8 OR ignored LESS 10)
  message(FATAL_ERROR "found only ${accepted} accepted and ${ignored} ignored keys in "
                      "config/config.cpp: this check no longer reads it right")
endif()

set(vars "")
file(GLOB_RECURSE sources
  ${SOURCE_DIR}/config/*.cpp ${SOURCE_DIR}/core/*.cpp ${SOURCE_DIR}/core/*.hpp ${SOURCE_DIR}/tools/*.cpp
  ${SOURCE_DIR}/adapters/openmp/shim/*.cpp ${SOURCE_DIR}/adapters/openmp/shim/*.h
  ${SOURCE_DIR}/adapters/tbb/*.cpp ${SOURCE_DIR}/adapters/tbb/*.h
  ${SOURCE_DIR}/adapters/pocl/*.cpp ${SOURCE_DIR}/adapters/pocl/*.hpp)
foreach(source IN LISTS sources)
  file(READ ${source} text)
  string(REGEX MATCHALL "getenv\\(\"[A-Za-z0-9_]+\"\\)|\"(COEXEC|NOSV)_[A-Z0-9_]+\"" matches "${text}")
  foreach(m IN LISTS matches)
    string(REGEX REPLACE "^(getenv\\()?\"([A-Za-z0-9_]+)\"\\)?$" "\\2" var "${m}")
    list(APPEND vars ${var})
  endforeach()
endforeach()
list(REMOVE_DUPLICATES vars)
list(LENGTH vars found)
if(found LESS 10)
  message(FATAL_ERROR "found only ${found} environment variables (${vars}): "
                      "this check no longer reads the sources right")
endif()

set(missing "")
foreach(name IN LISTS keys vars)
  string(FIND "${doc}" "`${name}`" at)
  if(at LESS 0)
    list(APPEND missing ${name})
  endif()
endforeach()
if(missing)
  list(JOIN missing ", " missing)
  message(FATAL_ERROR "${doc_file} does not describe: ${missing}")
endif()
list(LENGTH keys key_count)
message(STATUS "${key_count} keys and ${found} environment variables, each in docs/configuration.md")
