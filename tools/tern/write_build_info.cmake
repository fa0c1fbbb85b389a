# Runs at every build (cmake -P) so the git sha is current; configure_file rewrites the output
# only when it changed, which keeps rebuilds incremental.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY "${SOURCE_DIR}"
                OUTPUT_VARIABLE TERN_GIT_SHA OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE git_result ERROR_QUIET)
if(NOT git_result EQUAL 0 OR TERN_GIT_SHA STREQUAL "")
  set(TERN_GIT_SHA "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no
                  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE dirty ERROR_QUIET)
  if(NOT dirty STREQUAL "")
    string(APPEND TERN_GIT_SHA "-dirty")
  endif()
endif()
configure_file("${INPUT}" "${OUTPUT}" @ONLY)
