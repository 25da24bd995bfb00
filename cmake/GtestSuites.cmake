# One ctest entry per GoogleTest suite of a test binary (issue 51 item 4), written after each build of
# the binary from its own --gtest_list_tests, as gtest_discover_tests writes one entry per test.
# Every entry is a process that loads LibTorch (about 0.3 s before the first test runs), so the
# unit tests' 430 entries spent minutes starting; ~100 suites spend a quarter of that.
#
# A skip must never read as a pass. An entry whose every test skipped, and none failed, is a skip
# (gtest's output then ends with the list of skipped tests). Any other output with a skipped test
# fails: ctest could report a suite that ran some tests and skipped others only as a pass, so a test
# that may skip belongs in a suite of its own. (ctest's skip expression wins over a failing exit code
# and over the fail expression, hence the one anchored at the end of the output.)
#
# Run as: cmake -D TEST_EXECUTABLE=... -D CTEST_FILE=... -D PREFIX=... -D TIMEOUT=... -D LABELS=... -P GtestSuites.cmake
execute_process(COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
                OUTPUT_VARIABLE _listing ERROR_VARIABLE _errors RESULT_VARIABLE _rc TIMEOUT 120)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "listing the tests of ${TEST_EXECUTABLE} failed (exit ${_rc}): ${_errors}")
endif()
string(REPLACE ";" "\\;" _listing "${_listing}")
string(REPLACE "\n" ";" _lines "${_listing}")
set(_suites "")
foreach(_line IN LISTS _lines)
  # Suite lines start in column 0 and end with a dot, before any "  # TypeParam = ..." comment.
  if(_line MATCHES "^([^ #][^ ]*)\\.( |$)")
    list(APPEND _suites "${CMAKE_MATCH_1}")
  endif()
endforeach()
list(REMOVE_DUPLICATES _suites)
list(LENGTH _suites _count)
if(_count EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} lists no test suites")
endif()

set(_all_skipped "\\[  PASSED  \\] 0 tests\\.\n\\[  SKIPPED \\] [0-9]+ tests?, listed below:\n(\\[  SKIPPED \\] [^\n]*\n)*$")
set(_any_skipped "\\[  SKIPPED \\]")
set(_text "# Written by GtestSuites.cmake from ${TEST_EXECUTABLE} --gtest_list_tests: ${_count} suites.\n")
foreach(_suite IN LISTS _suites)
  string(APPEND _text
         "add_test([==[${PREFIX}${_suite}]==] [==[${TEST_EXECUTABLE}]==] --gtest_color=no [==[--gtest_filter=${_suite}.*]==])\n"
         "set_tests_properties([==[${PREFIX}${_suite}]==] PROPERTIES TIMEOUT ${TIMEOUT} LABELS [==[${LABELS}]==]\n"
         "  SKIP_REGULAR_EXPRESSION [==[${_all_skipped}]==]\n"
         "  FAIL_REGULAR_EXPRESSION [==[${_any_skipped}]==])\n")
endforeach()
file(WRITE "${CTEST_FILE}" "${_text}")
