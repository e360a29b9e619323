# libFuzzer targets (tests/fuzz/): DAGRAD_FUZZ instruments the whole sanitizer build for coverage,
# so the fuzzers link against the very library the tests use and cost only their own objects.
option(DAGRAD_FUZZ "Build the libFuzzer targets in tests/fuzz (clang, with DAGRAD_SANITIZE)" OFF)

if(DAGRAD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DAGRAD_FUZZ needs clang's libFuzzer: configure with CXX=clang++")
  endif()
  if(NOT DAGRAD_SANITIZE)
    message(FATAL_ERROR "DAGRAD_FUZZ needs DAGRAD_SANITIZE=ON: the fuzzers run under ASan + UBSan")
  endif()
  # Coverage instrumentation for every target; only the fuzzers link libFuzzer's main().
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)

  set(DAGRAD_FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz)
  # target -> extra sources (fuzz_attrs parses --attr arguments with the CLI's own code).
  set(DAGRAD_FUZZ_TARGETS fuzz_npy fuzz_idx fuzz_checkpoint fuzz_attrs fuzz_ops fuzz_graph)
  set(DAGRAD_FUZZ_EXTRA_fuzz_attrs ${CMAKE_CURRENT_SOURCE_DIR}/tools/attr_args.cpp
                                   ${CMAKE_CURRENT_SOURCE_DIR}/tools/input_spec.cpp
                                   ${CMAKE_CURRENT_SOURCE_DIR}/tools/option_checks.cpp)
  # A target's first saved crash creates its regressions folder: the glob re-runs cmake for it.
  file(GLOB DAGRAD_FUZZ_INPUT_DIRS LIST_DIRECTORIES true CONFIGURE_DEPENDS
       ${DAGRAD_FUZZ_DIR}/corpus/* ${DAGRAD_FUZZ_DIR}/regressions/*)
  add_custom_target(dagrad_fuzzers)
  foreach(fuzzer IN LISTS DAGRAD_FUZZ_TARGETS)
    add_executable(${fuzzer} ${DAGRAD_FUZZ_DIR}/${fuzzer}.cpp ${DAGRAD_FUZZ_EXTRA_${fuzzer}})
    target_link_libraries(${fuzzer} PRIVATE dagrad::dagrad)
    target_compile_options(${fuzzer} PRIVATE -fsanitize=fuzzer -Wall -Wextra -Wno-missing-field-initializers)
    target_link_options(${fuzzer} PRIVATE -fsanitize=fuzzer)
    set_target_properties(${fuzzer} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/tests/fuzz)
    add_dependencies(dagrad_fuzzers ${fuzzer})
    # Every seed and every saved crash runs once in the ordinary test suite (-runs=0 executes the
    # given corpus directories and writes nothing); scripts/fuzz.sh does the timed fuzzing.
    if(DAGRAD_BUILD_TESTS)
      enable_testing()
      set(inputs)
      foreach(dir corpus regressions)
        if(${DAGRAD_FUZZ_DIR}/${dir}/${fuzzer} IN_LIST DAGRAD_FUZZ_INPUT_DIRS)
          list(APPEND inputs ${DAGRAD_FUZZ_DIR}/${dir}/${fuzzer})
        endif()
      endforeach()
      add_test(NAME ${fuzzer}_replay COMMAND ${fuzzer} -runs=0 ${inputs})
    endif()
  endforeach()
endif()
