# Helpers to register tests. Every test has a label and a timeout.
#
#   sc_add_c_test(NAME name SOURCES a.c ... [LIBS ...] [LABEL unit] [TIMEOUT 60])
#   sc_add_sh_test(NAME name SCRIPT path.sh [LABEL integration] [TIMEOUT 300])
#
# Every test gets SC_FIXTURES (tests/fixtures), SC_BIN (build/bin), SC_SRC (source root)
# and SC_TMP (a per-test scratch directory under the build tree) in its environment.

set(SC_TEST_ENV
  "SC_FIXTURES=${PROJECT_SOURCE_DIR}/tests/fixtures"
  "SC_BIN=${CMAKE_BINARY_DIR}/bin"
  "SC_SRC=${PROJECT_SOURCE_DIR}"
  "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")

function(sc_add_c_test)
  cmake_parse_arguments(T "" "NAME;LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_LABEL)
    set(T_LABEL unit)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit)
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} sc_common sc_flags)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set(tmp ${CMAKE_BINARY_DIR}/tmp/${T_NAME})
  # exit 77: the script found the machine lacks what it needs (root, network namespaces)
  set_tests_properties(${T_NAME} PROPERTIES LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT}
    SKIP_RETURN_CODE 77 ENVIRONMENT "${SC_TEST_ENV};SC_TMP=${tmp}")
endfunction()

function(sc_add_sh_test)
  cmake_parse_arguments(T "" "NAME;SCRIPT;LABEL;TIMEOUT" "" ${ARGN})
  if(NOT T_LABEL)
    set(T_LABEL integration)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${T_NAME} COMMAND bash ${T_SCRIPT})
  set(tmp ${CMAKE_BINARY_DIR}/tmp/${T_NAME})
  # exit 77: the script found the machine lacks what it needs (root, network namespaces)
  set_tests_properties(${T_NAME} PROPERTIES LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT}
    SKIP_RETURN_CODE 77 ENVIRONMENT "${SC_TEST_ENV};SC_TMP=${tmp}")
endfunction()

# A libFuzzer target: LLVMFuzzerTestOneInput in SOURCE, seed corpus in
# tests/fuzz/corpus/NAME/. With SC_FUZZ (clang) it is built with -fsanitize=fuzzer and its
# ctest (label fuzz) fuzzes for SC_FUZZ_SECONDS; without, it is linked with a replay driver
# and its ctest (label unit) replays the corpus, so every build exercises it.
set(SC_FUZZ_SECONDS 60 CACHE STRING "Seconds each fuzz target runs in the fuzz build")
function(sc_add_fuzzer)
  cmake_parse_arguments(T "" "NAME;SOURCE" "LIBS" ${ARGN})
  set(corpus ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${T_NAME})
  if(SC_FUZZ)
    add_executable(fuzz_${T_NAME} ${T_SOURCE})
    target_link_libraries(fuzz_${T_NAME} PRIVATE ${T_LIBS} sc_common sc_flags)
    target_link_options(fuzz_${T_NAME} PRIVATE -fsanitize=fuzzer)
    set_target_properties(fuzz_${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
    set(work ${CMAKE_BINARY_DIR}/fuzz/work_${T_NAME})
    file(MAKE_DIRECTORY ${work})
    add_test(NAME fuzz_${T_NAME} COMMAND fuzz_${T_NAME} -max_total_time=${SC_FUZZ_SECONDS}
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=${work}/
      ${work} ${corpus})
    set_tests_properties(fuzz_${T_NAME} PROPERTIES LABELS fuzz
      TIMEOUT 900 ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1")
    add_dependencies(sc_fuzz_all fuzz_${T_NAME})
  else()
    add_executable(fuzz_${T_NAME}_replay ${T_SOURCE} ${PROJECT_SOURCE_DIR}/tests/fuzz/replay_main.c)
    target_link_libraries(fuzz_${T_NAME}_replay PRIVATE ${T_LIBS} sc_common sc_flags)
    set_target_properties(fuzz_${T_NAME}_replay PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
    add_test(NAME fuzz_${T_NAME}_replay COMMAND fuzz_${T_NAME}_replay ${corpus})
    set_tests_properties(fuzz_${T_NAME}_replay PROPERTIES LABELS unit TIMEOUT 120
      ENVIRONMENT "${SC_TEST_ENV}")
  endif()
endfunction()
